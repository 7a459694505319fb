//! Finding Gemini CLI chat files under a `tmp/` root (HOOKS.md 4.10).
//!
//! Layout, from 0.61.0's `ChatRecordingService` and `Storage`: `<root>/<project>/chats/` holds
//! the main chats (`session-<time>-<id8>.jsonl`, or `.json` from older releases) and, per main
//! session that ran subagents, a folder named by that session's id holding one
//! `<agent id>.jsonl` per subagent (nested subagents too: the folder is always the main
//! session's). The project folder holds other things (logs, tool outputs, plans, checkpoints):
//! only `chats/` is read, and only inside it are unknown entries counted as skipped. Backups the
//! client leaves beside a chat (`*.jsonl.unreadable-<time>`, `*.tmp-<pid>`) are not chats.

use std::path::Path;

use crate::discovery::{Discovery, Limits, Role, SkipReason, admit, entries, entry, unrecognised};
use crate::record::Harness;

/// Walks one canonical `tmp/` root.
pub fn walk_root(root: &Path, index: usize, limits: Limits, found: &mut Discovery) {
    for (project, path, meta) in entries(root) {
        let kind = meta.file_type();
        if kind.is_symlink() {
            found.skips.add(SkipReason::Symlink);
            continue;
        }
        if !kind.is_dir() {
            continue;
        }
        let chats = path.join("chats");
        match std::fs::symlink_metadata(&chats) {
            Ok(chats_meta) if chats_meta.file_type().is_symlink() => {
                found.skips.add(SkipReason::Symlink);
            }
            Ok(chats_meta) if chats_meta.is_dir() => {
                walk_chats(&chats, &project, index, limits, found);
            }
            _ => {}
        }
    }
}

/// What a file name in `chats/` is: a main chat, and whether it is the single-object form.
pub fn main_chat(name: &str) -> Option<bool> {
    let rest = name.strip_prefix("session-")?;
    if rest.ends_with(".jsonl") {
        Some(false)
    } else if rest.ends_with(".json") {
        Some(true)
    } else {
        None
    }
}

fn walk_chats(dir: &Path, project: &str, index: usize, limits: Limits, found: &mut Discovery) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            walk_subagents(&path, &name, project, index, limits, found);
            continue;
        }
        let Some(document) = main_chat(&name) else {
            found.skips.add(unrecognised(kind));
            continue;
        };
        if !admit(&meta, SkipReason::EmptyMain, limits, &mut found.skips) {
            continue;
        }
        let mut file = entry(
            path,
            index,
            Role::GeminiMain { document },
            Harness::Gemini,
            &meta,
        );
        file.session_id = Some(short_id(&name).to_string());
        file.project_slug = Some(project.to_string());
        found.files.push(file);
    }
}

fn walk_subagents(
    dir: &Path,
    session: &str,
    project: &str,
    index: usize,
    limits: Limits,
    found: &mut Discovery,
) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            found.skips.add(SkipReason::TooDeep);
            continue;
        }
        let Some(agent) = name.strip_suffix(".jsonl").filter(|stem| !stem.is_empty()) else {
            found.skips.add(unrecognised(kind));
            continue;
        };
        if !admit(&meta, SkipReason::EmptyAgent, limits, &mut found.skips) {
            continue;
        }
        let role = Role::GeminiSubagent {
            agent_id: agent.to_string(),
        };
        let mut file = entry(path, index, role, Harness::Gemini, &meta);
        file.session_id = Some(session.to_string());
        file.project_slug = Some(project.to_string());
        found.files.push(file);
    }
}

/// The session's first eight characters in a main chat's name (`session-<time>-<id8>.json[l]`):
/// the fallback identity of a file whose records name no session.
pub fn short_id(name: &str) -> &str {
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name);
    stem.rsplit('-').next().unwrap_or(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_file_names() {
        let cases = [
            (
                "session-2026-12-02T05-16-dea5a046.jsonl",
                Some(false),
                "dea5a046",
            ),
            (
                "session-2025-10-05T07-11-eefc44a3.json",
                Some(true),
                "eefc44a3",
            ),
            (
                "session-2026-12-02T05-16-dea5a046.jsonl.unreadable-17",
                None,
                "",
            ),
            ("session-x.jsonl.tmp-42", None, ""),
            ("logs.json", None, ""),
            ("checkpoint-tag.json", None, ""),
        ];
        for (name, document, id) in cases {
            assert_eq!(main_chat(name), document, "{name}");
            if document.is_some() {
                assert_eq!(short_id(name), id, "{name}");
            }
        }
    }
}
