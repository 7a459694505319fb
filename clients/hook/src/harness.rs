//! Which harness runs the hook, and which client really hosts the session.
//!
//! The installed command names the harness format (`baton-hook claude-code`), and the payload's
//! shape confirms it. Cursor runs Claude Code's settings files by default, so a Claude-format
//! payload carrying `cursor_version`, or a hook running with `CURSOR_*` in its environment, is a
//! Cursor session: reporting it as Claude Code would register one conversation twice under two
//! clients (seed 004, "Detect the host client"). Gemini CLI is told the same way: its own event
//! names (`AfterAgent`, `BeforeAgent`, ...), or a hook environment whose `GEMINI_SESSION_ID`
//! (set by Gemini CLI for every hook it runs) names the payload's own session. Copilot CLI too:
//! its camelCase payloads (`sessionId`), or `COPILOT_HOOK_DIR`, which it sets only for the
//! hooks it runs (it also runs a repository's `.claude/settings.json` hooks).

use serde_json::Value;

/// A harness whose hook settings Baton understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Cursor,
    /// Gemini CLI (`settings.json` hooks: SessionStart, AfterAgent, SessionEnd, BeforeAgent).
    Gemini,
    /// GitHub Copilot CLI (`~/.copilot/hooks/*.json`: sessionStart, agentStop, sessionEnd, ...).
    Copilot,
}

impl Harness {
    /// The name used on the command line and as the session's `agent`.
    pub fn name(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::Cursor => "cursor",
            Harness::Gemini => "gemini",
            Harness::Copilot => "copilot",
        }
    }

    pub fn parse(text: &str) -> Option<Harness> {
        match text {
            "claude-code" | "claude" => Some(Harness::ClaudeCode),
            "codex" => Some(Harness::Codex),
            "cursor" => Some(Harness::Cursor),
            "gemini" | "gemini-cli" => Some(Harness::Gemini),
            "copilot" | "copilot-cli" => Some(Harness::Copilot),
            _ => None,
        }
    }

    #[cfg(test)]
    pub const ALL: [Harness; 5] = [
        Harness::ClaudeCode,
        Harness::Codex,
        Harness::Cursor,
        Harness::Gemini,
        Harness::Copilot,
    ];
}

/// True when the environment says the hook runs inside Cursor.
pub fn cursor_environment(environment: &[(String, String)]) -> bool {
    environment
        .iter()
        .any(|(name, value)| name.starts_with("CURSOR_") && !value.is_empty())
}

/// Event names only Gemini CLI sends (its hook reference, 0.61.0).
const GEMINI_EVENTS: [&str; 9] = [
    "AfterAgent",
    "BeforeAgent",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "Notification",
];

/// True when Gemini CLI runs this hook for the payload's session: it sets `GEMINI_SESSION_ID`
/// in every hook's environment. Compared with the payload's id rather than merely present, so
/// a Claude Code started from a shell that inherited the variable is not taken for Gemini.
pub fn gemini_environment(environment: &[(String, String)], payload: &Value) -> bool {
    let Some(session) = payload.get("session_id").and_then(Value::as_str) else {
        return false;
    };
    environment
        .iter()
        .any(|(name, value)| name == "GEMINI_SESSION_ID" && !value.is_empty() && value == session)
}

/// True when Copilot CLI runs this hook. `COPILOT_HOOK_DIR` (the folder of the hooks file that
/// named the command) marks the hooks of its own hooks files. The hooks it runs from a
/// repository's `.claude/settings.json` get only `COPILOT_CLI=1` (seen on 1.0.102), which its
/// tools' commands get too: a Claude Code started by one of those inherits it, but states its
/// own session in `CLAUDE_CODE_SESSION_ID`, so a payload of that session is Claude Code's (and
/// one of Gemini's own `GEMINI_SESSION_ID`, Gemini's).
pub fn copilot_environment(environment: &[(String, String)], payload: &Value) -> bool {
    let value = |wanted: &str| {
        environment
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.is_empty())
    };
    if value("COPILOT_HOOK_DIR").is_some() {
        return true;
    }
    let session = payload.get("session_id").and_then(Value::as_str);
    let claimed_by_another = ["CLAUDE_CODE_SESSION_ID", "GEMINI_SESSION_ID"]
        .iter()
        .any(|name| value(name).is_some_and(|own| Some(own) == session));
    value("COPILOT_CLI") == Some("1") && !claimed_by_another
}

/// Copilot CLI's transcript of `session_id`: `$COPILOT_HOME/session-state/<id>/events.jsonl`
/// (`~/.copilot` without the variable). Only an id that is a plain name (letters, digits, `-`,
/// `_`) makes a path: an id never walks out of the folder.
pub fn copilot_transcript(env: &crate::config::Env, session_id: &str) -> Option<String> {
    let plain = (1..=128).contains(&session_id.len())
        && session_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    if !plain {
        return None;
    }
    let home = env
        .get("COPILOT_HOME")
        .filter(|value| !value.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env.home().join(".copilot"));
    let path = home
        .join("session-state")
        .join(session_id)
        .join("events.jsonl");
    path.to_str().map(str::to_string)
}

/// Where the host's environment says the hook runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Host {
    pub cursor: bool,
    /// [`gemini_environment`]'s answer.
    pub gemini: bool,
    /// [`copilot_environment`]'s answer.
    pub copilot: bool,
}

impl Host {
    pub fn of(environment: &[(String, String)], payload: &Value) -> Host {
        Host {
            cursor: cursor_environment(environment),
            gemini: gemini_environment(environment, payload),
            copilot: copilot_environment(environment, payload),
        }
    }
}

/// The client the session belongs to: the installed format, corrected by the payload's shape
/// and the environment. Without an argument the shape alone decides.
pub fn detect(argument: Option<Harness>, payload: &Value, host: Host) -> Harness {
    let has = |key: &str| payload.get(key).is_some_and(|value| !value.is_null());
    let cursor_shape = has("cursor_version") || has("conversation_id");
    if cursor_shape || host.cursor {
        return Harness::Cursor;
    }
    // Copilot's camelCase payloads name the session `sessionId`; no other client does.
    if has("sessionId") {
        return Harness::Copilot;
    }
    let gemini_event = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .is_some_and(|name| GEMINI_EVENTS.contains(&name));
    if gemini_event || host.gemini {
        return Harness::Gemini;
    }
    if host.copilot {
        return Harness::Copilot;
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
        let gemini_turn_end = json!({"session_id": "s", "hook_event_name": "AfterAgent",
            "prompt_response": "done", "timestamp": "2026-12-02T05:00:00Z"});
        let gemini_start = json!({"session_id": "s", "hook_event_name": "SessionStart",
            "source": "startup", "timestamp": "2026-12-02T05:00:00Z"});
        let copilot_stop = json!({"sessionId": "s", "timestamp": 1796188652365_u64, "cwd": "/w",
            "stopReason": "end_turn", "stop_hook_active": false});
        let copilot_pascal_stop = json!({"hook_event_name": "Stop", "session_id": "s",
            "timestamp": "2026-12-02T05:17:32.365Z", "stop_hook_active": false});
        use Harness::{ClaudeCode, Codex, Copilot, Cursor, Gemini};
        // (installed format, payload, in Cursor, in Gemini, expected)
        let table = [
            (Some(ClaudeCode), &claude, false, false, ClaudeCode),
            (None, &claude, false, false, ClaudeCode),
            (None, &codex, false, false, Codex),
            (Some(Codex), &codex, false, false, Codex),
            (Some(Cursor), &cursor, false, false, Cursor),
            (None, &cursor, false, false, Cursor),
            // Cursor running Claude Code's settings: one session, reported as Cursor.
            (Some(ClaudeCode), &claude_in_cursor, false, false, Cursor),
            (Some(ClaudeCode), &claude, true, false, Cursor),
            // Gemini CLI's own settings, and its event names whatever the installed format.
            (Some(Gemini), &gemini_start, false, true, Gemini),
            (Some(Gemini), &gemini_start, false, false, Gemini),
            (None, &gemini_turn_end, false, false, Gemini),
            (Some(ClaudeCode), &gemini_turn_end, false, false, Gemini),
            // A Claude-format hook Gemini runs: the shared event names, Gemini's environment.
            (Some(ClaudeCode), &gemini_start, false, true, Gemini),
            (Some(ClaudeCode), &claude, false, true, Gemini),
        ];
        for (argument, payload, cursor, gemini, expected) in table {
            let host = Host {
                cursor,
                gemini,
                copilot: false,
            };
            assert_eq!(
                detect(argument, payload, host),
                expected,
                "{argument:?} {payload} {host:?}"
            );
        }
        // (installed format, payload, in Copilot, expected)
        let copilot_table = [
            (Some(Copilot), &copilot_stop, true, Copilot),
            (None, &copilot_stop, false, Copilot),
            (Some(ClaudeCode), &copilot_stop, false, Copilot),
            // Pascal-case configuration: Claude's shape, Copilot's environment.
            (Some(Copilot), &copilot_pascal_stop, true, Copilot),
            (Some(Copilot), &copilot_pascal_stop, false, Copilot),
            // A repository's Claude settings run by Copilot CLI.
            (Some(ClaudeCode), &claude, true, Copilot),
        ];
        for (argument, payload, copilot, expected) in copilot_table {
            let host = Host {
                copilot,
                ..Host::default()
            };
            assert_eq!(
                detect(argument, payload, host),
                expected,
                "{argument:?} {payload} copilot={copilot}"
            );
        }
    }

    #[test]
    fn the_copilot_transcript_follows_copilot_home_and_refuses_odd_ids() {
        use crate::config::Env;
        let home = Env::from_pairs(&[("HOME", "/h")]);
        let moved = Env::from_pairs(&[("HOME", "/h"), ("COPILOT_HOME", "/c")]);
        let id = "a3df8615-919e-4858-9d3d-c23b0845697c";
        assert_eq!(
            copilot_transcript(&home, id).as_deref(),
            Some("/h/.copilot/session-state/a3df8615-919e-4858-9d3d-c23b0845697c/events.jsonl")
        );
        assert_eq!(
            copilot_transcript(&moved, "s_1").as_deref(),
            Some("/c/session-state/s_1/events.jsonl")
        );
        for odd in ["../x", "a/b", "", ".", "a b"] {
            assert_eq!(copilot_transcript(&home, odd), None, "{odd:?}");
        }
    }

    #[test]
    fn copilot_environment_table() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect::<Vec<_>>()
        };
        let payload = json!({"session_id": "s-1", "hook_event_name": "Stop"});
        let table = [
            (vec![("COPILOT_HOOK_DIR", "/h/.copilot/hooks")], true),
            (vec![("COPILOT_HOOK_DIR", "")], false),
            // A repository's Claude settings run by Copilot: only COPILOT_CLI.
            (vec![("COPILOT_CLI", "1")], true),
            (vec![("COPILOT_CLI", "0")], false),
            // Claude Code started by a Copilot tool: its own session, its own hook.
            (
                vec![("COPILOT_CLI", "1"), ("CLAUDE_CODE_SESSION_ID", "s-1")],
                false,
            ),
            (
                vec![("COPILOT_CLI", "1"), ("CLAUDE_CODE_SESSION_ID", "other")],
                true,
            ),
            (
                vec![("COPILOT_CLI", "1"), ("GEMINI_SESSION_ID", "s-1")],
                false,
            ),
            (vec![], false),
        ];
        for (pairs, expected) in table {
            assert_eq!(
                copilot_environment(&env(&pairs), &payload),
                expected,
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn gemini_environment_must_name_the_payloads_session() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect::<Vec<_>>()
        };
        let payload = json!({"session_id": "s-1", "hook_event_name": "SessionStart"});
        assert!(gemini_environment(
            &env(&[("GEMINI_SESSION_ID", "s-1")]),
            &payload
        ));
        // Inherited from an outer Gemini session by a shell that started another client.
        assert!(!gemini_environment(
            &env(&[("GEMINI_SESSION_ID", "other")]),
            &payload
        ));
        assert!(!gemini_environment(
            &env(&[("GEMINI_SESSION_ID", "")]),
            &json!({"session_id": "", "hook_event_name": "Stop"})
        ));
        assert!(!gemini_environment(
            &env(&[("GEMINI_PROJECT_DIR", "/w")]),
            &payload
        ));
        assert!(!gemini_environment(
            &env(&[("GEMINI_SESSION_ID", "s-1")]),
            &json!({"conversation_id": "s-1"})
        ));
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
