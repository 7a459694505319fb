//! Finding Copilot CLI session logs under a `session-state/` root.
//!
//! Layout, as 1.0.102 wrote it here: `<root>/<session id>/` holds `events.jsonl` beside
//! `workspace.yaml`, `checkpoints/`, `files/`, `research/` and `rewind-file-snapshots/`. Only
//! `events.jsonl` is read; the session folder's other entries are the client's working state,
//! not transcripts, and are not counted. Entries directly under the root that are not folders
//! (older releases wrote `<session id>.jsonl` there, before usage receipts existed) are counted
//! as skipped.

use std::path::Path;

use crate::discovery::{Discovery, Limits, Role, SkipReason, admit, entries, entry, unrecognised};
use crate::record::Harness;

/// The session log's name inside its session folder.
pub const EVENTS_FILE: &str = "events.jsonl";

/// Walks one canonical `session-state/` root.
pub fn walk_root(root: &Path, index: usize, limits: Limits, found: &mut Discovery) {
    for (session, path, meta) in entries(root) {
        let kind = meta.file_type();
        if !kind.is_dir() {
            found.skips.add(unrecognised(kind));
            continue;
        }
        let events = path.join(EVENTS_FILE);
        // A session folder without a log (a session that never got a prompt) holds no usage.
        let Ok(events_meta) = std::fs::symlink_metadata(&events) else {
            continue;
        };
        if !admit(
            &events_meta,
            SkipReason::EmptyMain,
            limits,
            &mut found.skips,
        ) {
            continue;
        }
        let mut file = entry(
            events,
            index,
            Role::CopilotEvents,
            Harness::Copilot,
            &events_meta,
        );
        file.session_id = Some(session);
        found.files.push(file);
    }
}
