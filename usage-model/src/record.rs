//! The record types every harness adapter produces: one usage record per model request, with
//! the five token kinds and the request's price modifiers.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Which client wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Gemini,
    /// GitHub Copilot CLI (`~/.copilot/session-state/<id>/events.jsonl`).
    Copilot,
}

impl Harness {
    /// Every harness a transcript reader writes.
    pub const ALL: [Harness; 4] = [
        Harness::ClaudeCode,
        Harness::Codex,
        Harness::Gemini,
        Harness::Copilot,
    ];

    /// The name Baton uses on the wire (`agent` in the REST contract).
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::Gemini => "gemini",
            Harness::Copilot => "copilot",
        }
    }

    /// The harness a wire name (`agent`) names; `None` for a name no transcript reader writes.
    pub fn from_wire(agent: &str) -> Option<Harness> {
        Harness::ALL
            .into_iter()
            .find(|harness| harness.as_str() == agent)
    }

    /// The harness a stored or uploaded row's `agent` is read as: its own, and Claude Code's
    /// rules for a name Baton does not know (what every such row was read as before).
    pub fn of_agent(agent: &str) -> Harness {
        Harness::from_wire(agent).unwrap_or(Harness::ClaudeCode)
    }
}

/// The five token kinds a transcript records (seed 002, "token bucket" as built), and the
/// reasoning tokens a harness states apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tokens {
    /// Uncached input tokens.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    /// Reasoning tokens, **already inside `output`** (Codex's `reasoning_output_tokens`, which
    /// OpenAI bills as output; Gemini's `thoughts`, which Google bills as output; Copilot CLI's
    /// `reasoningTokens`, which it counts inside `outputTokens`). Kept as its
    /// own figure for reports; never added to a total or priced on its own. Claude Code states
    /// no such split (thinking is part of output).
    #[serde(default)]
    pub reasoning: u64,
}

impl Tokens {
    /// Every token of the request, all kinds together.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// The prompt side of a request (what long-context tiers are measured on).
    pub fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// Cache writes of both durations.
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }
}

impl AddAssign for Tokens {
    fn add_assign(&mut self, other: Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write_5m += other.cache_write_5m;
        self.cache_write_1h += other.cache_write_1h;
        self.reasoning += other.reasoning;
    }
}

/// Server-side tool calls a request made, billed per call rather than per token
/// (`usage.server_tool_use` in Claude Code transcripts, HOOKS.md 4.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerTools {
    /// `web_search_requests`: web searches the model ran.
    #[serde(default)]
    pub web_search: u64,
    /// `web_fetch_requests`: pages the model fetched.
    #[serde(default)]
    pub web_fetch: u64,
}

impl ServerTools {
    /// Whether the request made no server tool call.
    pub fn is_empty(&self) -> bool {
        self.web_search == 0 && self.web_fetch == 0
    }
}

impl AddAssign for ServerTools {
    fn add_assign(&mut self, other: ServerTools) {
        self.web_search += other.web_search;
        self.web_fetch += other.web_fetch;
    }
}

/// What can change a request's rate besides its model (HOOKS.md 5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Modifiers {
    pub service_tier: Option<String>,
    /// `fast` for fast mode.
    pub speed: Option<String>,
    /// Data residency, e.g. `us`; `not_available` or empty mean none.
    pub inference_geo: Option<String>,
}

/// One model request's usage, after dedup the unit every report sums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// Claude Code: `message.id`. Codex: the response id, or the cumulative total the
    /// response brought the session to. Gemini CLI: the chat message's `id`. Copilot CLI: the
    /// receipt's accounting identity (`<sourceSessionId>:<sequence>`). Stable across
    /// re-reads of the same file.
    pub message_id: String,
    /// Claude Code's `requestId`, when the line has one.
    pub request_id: Option<String>,
    pub harness: Harness,
    pub session_id: String,
    /// `None` for the session's main agent.
    pub agent_id: Option<String>,
    /// `None` only when the transcript names no model (`"model": null`); `<synthetic>` is kept
    /// as written and priced by its explicit zero row.
    pub model: Option<String>,
    /// Milliseconds since the Unix epoch, UTC.
    pub timestamp_ms: i64,
    pub tokens: Tokens,
    /// Per-call server tools the request used (web search, web fetch).
    #[serde(default)]
    pub server_tools: ServerTools,
    pub modifiers: Modifiers,
    /// The line was written by a sidechain (subagent or side question).
    pub sidechain: bool,
}

impl UsageRecord {
    /// The key the record is known by after dedup: `message.id`, plus `requestId` when set.
    pub fn dedup_key(&self) -> String {
        match &self.request_id {
            Some(request) => format!("{}:{request}", self.message_id),
            None => self.message_id.clone(),
        }
    }

    /// Whether this is Claude Code's own internal message (no model request was made).
    pub fn is_synthetic(&self) -> bool {
        self.model.as_deref() == Some(SYNTHETIC_MODEL)
    }
}

/// The model id Claude Code writes on its own internal messages (HOOKS.md 4.6).
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names() {
        let cases = [
            (
                "claude-code",
                Some(Harness::ClaudeCode),
                Harness::ClaudeCode,
            ),
            ("codex", Some(Harness::Codex), Harness::Codex),
            ("gemini", Some(Harness::Gemini), Harness::Gemini),
            ("copilot", Some(Harness::Copilot), Harness::Copilot),
            ("cursor", None, Harness::ClaudeCode),
            ("", None, Harness::ClaudeCode),
        ];
        for (agent, known, read_as) in cases {
            assert_eq!(Harness::from_wire(agent), known, "{agent}");
            assert_eq!(Harness::of_agent(agent), read_as, "{agent}");
        }
    }
}
