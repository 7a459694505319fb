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
    for root in &roots.claude {
        if let Ok(canonical) = fs::canonicalize(root) {
            if discovery.claude_roots.contains(&canonical) {
                continue;
            }
            discovery.claude_roots.push(canonical.clone());
            let index = discovery.claude_roots.len() - 1;
            walk_claude_root(&canonical, index, limits, &mut discovery);
        }
    }
    for root in &roots.codex {
        if let Ok(canonical) = fs::canonicalize(root) {
            if discovery.codex_roots.contains(&canonical) {
                continue;
            }
            discovery.codex_roots.push(canonical.clone());
            let index = discovery.codex_roots.len() - 1;
            walk_codex(&canonical, index, 0, limits, &mut discovery);
        }
    }
    for root in &roots.gemini {
        if let Ok(canonical) = fs::canonicalize(root) {
            if discovery.gemini_roots.contains(&canonical) {
                continue;
            }
            discovery.gemini_roots.push(canonical.clone());
            let index = discovery.gemini_roots.len() - 1;
            crate::gemini::walk::walk_root(&canonical, index, limits, &mut discovery);
        }
    }
    for root in &roots.copilot {
        if let Ok(canonical) = fs::canonicalize(root) {
            if discovery.copilot_roots.contains(&canonical) {
                continue;
            }
            discovery.copilot_roots.push(canonical.clone());
            let index = discovery.copilot_roots.len() - 1;
            crate::copilot::walk::walk_root(&canonical, index, limits, &mut discovery);
        }
    }
    discovery.files.sort_by(|a, b| a.path.cmp(&b.path));
    discovery
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
            if depth + 1 > limits.max_depth {
                found.skips.add(SkipReason::TooDeep);
            } else {
                walk_subagents(&path, session, slug, index, depth + 1, limits, found);
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

fn walk_codex(dir: &Path, index: usize, depth: usize, limits: Limits, found: &mut Discovery) {
    for (name, path, meta) in entries(dir) {
        let kind = meta.file_type();
        if kind.is_dir() {
            if depth + 1 > limits.max_depth {
                found.skips.add(SkipReason::TooDeep);
            } else {
                walk_codex(&path, index, depth + 1, limits, found);
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
