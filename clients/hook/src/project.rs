//! The project facet and the worktree filter, from the working directory.
//!
//! The project is the name of the git checkout's top folder (or of the working directory
//! outside git). With no usable directory the project is omitted: the literal "unknown" would
//! persist a fake facet (seed 000, SessionStart).

use std::path::{Path, PathBuf};

use crate::text;

/// Where `cwd`'s `.git` lives: the checkout root, and whether it is a secondary worktree
/// (`.git` is a file pointing into another checkout's `worktrees/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    pub root: PathBuf,
    pub secondary_worktree: bool,
}

/// Walks up from `cwd` to the nearest `.git`.
pub fn checkout(cwd: &Path) -> Option<Checkout> {
    for dir in cwd.ancestors() {
        let marker = dir.join(".git");
        let Ok(metadata) = std::fs::symlink_metadata(&marker) else {
            continue;
        };
        let secondary_worktree = metadata.is_file()
            && std::fs::read_to_string(&marker).is_ok_and(|text| is_worktree_pointer(&text));
        return Some(Checkout {
            root: dir.to_path_buf(),
            secondary_worktree,
        });
    }
    None
}

/// `gitdir: /repo/.git/worktrees/name` marks a linked worktree; a submodule's
/// `gitdir: ../.git/modules/name` does not.
pub fn is_worktree_pointer(text: &str) -> bool {
    text.lines()
        .find_map(|line| line.strip_prefix("gitdir:"))
        .is_some_and(|target| target.trim().replace('\\', "/").contains("/worktrees/"))
}

/// The project name for `cwd`, or `None`.
pub fn project(cwd: Option<&str>) -> Option<String> {
    let cwd = Path::new(cwd?.trim());
    if !cwd.is_absolute() {
        return None;
    }
    let root = checkout(cwd).map_or_else(|| cwd.to_path_buf(), |found| found.root);
    name_of(&root)
}

/// A folder's name as a project: trimmed, 1..256 characters, never "unknown".
pub fn name_of(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?.trim();
    let name = text::cut_chars(name, 256).trim();
    (!name.is_empty() && name != "unknown").then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_table() {
        let dir = tempfile::tempdir().expect("dir");
        let repo = dir.path().join("baton");
        std::fs::create_dir_all(repo.join(".git")).expect("git");
        std::fs::create_dir_all(repo.join("services/registry")).expect("sub");
        let plain = dir.path().join("notes");
        std::fs::create_dir_all(&plain).expect("plain");
        let path = |p: &Path| p.to_str().expect("utf-8").to_string();
        let table = [
            (Some(path(&repo)), Some("baton")),
            (Some(path(&repo.join("services/registry"))), Some("baton")),
            (Some(path(&plain)), Some("notes")),
            (Some("/".to_string()), None),
            (Some("".to_string()), None),
            (Some("relative/dir".to_string()), None),
            (None, None),
        ];
        for (cwd, expected) in table {
            assert_eq!(project(cwd.as_deref()).as_deref(), expected, "{cwd:?}");
        }
        assert_eq!(name_of(Path::new("/x/unknown")), None);
    }

    #[test]
    fn worktree_pointers() {
        assert!(is_worktree_pointer(
            "gitdir: /src/app/.git/worktrees/feature\n"
        ));
        assert!(!is_worktree_pointer("gitdir: ../.git/modules/lib\n"));
        assert!(!is_worktree_pointer("nonsense"));
        let dir = tempfile::tempdir().expect("dir");
        let worktree = dir.path().join("feature");
        std::fs::create_dir_all(&worktree).expect("dir");
        std::fs::write(
            worktree.join(".git"),
            "gitdir: /src/app/.git/worktrees/feature\n",
        )
        .expect("pointer");
        assert!(checkout(&worktree).expect("checkout").secondary_worktree);
    }
}
