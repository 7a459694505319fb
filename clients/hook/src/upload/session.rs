//! One session's upload: what is new in that session's transcript files, read through its own
//! checkpoints (a tail read), sent through the ledger. The sidecar runs it on each pulse and
//! the drain runs it for SessionEnd's final flush.
//!
//! Rules:
//! - the files are found from the session's `transcript_path` (the SessionStart payload's):
//!   a Claude Code main file's projects folder, a Codex rollout's sessions folder, and only the
//!   files the walk ties to this session are read;
//! - the checkpoints are the session's own (`cache/sessions/<digest>`), so a tail never
//!   disturbs `baton-hook ingest`'s; the flush removes them once everything is acknowledged;
//! - bounded: the read is capped by the walk's limits and the upload by the plan's bounds; a
//!   busy upload lock (an ingest running) skips a pulse rather than waiting.

use std::path::{Path, PathBuf};

use baton_transcripts::copilot::walk::EVENTS_FILE;
use baton_transcripts::walk::{self, Limits, Roots};
use baton_transcripts::{Options, read_discovered};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::ledger::Ledger;
use super::{Summary, send};
use crate::http::Client;
use crate::sent::Sent;

/// The spool path of a SessionEnd final flush (never sent to the server as such).
pub const FLUSH: &str = "baton-hook:usage-flush";

/// The roots that hold a session's files, from its transcript path; `None` when the path is
/// not where the harness writes this session's transcript (`<...>/projects/<slug>/<session>.jsonl`
/// for Claude Code, `<...>/sessions/YYYY/MM/DD/rollout-...<session>.jsonl` for Codex,
/// `<...>/tmp/<project>/chats/session-<time>-<first 8 of session>.jsonl` for Gemini CLI,
/// `<...>/session-state/<session>/events.jsonl` for Copilot CLI), so a stray path never turns
/// into a walk of some other folder.
pub fn roots_for(agent: &str, session_id: &str, transcript: &Path) -> Option<Roots> {
    if transcript.extension().and_then(|e| e.to_str()) != Some("jsonl") {
        return None;
    }
    let named = |path: &Path, name: &str| path.file_name().and_then(|n| n.to_str()) == Some(name);
    let file_name = transcript.file_name()?.to_str()?;
    match agent {
        "claude-code" => {
            let root = transcript.parent()?.parent()?;
            (named(root, "projects") && file_name == format!("{session_id}.jsonl")).then(|| Roots {
                claude: vec![root.to_path_buf()],
                ..Roots::default()
            })
        }
        "codex" => {
            let root = transcript.ancestors().nth(4)?;
            let ours = file_name.starts_with("rollout-") && file_name.contains(session_id);
            (named(root, "sessions") && ours).then(|| Roots {
                codex: vec![root.to_path_buf()],
                ..Roots::default()
            })
        }
        "gemini" => {
            let root = transcript.ancestors().nth(3)?;
            let chats = transcript.parent()?;
            let short = session_id.get(..8)?;
            let ours = file_name.starts_with("session-")
                && file_name.ends_with(&format!("-{short}.jsonl"));
            (named(root, "tmp") && named(chats, "chats") && ours).then(|| Roots {
                gemini: vec![root.to_path_buf()],
                ..Roots::default()
            })
        }
        "copilot" => {
            let folder = transcript.parent()?;
            let root = folder.parent()?;
            let ours = file_name == EVENTS_FILE && named(folder, session_id);
            (named(root, "session-state") && ours).then(|| Roots {
                copilot: vec![root.to_path_buf()],
                ..Roots::default()
            })
        }
        _ => None,
    }
}

fn checkpoint_dir(state_dir: &Path, agent: &str, session_id: &str) -> PathBuf {
    let digest = Sha256::digest(format!("{agent}/{session_id}").as_bytes());
    state_dir
        .join("cache")
        .join("sessions")
        .join(&hex::encode(digest)[..16])
}

/// Uploads what is new of one session; `None` when nothing could be read or the upload lock
/// was busy (and `wait` was false).
pub fn upload(
    state_dir: &Path,
    client: &Client,
    agent: &str,
    session_id: &str,
    transcript: &Path,
    wait: bool,
) -> Option<Summary> {
    let roots = roots_for(agent, session_id, transcript)?;
    let _lock = super::lock(state_dir, wait)?;
    let mut discovery = walk::discover(&roots, Limits::default());
    discovery
        .files
        .retain(|entry| entry.may_belong_to(session_id));
    if discovery.files.is_empty() {
        return None;
    }
    let options = Options {
        checkpoint_dir: Some(checkpoint_dir(state_dir, agent, session_id)),
        ..Options::default()
    };
    let corpus = read_discovered(discovery, &options, &|_| {}).ok()?;
    Some(super::run(
        &corpus,
        Vec::new(),
        &Ledger::path(state_dir),
        &crate::process::host_id(),
        false,
        send::through(client),
    ))
}

/// The drain's handling of a final flush entry (`{agent, sessionId, transcriptPath}`).
pub fn flush(state_dir: &Path, client: &Client, body: &Value) -> Sent {
    let field = |name: &str| body.get(name).and_then(Value::as_str);
    let (Some(agent), Some(session_id), Some(path)) =
        (field("agent"), field("sessionId"), field("transcriptPath"))
    else {
        return Sent::Refused(400);
    };
    let Some(summary) = upload(state_dir, client, agent, session_id, Path::new(path), true) else {
        // Nothing to read (the transcript is gone or was never written): nothing to send.
        return Sent::Done;
    };
    verdict(&summary, || {
        let _ = std::fs::remove_dir_all(checkpoint_dir(state_dir, agent, session_id));
    })
}

/// What a session upload means for the spool entry that asked for it (pure but for `done`).
pub fn verdict(summary: &Summary, done: impl FnOnce()) -> Sent {
    if summary.stopped {
        return Sent::Later(None);
    }
    if let Some((status, _)) = summary.failures.first() {
        return Sent::Refused(*status);
    }
    done();
    Sent::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_from_a_transcript_path() {
        let claude = roots_for(
            "claude-code",
            "0b1c",
            Path::new("/h/.claude/projects/-w-app/0b1c.jsonl"),
        )
        .expect("claude");
        assert_eq!(claude.claude, vec![PathBuf::from("/h/.claude/projects")]);
        let codex = roots_for(
            "codex",
            "019c",
            Path::new("/h/.codex/sessions/2026/02/23/rollout-2026-02-23T20-34-25-019c.jsonl"),
        )
        .expect("codex");
        assert_eq!(codex.codex, vec![PathBuf::from("/h/.codex/sessions")]);
        let gemini = roots_for(
            "gemini",
            "dea5a046-ecad-4bb5-b060-fc9421317188",
            Path::new("/h/.gemini/tmp/proj/chats/session-2026-12-02T05-16-dea5a046.jsonl"),
        )
        .expect("gemini");
        assert_eq!(gemini.gemini, vec![PathBuf::from("/h/.gemini/tmp")]);
        let copilot = roots_for(
            "copilot",
            "a3df8615-919e-4858-9d3d-c23b0845697c",
            Path::new(
                "/h/.copilot/session-state/a3df8615-919e-4858-9d3d-c23b0845697c/events.jsonl",
            ),
        )
        .expect("copilot");
        assert_eq!(
            copilot.copilot,
            vec![PathBuf::from("/h/.copilot/session-state")]
        );
        let refused = [
            (
                "copilot",
                "a3df8615",
                "/h/.copilot/session-state/0000aaaa/events.jsonl",
            ),
            (
                "copilot",
                "a3df8615",
                "/h/.copilot/logs/a3df8615/events.jsonl",
            ),
            (
                "copilot",
                "a3df8615",
                "/h/.copilot/session-state/a3df8615/other.jsonl",
            ),
            (
                "gemini",
                "dea5a046-ecad",
                "/h/.gemini/tmp/proj/chats/session-2026-12-02T05-16-0000aaaa.jsonl",
            ),
            (
                "gemini",
                "dea5a046-ecad",
                "/h/.gemini/other/proj/chats/session-2026-12-02T05-16-dea5a046.jsonl",
            ),
            (
                "gemini",
                "dea5a046-ecad",
                "/h/.gemini/tmp/proj/logs/session-2026-12-02T05-16-dea5a046.jsonl",
            ),
            (
                "gemini",
                "short",
                "/h/.gemini/tmp/p/chats/session-t-short.jsonl",
            ),
            ("claude-code", "x", "/tmp/x.jsonl"),
            ("claude-code", "x", "/tmp/x.txt"),
            (
                "claude-code",
                "other",
                "/h/.claude/projects/-w-app/0b1c.jsonl",
            ),
            ("claude-code", "0b1c", "/h/elsewhere/-w-app/0b1c.jsonl"),
            (
                "codex",
                "019c",
                "/h/.codex/other/2026/02/23/rollout-019c.jsonl",
            ),
            ("cursor", "c", "/a/projects/b/c.jsonl"),
        ];
        for (agent, session, path) in refused {
            assert_eq!(roots_for(agent, session, Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn a_flush_is_done_only_when_everything_was_acknowledged() {
        let ok = Summary::default();
        let mut cleaned = false;
        assert_eq!(verdict(&ok, || cleaned = true), Sent::Done);
        assert!(cleaned);
        let refused = Summary {
            failures: vec![(404, "not_found".into())],
            ..Summary::default()
        };
        assert_eq!(verdict(&refused, || panic!("kept")), Sent::Refused(404));
        let stopped = Summary {
            failures: vec![(503, "x".into())],
            stopped: true,
            ..Summary::default()
        };
        assert_eq!(verdict(&stopped, || panic!("kept")), Sent::Later(None));
    }
}
