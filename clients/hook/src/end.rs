//! SessionEnd: validate, append a close to the spool, return. No network: the end budget is
//! shared with every other end hook (Claude Code 1.5 s in all, Codex 1 s), and the drain
//! delivers the close with its original observation time. When the payload names the
//! transcript, a final usage flush is spooled after the close: the drain reads the session's
//! delta at drain time and uploads it.
//!
//! Claude Code's `/clear` ends one session and starts another in the same process; the end
//! leaves a marker for that process so the next SessionStart can record which session it
//! follows. Copilot CLI's `/clear` ends with `user_exit`, the reason `/exit` gives too: the
//! marker is left for that as well, and names a predecessor only if the same client process
//! starts another session (after `/exit` it never does).

use serde_json::{Value, json};

use crate::clear_marker;
use crate::context::Hook;
use crate::harness::Harness;
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
        let entry = crate::spool::Entry::new(crate::upload::session::FLUSH, flush);
        if let Err(error) = crate::spool::Spool::usage_in_state(&hook.state_dir).append(&entry) {
            hook.log(error.code());
        }
    }
    if may_be_cleared(hook.harness, input.reason.as_deref()) {
        clear_marker::mark_cleared(hook, &input.session_id);
    }
    None
}

/// Whether an end with `reason` may be a `/clear`, after which the same process starts the
/// next session.
pub fn may_be_cleared(harness: Harness, reason: Option<&str>) -> bool {
    match reason {
        Some("clear") => true,
        Some("user_exit") => harness == Harness::Copilot,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_ends_leave_a_clear_marker() {
        let table = [
            (Harness::ClaudeCode, Some("clear"), true),
            (Harness::Gemini, Some("clear"), true),
            (Harness::ClaudeCode, Some("logout"), false),
            (Harness::Copilot, Some("user_exit"), true),
            (Harness::ClaudeCode, Some("user_exit"), false),
            (Harness::Copilot, Some("complete"), false),
            (Harness::Gemini, Some("exit"), false),
            (Harness::Codex, None, false),
        ];
        for (harness, reason, expected) in table {
            assert_eq!(
                may_be_cleared(harness, reason),
                expected,
                "{harness:?} {reason:?}"
            );
        }
    }
}
