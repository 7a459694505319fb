//! What a walk finds and how it judges one directory entry: the bounds, the skip reasons and
//! their counts, each discovered file's role and place, and the checks every harness's walker
//! applies to an entry (`lstat`, never following a symlink).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::record::Harness;

/// Bounds on what is read (seed 002 calls both provisional ceilings, not measured limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Larger files are skipped as `oversize`. Files are streamed, so the bound is about
    /// refusing absurd inputs, not memory; 1 GiB is above any transcript seen.
    pub max_file_bytes: u64,
    /// Folder levels followed below a session's `subagents/` (nested workflow folders) and
    /// below a Codex `sessions/` folder; deeper folders are skipped as `too-deep`.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: 1 << 30,
            max_depth: 4,
        }
    }
}

/// Why a discovered file was not parsed (seed 002's closed union of nine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SkipReason {
    Oversize,
    Symlink,
    NotRegularFile,
    Unreadable,
    EmptyAgent,
    EmptyMain,
    NonArtifact,
    /// A second project folder holding the same session id: its lines are still read (they
    /// feed the global dedup and belong to the session), but the folder does not make a
    /// session of its own; the session is attributed to the smallest-sorting project slug.
    DuplicateSession,
    TooDeep,
}

impl SkipReason {
    pub const ALL: [SkipReason; 9] = [
        SkipReason::Oversize,
        SkipReason::Symlink,
        SkipReason::NotRegularFile,
        SkipReason::Unreadable,
        SkipReason::EmptyAgent,
        SkipReason::EmptyMain,
        SkipReason::NonArtifact,
        SkipReason::DuplicateSession,
        SkipReason::TooDeep,
    ];

    /// The seed's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Oversize => "oversize",
            SkipReason::Symlink => "symlink",
            SkipReason::NotRegularFile => "not-regular-file",
            SkipReason::Unreadable => "unreadable",
            SkipReason::EmptyAgent => "empty-agent",
            SkipReason::EmptyMain => "empty-main",
            SkipReason::NonArtifact => "non-artifact",
            SkipReason::DuplicateSession => "duplicate-session",
            SkipReason::TooDeep => "too-deep",
        }
    }
}

/// Skip counts by reason; every reason is present, zero or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skips(pub BTreeMap<SkipReason, u64>);

impl Default for Skips {
    fn default() -> Skips {
        Skips(SkipReason::ALL.iter().map(|reason| (*reason, 0)).collect())
    }
}

impl Skips {
    pub fn add(&mut self, reason: SkipReason) {
        *self.0.entry(reason).or_insert(0) += 1;
    }

    pub fn get(&self, reason: SkipReason) -> u64 {
        self.0.get(&reason).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// What a file is to the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    ClaudeMain,
    /// `<session>/subagents/**/agent-<id>.jsonl`.
    ClaudeSubagent {
        agent_id: String,
    },
    /// `<session>/subagents/**/agent-<id>.meta.json`.
    ClaudeMeta {
        agent_id: String,
    },
    /// Pre-2.1.2 `agent-<id>.jsonl` beside the session files.
    ClaudeLegacySibling {
        agent_id: String,
    },
    CodexRollout,
    /// `<project>/chats/session-*.jsonl` (or the older single-object `.json` when `document`).
    GeminiMain {
        document: bool,
    },
    /// `<project>/chats/<main session id>/<agent id>.jsonl`.
    GeminiSubagent {
        agent_id: String,
    },
    /// `<session id>/events.jsonl` under a Copilot CLI `session-state/` folder (subagents
    /// included: they write into their session's file).
    CopilotEvents,
}

/// One discovered file, as `lstat` saw it during the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub path: PathBuf,
    /// Index into the harness's canonical roots.
    pub root: usize,
    pub role: Role,
    pub harness: Harness,
    /// The session the place of the file names: the main file's stem, the session folder of a
    /// sidecar, the id in a rollout's name; `None` for a legacy sibling.
    pub session_id: Option<String>,
    /// The project folder's name (Claude Code, Gemini CLI); Codex projects come from the
    /// rollout itself.
    pub project_slug: Option<String>,
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
}

impl FileEntry {
    /// Whether the file can hold usage of `session_id`, by its place alone: a Gemini CLI main
    /// chat's name carries only the session's first eight characters (its records name the
    /// whole id), every other file's place names its session whole.
    pub fn may_belong_to(&self, session_id: &str) -> bool {
        match (&self.role, self.session_id.as_deref()) {
            (Role::GeminiMain { .. }, Some(short)) => session_id.starts_with(short),
            (_, place) => place == Some(session_id),
        }
    }
}

/// Everything the walk found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Canonical roots, Claude Code first then Codex, as `FileEntry::root` indexes them.
    pub claude_roots: Vec<PathBuf>,
    pub codex_roots: Vec<PathBuf>,
    pub gemini_roots: Vec<PathBuf>,
    pub copilot_roots: Vec<PathBuf>,
    /// Files to read, in sorted path order.
    pub files: Vec<FileEntry>,
    pub skips: Skips,
}

impl Discovery {
    /// The canonical root a file must stay inside.
    pub fn root_of(&self, entry: &FileEntry) -> &Path {
        match entry.harness {
            Harness::ClaudeCode => &self.claude_roots[entry.root],
            Harness::Codex => &self.codex_roots[entry.root],
            Harness::Gemini => &self.gemini_roots[entry.root],
            Harness::Copilot => &self.copilot_roots[entry.root],
        }
    }
}

/// A directory's entries sorted by name, each with its `lstat` metadata.
pub(crate) fn entries(dir: &Path) -> Vec<(String, PathBuf, fs::Metadata)> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<_> = read
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).ok()?;
            Some((entry.file_name().to_string_lossy().into_owned(), path, meta))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Why an entry whose name is no transcript artifact is skipped.
pub(crate) fn unrecognised(kind: fs::FileType) -> SkipReason {
    if kind.is_symlink() {
        SkipReason::Symlink
    } else {
        SkipReason::NonArtifact
    }
}

/// The common checks for a file entry; `Some` when it is a regular, readable-sized file.
pub(crate) fn admit(
    meta: &fs::Metadata,
    empty: SkipReason,
    limits: Limits,
    skips: &mut Skips,
) -> bool {
    let kind = meta.file_type();
    if kind.is_symlink() {
        skips.add(SkipReason::Symlink);
        return false;
    }
    if !kind.is_file() {
        skips.add(SkipReason::NotRegularFile);
        return false;
    }
    if meta.len() == 0 {
        skips.add(empty);
        return false;
    }
    if meta.len() > limits.max_file_bytes {
        skips.add(SkipReason::Oversize);
        return false;
    }
    true
}

pub(crate) fn entry(
    path: PathBuf,
    root: usize,
    role: Role,
    harness: Harness,
    meta: &fs::Metadata,
) -> FileEntry {
    FileEntry {
        path,
        root,
        role,
        harness,
        session_id: None,
        project_slug: None,
        size: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        ino: meta.ino(),
    }
}
