//! What one transcript file says, harness-neutral and cacheable: the usage records in line
//! order (not yet deduplicated), the spawn calls and the proofs that join a spawn to a child
//! agent, and per-file bookkeeping. A tail read appends to the same value, so every field is
//! an accumulation that a later chunk of lines extends.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use baton_usage_model::JoinPath;

use crate::record::UsageRecord;

/// The facts of one file, accumulated over its complete lines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileFacts {
    pub records: Vec<UsageRecord>,
    /// Subagent spawn calls (`Task` / `Agent` tool uses) written in this file.
    pub spawns: Vec<Spawn>,
    /// Proofs tying a spawn's tool-use id to the child agent it started.
    pub links: Vec<Link>,
    /// Spawn calls of this file whose tool result arrived: the transcript's evidence that the
    /// child agent ended (Baton does not register SubagentStop).
    #[serde(default)]
    pub results: Vec<SpawnResult>,
    /// Client versions seen on the file's lines.
    pub versions: BTreeSet<String>,
    /// The last figure of the client's own cost (`cost-state` lines), in USD.
    pub client_cost_usd: Option<f64>,
    /// The client's own cumulative tokens per model from the same line. Claude Code 2.1.332
    /// writes no assistant line for a compaction call, so this is the only place its usage
    /// shows; the difference from the transcript's records is reported, never added in.
    pub client_tokens: std::collections::BTreeMap<String, crate::record::Tokens>,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    /// Lines that could not be read as a transcript line.
    pub malformed_lines: u64,
    /// Complete lines read.
    pub lines: u64,
    /// The first `sessionId` the lines name (how a legacy sibling file finds its session).
    pub line_session_id: Option<String>,
    /// The main file wrote sidechain lines inline (very old Claude Code versions).
    pub inline_sidechain: bool,
    /// Gemini CLI: the file's own id (its first metadata record's `sessionId`): the session of
    /// a main chat file, the agent of a subagent's.
    #[serde(default)]
    pub gemini_id: Option<String>,
    /// Codex: the working folder the session ran in (its project).
    pub cwd: Option<String>,
    /// Codex: what the reader needs to go on from where it stopped.
    pub codex: CodexState,
}

/// A subagent spawn: the tool call that started a child agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawn {
    pub tool_use_id: String,
    /// `Task` (older) or `Agent` (newer).
    pub tool_name: String,
    pub subagent_type: Option<String>,
    pub description: Option<String>,
    pub timestamp_ms: Option<i64>,
    /// The agent that made the call, when one file holds several agents' lines (Copilot CLI's
    /// session log); `None` means the agent of the file the call is in.
    #[serde(default)]
    pub caller: Option<String>,
}

/// The tool result of a spawn call, written in the same file as the call.
///
/// Rules: a result with `is_error: true`, a `toolUseResult` that is an error text, or a
/// `toolUseResult.status` other than `completed` records an early termination (`error`); a
/// result without either is a completion. An async launch (`status: "async_launched"`) is not
/// an end and is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnResult {
    pub tool_use_id: String,
    pub timestamp_ms: Option<i64>,
    pub is_error: bool,
}

/// A proof that a spawn started a given agent, and where it was found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Link {
    pub tool_use_id: String,
    pub agent_id: String,
    pub path: JoinPath,
}

/// Where a Codex rollout reader stopped: the file's thread, the running model, the last
/// cumulative total, and whether it is inside a replay or a review (see `codex`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodexState {
    /// The file's own thread id: its first `session_meta`.
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// The last cumulative `total_token_usage` of the file's own count.
    pub last_total: Option<CodexTotal>,
    /// The rollout carries per-response `token_usage_record` lines; cumulative `token_count`
    /// events are then ignored (the records are the finer and exact source).
    pub has_response_records: bool,
    /// How the thread was started (main, or which kind of subagent of which parent).
    pub origin: crate::codex::meta::Origin,
    /// The thread a fork copied its history from.
    pub forked_from: Option<String>,
    /// Inside a copy of another thread's lines (a resume or fork replay).
    pub replay: Option<Replay>,
    /// Between `entered_review_mode` and `exited_review_mode`.
    pub review: Option<Review>,
    /// The time of the last line read, for the replay's end.
    pub last_line_ms: Option<i64>,
    /// Usage events read as replayed history (not counted).
    pub replayed_events: u64,
    /// Usage events read as a review thread's echo.
    pub echoed_events: u64,
    /// Reviews the file has entered so far (numbers each review's echo).
    pub reviews: u32,
}

/// A replay in progress: whose lines are being copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    pub thread_id: String,
}

/// A review in progress in the parent: the review thread's own count and model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    /// The review's number in the file, from 1.
    pub number: u32,
    pub last_total: Option<CodexTotal>,
    pub model: Option<String>,
}

/// A Codex cumulative usage figure as the rollout wrote it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodexTotal {
    pub input: u64,
    pub cached_input: u64,
    pub cache_write: u64,
    pub output: u64,
    /// `reasoning_output_tokens`, part of `output`.
    #[serde(default)]
    pub reasoning: u64,
    pub total: u64,
}

impl FileFacts {
    /// Widens the file's activity span to include `ms`.
    pub fn saw_time(&mut self, ms: i64) {
        self.first_ms = Some(self.first_ms.map_or(ms, |first| first.min(ms)));
        self.last_ms = Some(self.last_ms.map_or(ms, |last| last.max(ms)));
    }
}
