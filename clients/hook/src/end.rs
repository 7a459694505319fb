//! SessionEnd: validate, append a close to the spool, return. No network: the end budget is
//! shared with every other end hook (Claude Code 1.5 s in all, Codex 1 s), and the drain
//! delivers the close with its original observation time. When the payload names the
//! transcript, a final usage flush is spooled after the close: the drain reads the session's
//! delta at drain time and uploads it.
//!
//! Claude Code's `/clear` ends one session and starts another in the same process; the end
//! leaves a marker for that process so the next SessionStart can record which session it
//! follows.

use serde_json::{Value, json};

use crate::clear_marker;
use crate::context::Hook;
use crate::payload::Input;

pub const CLOSE: &str = "/api/v1/agent-sessions/close";

pub fn run(hook: &Hook, input: &Input) -> Option<Value> {
    let mut body = hook.key(&input.session_id);
    body["observedAt"] = json!(crate::clock::iso_now());
    hook.spool(CLOSE, body);
    // The final flush: the drain reads what is new in the transcript and uploads it.
    if let Some(path) = &input.transcript_path {
        let mut flush = hook.key(&input.session_id);
        flush["transcriptPath"] = json!(path);
        let entry = crate::spool::Entry {
            path: crate::upload::session::FLUSH.to_string(),
            body: flush,
        };
        if let Err(error) = crate::spool::Spool::usage_in_state(&hook.state_dir).append(&entry) {
            hook.log(error.code());
        }
    }
    if input.reason.as_deref() == Some("clear") {
        clear_marker::mark_cleared(hook, &input.session_id);
    }
    None
}
