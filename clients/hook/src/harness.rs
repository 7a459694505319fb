//! Which harness runs the hook, and which client really hosts the session.
//!
//! The installed command names the harness format (`baton-hook claude-code`), and the payload's
//! shape confirms it. Cursor runs Claude Code's settings files by default, so a Claude-format
//! payload carrying `cursor_version`, or a hook running with `CURSOR_*` in its environment, is a
//! Cursor session: reporting it as Claude Code would register one conversation twice under two
//! clients (seed 004, "Detect the host client").

use serde_json::Value;

/// A harness whose hook settings Baton understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Cursor,
}

impl Harness {
    /// The name used on the command line and as the session's `agent`.
    pub fn name(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::Cursor => "cursor",
        }
    }

    pub fn parse(text: &str) -> Option<Harness> {
        match text {
            "claude-code" | "claude" => Some(Harness::ClaudeCode),
            "codex" => Some(Harness::Codex),
            "cursor" => Some(Harness::Cursor),
            _ => None,
        }
    }

    #[cfg(test)]
    pub const ALL: [Harness; 3] = [Harness::ClaudeCode, Harness::Codex, Harness::Cursor];
}

/// True when the environment says the hook runs inside Cursor.
pub fn cursor_environment(environment: &[(String, String)]) -> bool {
    environment
        .iter()
        .any(|(name, value)| name.starts_with("CURSOR_") && !value.is_empty())
}

/// The client the session belongs to: the installed format, corrected by the payload's shape
/// and the environment. Without an argument the shape alone decides.
pub fn detect(argument: Option<Harness>, payload: &Value, in_cursor: bool) -> Harness {
    let has = |key: &str| payload.get(key).is_some_and(|value| !value.is_null());
    let cursor_shape = has("cursor_version") || has("conversation_id");
    if cursor_shape || in_cursor {
        return Harness::Cursor;
    }
    match argument {
        Some(harness) => harness,
        // Codex payloads carry `turn_id` on turn events and `model` on all of them; Claude Code
        // sends neither.
        None if has("turn_id") || has("model") => Harness::Codex,
        None => Harness::ClaudeCode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detection_table() {
        let claude = json!({"session_id": "s", "hook_event_name": "Stop"});
        let codex =
            json!({"session_id": "s", "hook_event_name": "Stop", "turn_id": "t", "model": "gpt-5"});
        let cursor =
            json!({"conversation_id": "c", "hook_event_name": "stop", "cursor_version": "3.21.16"});
        let claude_in_cursor =
            json!({"session_id": "s", "hook_event_name": "Stop", "cursor_version": "3.21.16"});
        let table = [
            (
                Some(Harness::ClaudeCode),
                &claude,
                false,
                Harness::ClaudeCode,
            ),
            (None, &claude, false, Harness::ClaudeCode),
            (None, &codex, false, Harness::Codex),
            (Some(Harness::Codex), &codex, false, Harness::Codex),
            (Some(Harness::Cursor), &cursor, false, Harness::Cursor),
            (None, &cursor, false, Harness::Cursor),
            // Cursor running Claude Code's settings: one session, reported as Cursor.
            (
                Some(Harness::ClaudeCode),
                &claude_in_cursor,
                false,
                Harness::Cursor,
            ),
            (Some(Harness::ClaudeCode), &claude, true, Harness::Cursor),
        ];
        for (argument, payload, in_cursor, expected) in table {
            assert_eq!(
                detect(argument, payload, in_cursor),
                expected,
                "{argument:?} {payload}"
            );
        }
    }

    #[test]
    fn cursor_environment_needs_a_non_empty_cursor_variable() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(cursor_environment(&env(&[("CURSOR_VERSION", "3.21.16")])));
        assert!(!cursor_environment(&env(&[("CURSOR_VERSION", "")])));
        assert!(!cursor_environment(&env(&[("CLAUDE_PID", "12")])));
    }

    #[test]
    fn names_round_trip() {
        for harness in Harness::ALL {
            assert_eq!(Harness::parse(harness.name()), Some(harness));
        }
    }
}
