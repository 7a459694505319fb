//! Finding the transcript files under the corpus roots (HOOKS.md 4.1, 4.10; seed 002,
//! containment and skip reasons). Directory entries are inspected with `lstat` (a symlink is seen as a
//! symlink and skipped, never followed); every discovered file that will not be parsed is
//! counted under one of the nine skip reasons.

use std::fs;
use std::path::{Path, PathBuf};

use crate::discovery::{admit, entries, entry, unrecognised};
use crate::record::Harness;

pub use crate::discovery::{Discovery, FileEntry, Limits, Role, SkipReason, Skips};

/// The folders read: Claude Code `projects/` folders, Codex `sessions/` folders, Gemini CLI
/// `tmp/` folders (`<gemini home>/.gemini/tmp`, one folder per project inside) and Copilot CLI
/// `session-state/` folders (`<copilot home>/session-state`, one folder per session inside).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    pub claude: Vec<PathBuf>,
    pub codex: Vec<PathBuf>,
    pub gemini: Vec<PathBuf>,
    pub copilot: Vec<PathBuf>,
}

/// Walks every root. A root that does not exist contributes nothing.
pub fn discover(roots: &Roots, limits: Limits) -> Discovery {
    let mut discovery = Discovery::default();
    let found = &mut discovery;
    walk_new_roots(
        &roots.claude,
        found,
        |d| &mut d.claude_roots,
        |root, index, found| walk_claude_root(root, index, limits, found),
    );
    walk_new_roots(
        &roots.codex,
        found,
        |d| &mut d.codex_roots,
        |root, index, found| walk_codex(root, index, 0, limits, found),
    );
    walk_new_roots(
        &roots.gemini,
        found,
        |d| &mut d.gemini_roots,
        |root, index, found| crate::gemini::walk::walk_root(root, index, limits, found),
    );
    walk_new_roots(
        &roots.copilot,
        found,
        |d| &mut d.copilot_roots,
        |root, index, found| crate::copilot::walk::walk_root(root, index, limits, found),
    );
    discovery.files.sort_by(|a, b| a.path.cmp(&b.path));
    discovery
}

/// Walks each of `roots` that exists and is not yet in the `known` list, adding it there first;
/// `walk` gets the canonical root and its index in that list.
fn walk_new_roots(
    roots: &[PathBuf],
    found: &mut Discovery,
    known: fn(&mut Discovery) -> &mut Vec<PathBuf>,
    walk: impl Fn(&Path, usize, &mut Discovery),
) {
    for root in roots {
        if let Ok(canonical) = fs::canonicalize(root) {
            let list = known(found);
            if list.contains(&canonical) {
                continue;
            }
            list.push(canonical.clone());
            let index = list.len() - 1;
            walk(&canonical, index, found);
        }
    }
}

fn walk_claude_root(root: &Path, index: usize, limits: Limits, found: &mut Discovery) {
    for (name, path, meta) in entries(root) {
        let kind = meta.file_type();
        if kind.is_symlink() {
            found.skips.add(SkipReason::Symlink);
        } else if kind.is_dir() {
            walk_project(&path, &name, index, limits, found);
        } else if kind.is_file() {
            found.skips.add(SkipReason::NonArtifact);
        } else {
            found.skips.add(SkipReason::NotRegularFile);
        }
    }
}

fn walk_project(dir: &Path, slug: &str, index: usize, limits: Limits, found: &mut Discovery) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            let subagents = path.join("subagents");
            if let Ok(sub_meta) = fs::symlink_metadata(&subagents) {
                if sub_meta.file_type().is_symlink() {
                    found.skips.add(SkipReason::Symlink);
                } else if sub_meta.is_dir() {
                    walk_subagents(&subagents, &name, slug, index, 0, limits, found);
                }
            }
            continue;
        }
        let Some(stem) = name.strip_suffix(".jsonl") else {
            if kind.is_symlink() {
                found.skips.add(SkipReason::Symlink);
            } else {
                found.skips.add(SkipReason::NonArtifact);
            }
            continue;
        };
        let (role, empty) = match stem.strip_prefix("agent-") {
            Some(agent) => (
                Role::ClaudeLegacySibling {
                    agent_id: agent.to_string(),
                },
                SkipReason::EmptyAgent,
            ),
            None => (Role::ClaudeMain, SkipReason::EmptyMain),
        };
        if !admit(&meta, empty, limits, &mut found.skips) {
            continue;
        }
        let mut file = entry(path, index, role.clone(), Harness::ClaudeCode, &meta);
        file.project_slug = Some(slug.to_string());
        if role == Role::ClaudeMain {
            file.session_id = Some(stem.to_string());
        }
        found.files.push(file);
    }
}

fn walk_subagents(
    dir: &Path,
    session: &str,
    slug: &str,
    index: usize,
    depth: usize,
    limits: Limits,
    found: &mut Discovery,
) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            if let Some(depth) = deeper(depth, limits, &mut found.skips) {
                walk_subagents(&path, session, slug, index, depth, limits, found);
            }
            continue;
        }
        let role = if let Some(agent) = name
            .strip_prefix("agent-")
            .and_then(|n| n.strip_suffix(".jsonl"))
        {
            Role::ClaudeSubagent {
                agent_id: agent.to_string(),
            }
        } else if let Some(agent) = name
            .strip_prefix("agent-")
            .and_then(|n| n.strip_suffix(".meta.json"))
        {
            Role::ClaudeMeta {
                agent_id: agent.to_string(),
            }
        } else {
            found.skips.add(unrecognised(kind));
            continue;
        };
        if !admit(&meta, SkipReason::EmptyAgent, limits, &mut found.skips) {
            continue;
        }
        let mut file = entry(path, index, role, Harness::ClaudeCode, &meta);
        file.session_id = Some(session.to_string());
        file.project_slug = Some(slug.to_string());
        found.files.push(file);
    }
}

/// The depth of a folder one level below `depth`, or `None` (counted as too deep) past the limit.
fn deeper(depth: usize, limits: Limits, skips: &mut Skips) -> Option<usize> {
    if depth + 1 > limits.max_depth {
        skips.add(SkipReason::TooDeep);
        None
    } else {
        Some(depth + 1)
    }
}

fn walk_codex(dir: &Path, index: usize, depth: usize, limits: Limits, found: &mut Discovery) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            if let Some(depth) = deeper(depth, limits, &mut found.skips) {
                walk_codex(&path, index, depth, limits, found);
            }
            continue;
        }
        let Some(stem) = name
            .strip_prefix("rollout-")
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            found.skips.add(unrecognised(kind));
            continue;
        };
        if !admit(&meta, SkipReason::EmptyMain, limits, &mut found.skips) {
            continue;
        }
        let mut file = entry(path, index, Role::CodexRollout, Harness::Codex, &meta);
        file.session_id = Some(rollout_session_id(stem));
        found.files.push(file);
    }
}

/// The session id in a rollout's file name (`rollout-<time>-<uuid>`), else the whole stem.
pub fn rollout_session_id(stem: &str) -> String {
    let bytes = stem.len();
    if bytes >= 36 && stem.is_char_boundary(bytes - 36) {
        let tail = &stem[bytes - 36..];
        if tail.chars().filter(|c| *c == '-').count() == 4 {
            return tail.to_string();
        }
    }
    stem.to_string()
}
