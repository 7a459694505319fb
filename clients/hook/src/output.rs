//! What each harness accepts back on stdout. Nothing else is ever printed: a failure prints
//! nothing at all.
//!
//! The form follows the settings file that ran the hook (the installed format), not the host:
//! Cursor runs Claude Code's settings files through its compatibility layer, which reads
//! Claude Code's output shape; Cursor's own `hooks.json` entries get Cursor's shape.

use serde_json::{Value, json};

use crate::harness::Harness;

/// SessionStart context: Claude Code and Codex take `hookSpecificOutput.additionalContext`;
/// Cursor takes `additional_context`.
pub fn session_context(harness: Harness, context: &str) -> Value {
    match harness {
        Harness::ClaudeCode | Harness::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        }),
        Harness::Cursor => json!({ "additional_context": context }),
    }
}

/// The Stop continuation: Claude Code and Codex block with a reason (continuation input);
/// Cursor submits a follow-up message. Cursor never gets `decision`/`reason`.
pub fn continuation(harness: Harness, prompt: &str) -> Value {
    match harness {
        Harness::ClaudeCode | Harness::Codex => json!({ "decision": "block", "reason": prompt }),
        Harness::Cursor => json!({ "followup_message": prompt }),
    }
}

/// The words that hand the model its run id.
pub fn run_id_instruction(session_run_id: &str) -> String {
    format!(
        "Baton session: sessionRunId = {session_run_id}\n\
         Pass \"sessionRunId\": \"{session_run_id}\" on every Baton memory write in this \
         session (remember, revise, resolve, archive), so the work is credited to it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_per_harness() {
        assert_eq!(
            continuation(Harness::ClaudeCode, "p"),
            json!({"decision": "block", "reason": "p"})
        );
        assert_eq!(
            continuation(Harness::Codex, "p"),
            json!({"decision": "block", "reason": "p"})
        );
        assert_eq!(
            continuation(Harness::Cursor, "p"),
            json!({"followup_message": "p"})
        );
        assert_eq!(
            session_context(Harness::Cursor, "c"),
            json!({"additional_context": "c"})
        );
        assert_eq!(
            session_context(Harness::ClaudeCode, "c")["hookSpecificOutput"]["additionalContext"],
            "c"
        );
    }
}
