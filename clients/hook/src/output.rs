//! What each harness accepts back on stdout. Nothing else is ever printed: a failure prints
//! nothing at all.
//!
//! SessionStart's context follows the settings file that ran the hook (the installed format):
//! Cursor runs Claude Code's settings files through its compatibility layer, which reads
//! Claude Code's context shape; Cursor's own `hooks.json` entries get Cursor's shape.
//!
//! The Stop continuation follows the detected host, whatever the settings format: Cursor
//! continues only through `followup_message` and must never get `decision`/`reason` (seed 000,
//! harness coverage), so a Claude-format Stop carrying `cursor_version` gets Cursor's form.

use serde_json::{Value, json};

use crate::harness::Harness;

/// SessionStart context: Claude Code, Codex and Gemini CLI take
/// `hookSpecificOutput.additionalContext` (Gemini reads only that member and prepends it to the
/// first prompt headless); Cursor takes `additional_context`.
pub fn session_context(harness: Harness, context: &str) -> Value {
    match harness {
        Harness::ClaudeCode | Harness::Codex | Harness::Gemini => json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        }),
        Harness::Cursor => json!({ "additional_context": context }),
        // Copilot CLI reads `additionalContext` at the top level and gives it to the model as a
        // user message after the system prompt.
        Harness::Copilot => json!({ "additionalContext": context }),
    }
}

/// The Stop continuation for the host that runs the session: Claude Code and Codex block with
/// a reason (continuation input); Cursor submits a follow-up message; Gemini CLI's AfterAgent
/// rejects the response with `decision: "deny"` and sends `reason` to the agent as the next
/// prompt (its hook reference names `deny`, with `block` only an alias). Cursor never gets
/// `decision`/`reason`.
pub fn continuation(host: Harness, prompt: &str) -> Value {
    match host {
        // Copilot CLI queues `reason` as the next user message (and caps a run of blocks at 8).
        Harness::ClaudeCode | Harness::Codex | Harness::Copilot => {
            json!({ "decision": "block", "reason": prompt })
        }
        Harness::Cursor => json!({ "followup_message": prompt }),
        Harness::Gemini => json!({ "decision": "deny", "reason": prompt }),
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
    use crate::harness::detect;

    #[test]
    fn the_continuation_follows_the_detected_host_for_every_settings_format() {
        let claude_stop = json!({"session_id": "s", "hook_event_name": "Stop"});
        let claude_stop_in_cursor =
            json!({"session_id": "s", "hook_event_name": "Stop", "cursor_version": "3.21.16"});
        let cursor_stop = json!({"conversation_id": "c", "hook_event_name": "stop",
            "status": "completed", "loop_count": 0, "cursor_version": "3.21.16"});
        let codex_stop = json!({"session_id": "s", "hook_event_name": "Stop", "turn_id": "t"});
        let gemini_stop = json!({"session_id": "s", "hook_event_name": "AfterAgent",
            "prompt_response": "r", "stop_hook_active": false});
        let deny = json!({"decision": "deny", "reason": "p"});
        let block = json!({"decision": "block", "reason": "p"});
        let follow_up = json!({"followup_message": "p"});
        let cases = [
            (
                "Claude settings in Claude Code",
                Harness::ClaudeCode,
                &claude_stop,
                false,
                &block,
            ),
            (
                "Codex settings in Codex",
                Harness::Codex,
                &codex_stop,
                false,
                &block,
            ),
            (
                "Gemini settings in Gemini CLI",
                Harness::Gemini,
                &gemini_stop,
                false,
                &deny,
            ),
            (
                "Claude settings run by Gemini CLI (its event name)",
                Harness::ClaudeCode,
                &gemini_stop,
                false,
                &deny,
            ),
            (
                "Cursor's own hooks.json",
                Harness::Cursor,
                &cursor_stop,
                false,
                &follow_up,
            ),
            (
                "Claude settings run by Cursor (cursor_version)",
                Harness::ClaudeCode,
                &claude_stop_in_cursor,
                false,
                &follow_up,
            ),
            (
                "Claude settings run by Cursor (CURSOR_* environment)",
                Harness::ClaudeCode,
                &claude_stop,
                true,
                &follow_up,
            ),
        ];
        for (name, format, payload, in_cursor, expected) in cases {
            let host = detect(
                Some(format),
                payload,
                crate::harness::Host {
                    cursor: in_cursor,
                    ..Default::default()
                },
            );
            assert_eq!(&continuation(host, "p"), expected, "{name}");
        }
    }

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
            continuation(Harness::Gemini, "p"),
            json!({"decision": "deny", "reason": "p"})
        );
        assert_eq!(
            continuation(Harness::Copilot, "p"),
            json!({"decision": "block", "reason": "p"})
        );
        assert_eq!(
            session_context(Harness::Copilot, "c"),
            json!({"additionalContext": "c"})
        );
        assert_eq!(
            session_context(Harness::Gemini, "c")["hookSpecificOutput"]["additionalContext"],
            "c"
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
