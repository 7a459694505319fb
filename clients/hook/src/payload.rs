//! What a harness sends on stdin, reduced to what Baton reads.
//!
//! Claude Code, Codex, Cursor and Gemini CLI all send one JSON object. Every field but the
//! session id and the event name is optional, unknown fields are ignored, and an unknown event
//! does nothing. Cursor names its events in camelCase and its session `conversation_id`.
//! Gemini CLI ends a turn with `AfterAgent` (the final text in `prompt_response`) and announces
//! a prompt with `BeforeAgent`. Its `PreCompress` is not read as a compaction: 0.61.0 fires it
//! each time it considers compressing, before every model call, whether or not it compresses
//! (`ChatCompressionService.compress`), so it says nothing about the session.
//! Copilot CLI configured with camelCase event names (as Baton installs it) sends `sessionId`,
//! `transcriptPath`, a numeric `timestamp` and no event name (the installed command's word
//! names it); its turn end is `agentStop`, which also fires inside a subagent with that
//! subagent's id as `sessionId` beside `agentId` and `parentAgentId`: a subagent's context.

use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The most stdin the hook reads (a long final message fits comfortably).
pub const MAX_STDIN: usize = 4 * 1024 * 1024;

/// The events Baton handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    SessionStart,
    Stop,
    SessionEnd,
    PreCompact,
    /// Recorded only (spool-only): a prompt is never delayed by a network call.
    UserPromptSubmit,
}

impl Event {
    /// From a payload's `hook_event_name` or the installed command's event word.
    pub fn parse(name: &str) -> Option<Event> {
        match name {
            "SessionStart" | "sessionStart" | "session-start" => Some(Event::SessionStart),
            "Stop" | "stop" | "AfterAgent" | "agentStop" => Some(Event::Stop),
            "SessionEnd" | "sessionEnd" | "session-end" => Some(Event::SessionEnd),
            "PreCompact" | "preCompact" | "pre-compact" => Some(Event::PreCompact),
            "UserPromptSubmit" | "user-prompt-submit" | "BeforeAgent" | "userPromptSubmitted" => {
                Some(Event::UserPromptSubmit)
            }
            _ => None,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::Stop => "stop",
            Event::SessionEnd => "session-end",
            Event::PreCompact => "pre-compact",
            Event::UserPromptSubmit => "user-prompt-submit",
        }
    }

    /// The Claude-style hook event name (what a delivery records when the payload names none).
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::Stop => "Stop",
            Event::SessionEnd => "SessionEnd",
            Event::PreCompact => "PreCompact",
            Event::UserPromptSubmit => "UserPromptSubmit",
        }
    }
}

/// One hook delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub event: Event,
    pub session_id: String,
    /// SessionStart's `source`: startup, resume, clear, compact.
    pub source: Option<String>,
    /// SessionEnd's `reason`.
    pub reason: Option<String>,
    /// The working directory (Cursor: the first workspace root).
    pub cwd: Option<String>,
    /// Claude Code and Codex `stop_hook_active`; Cursor: a follow-up's stop (`loop_count` > 0).
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<String>,
    /// Present in a subagent's context.
    pub agent_id: Option<String>,
    /// The session's transcript file (Claude Code and Codex), when the harness names one.
    pub transcript_path: Option<String>,
    /// Cursor's stop `status` (completed, aborted, error).
    pub status: Option<String>,
    pub raw: Value,
}

/// Why a delivery is not handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    NotJson,
    NoSessionId,
    /// An event Baton does not handle: not an error, nothing to do.
    UnknownEvent,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

/// Parses one delivery; `argument` is the event word the installed command passed.
pub fn parse(bytes: &[u8], argument: Option<Event>) -> Result<Input, Rejected> {
    let raw: Value = serde_json::from_slice(bytes).map_err(|_| Rejected::NotJson)?;
    if !raw.is_object() {
        return Err(Rejected::NotJson);
    }
    let named = raw.get("hook_event_name").and_then(Value::as_str);
    let event = match named {
        Some(name) => Event::parse(name).ok_or(Rejected::UnknownEvent)?,
        None => argument.ok_or(Rejected::UnknownEvent)?,
    };
    let session_id = text(&raw, "session_id")
        .or_else(|| text(&raw, "conversation_id"))
        .or_else(|| text(&raw, "sessionId"))
        .ok_or(Rejected::NoSessionId)?;
    // The first of the spellings the clients use.
    let first = |keys: &[&str]| keys.iter().find_map(|key| text(&raw, key));
    let cwd = text(&raw, "cwd").or_else(|| {
        raw.get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let loop_count = raw.get("loop_count").and_then(Value::as_u64).unwrap_or(0);
    let stop_hook_active = raw
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || loop_count > 0;
    Ok(Input {
        event,
        session_id,
        source: text(&raw, "source"),
        reason: text(&raw, "reason"),
        cwd,
        stop_hook_active,
        // Gemini CLI's AfterAgent names the turn's final text `prompt_response`.
        last_assistant_message: ["last_assistant_message", "prompt_response"]
            .iter()
            .find_map(|key| raw.get(*key).and_then(Value::as_str))
            .map(str::to_string),
        // Copilot names a subagent's context by `agentId` and its parent.
        agent_id: first(&["agent_id", "agentId", "parent_agent_id", "parentAgentId"]),
        transcript_path: first(&["transcript_path", "transcriptPath"]),
        status: text(&raw, "status"),
        raw,
    })
}

/// Reads stdin until one JSON value is complete, EOF, or `budget` passes — a harness that
/// keeps stdin open must not hold the hook past its deadline.
pub fn read_stdin(budget: Duration) -> Option<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        let mut chunk = [0_u8; 16 * 1024];
        loop {
            match stdin.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(read) => {
                    bytes.extend_from_slice(&chunk[..read]);
                    if bytes.len() > MAX_STDIN {
                        let _ = sender.send(None);
                        return;
                    }
                    // Parse only when the value may be complete (it ends in a closing brace),
                    // so a large payload is not re-scanned on every chunk.
                    let closed = bytes.trim_ascii_end().ends_with(b"}");
                    if closed && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() {
                        break;
                    }
                }
            }
        }
        let _ = sender.send(Some(bytes));
    });
    receiver.recv_timeout(budget).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(value: Value) -> Result<Input, Rejected> {
        parse(value.to_string().as_bytes(), None)
    }

    #[test]
    fn claude_code_fixtures_parse() {
        for file in [
            "session_start",
            "stop",
            "pre_compact",
            "subagent_stop",
            "notification",
        ] {
            let path = format!(
                "{}/../../fixtures/hook-payloads/kesslerio-attio-mcp-server/{file}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).expect("fixture present");
            let payloads: Vec<Value> = serde_json::from_str(&text).expect("fixture json");
            for payload in payloads {
                let result = parsed(payload.clone());
                match file {
                    "subagent_stop" | "notification" => {
                        assert_eq!(result, Err(Rejected::UnknownEvent), "{payload}")
                    }
                    _ => assert!(result.is_ok(), "{payload}"),
                }
            }
        }
    }

    #[test]
    fn shapes() {
        let cursor = parsed(json!({"conversation_id": "c-1", "hook_event_name": "stop",
            "workspace_roots": ["/w/app"], "status": "completed", "loop_count": 1}))
        .expect("cursor stop");
        assert_eq!(cursor.event, Event::Stop);
        assert_eq!(cursor.session_id, "c-1");
        assert_eq!(cursor.cwd.as_deref(), Some("/w/app"));
        assert!(cursor.stop_hook_active, "a follow-up's stop finalizes");

        let minimal = parsed(json!({"session_id": "s", "hook_event_name": "SessionEnd"}))
            .expect("only the two required fields");
        assert_eq!(minimal.event, Event::SessionEnd);
        assert_eq!(minimal.cwd, None);

        let extra = parsed(json!({"session_id": "s", "hook_event_name": "Stop",
            "stop_hook_active": true, "brand_new_field": {"x": 1}}))
        .expect("unknown fields are ignored");
        assert!(extra.stop_hook_active);

        assert_eq!(
            parsed(json!({"hook_event_name": "Stop"})),
            Err(Rejected::NoSessionId)
        );
        assert_eq!(
            parsed(json!({"session_id": " ", "hook_event_name": "Stop"})),
            Err(Rejected::NoSessionId)
        );
        assert_eq!(
            parsed(json!({"session_id": "s", "hook_event_name": "Notification"})),
            Err(Rejected::UnknownEvent)
        );
        assert_eq!(parsed(json!([1])), Err(Rejected::NotJson));
        assert_eq!(parse(b"{", None), Err(Rejected::NotJson));
        let by_argument =
            parse(br#"{"session_id":"s"}"#, Some(Event::Stop)).expect("argument names the event");
        assert_eq!(by_argument.event, Event::Stop);
        let prompt = parsed(
            json!({"session_id": "s", "hook_event_name": "UserPromptSubmit",
            "prompt": "private", "transcript_path": "/h/.claude/projects/-w/s.jsonl"}),
        )
        .expect("recorded");
        assert_eq!(prompt.event, Event::UserPromptSubmit);
        let gemini_turn_end = parsed(json!({"session_id": "g", "hook_event_name": "AfterAgent",
            "prompt": "private", "prompt_response": "All done.", "stop_hook_active": true,
            "transcript_path": "/h/.gemini/tmp/w/chats/session-2026-12-02T05-00-g.jsonl",
            "cwd": "/w", "timestamp": "2026-12-02T05:00:00.000Z"}))
        .expect("Gemini's turn end");
        assert_eq!(gemini_turn_end.event, Event::Stop);
        assert_eq!(
            gemini_turn_end.last_assistant_message.as_deref(),
            Some("All done.")
        );
        assert!(gemini_turn_end.stop_hook_active);
        assert_eq!(
            parsed(json!({"session_id": "g", "hook_event_name": "BeforeAgent", "prompt": "p"}))
                .expect("Gemini's prompt")
                .event,
            Event::UserPromptSubmit
        );
        let copilot_stop = parse(
            json!({"sessionId": "c-1", "timestamp": 1796188652365_u64, "cwd": "/w",
                "transcriptPath": "/h/.copilot/session-state/c-1/events.jsonl",
                "stopReason": "end_turn", "stop_hook_active": false})
            .to_string()
            .as_bytes(),
            Some(Event::Stop),
        )
        .expect("Copilot's camelCase turn end, named by the command's word");
        assert_eq!(copilot_stop.session_id, "c-1");
        assert_eq!(copilot_stop.agent_id, None);
        assert_eq!(
            copilot_stop.transcript_path.as_deref(),
            Some("/h/.copilot/session-state/c-1/events.jsonl")
        );
        let inside_subagent = parse(
            json!({"sessionId": "sub-9", "agentId": "sub-9", "agentType": "explore",
                "parentAgentId": "c-1", "stop_hook_active": false})
            .to_string()
            .as_bytes(),
            Some(Event::Stop),
        )
        .expect("parsed");
        assert_eq!(
            inside_subagent.agent_id.as_deref(),
            Some("sub-9"),
            "a subagent's context"
        );
        for ignored in ["PreCompress", "BeforeModel", "AfterModel", "AfterTool"] {
            assert_eq!(
                parsed(json!({"session_id": "g", "hook_event_name": ignored})),
                Err(Rejected::UnknownEvent),
                "{ignored}"
            );
        }
        assert_eq!(
            prompt.transcript_path.as_deref(),
            Some("/h/.claude/projects/-w/s.jsonl")
        );
    }
}
