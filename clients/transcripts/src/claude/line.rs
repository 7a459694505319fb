//! One Claude Code transcript line, decoded only as far as Baton needs it.
//!
//! Fields are borrowed from the line where they hold no escapes, and everything Baton does not
//! read (message text, tool inputs and outputs) is skipped by serde without being copied: large
//! blocks stay raw (`RawValue`) and are looked into only when a line can hold a fact.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The envelope of every line type Baton reads (HOOKS.md 4.2).
#[derive(Deserialize)]
pub struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(rename = "agentId", borrow, default)]
    pub agent_id: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    pub is_sidechain: Option<bool>,
    #[serde(borrow, default)]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub version: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow, default)]
    pub request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub message: Option<Message<'a>>,
    #[serde(rename = "toolUseResult", borrow, default)]
    pub tool_use_result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
    #[serde(rename = "parentToolUseID", borrow, default)]
    pub parent_tool_use_id: Option<Cow<'a, str>>,
    /// `cost-state` lines: the client's own running cost figure.
    #[serde(rename = "totalCostUSD", default)]
    pub total_cost_usd: Option<f64>,
    #[serde(rename = "costState", borrow, default)]
    pub cost_state: Option<&'a RawValue>,
    /// `cost-state` lines: the client's cumulative usage per model.
    #[serde(rename = "modelUsage", borrow, default)]
    pub model_usage: Option<&'a RawValue>,
    /// `queue-operation` lines: `enqueue`, `dequeue`, `remove`, ...
    #[serde(borrow, default)]
    pub operation: Option<Cow<'a, str>>,
    /// `queue-operation` lines: what was queued (a prompt, or a `<task-notification>`).
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
}

/// One model's entry in `cost-state.modelUsage`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientModelUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_creation_ephemeral5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_ephemeral1h_input_tokens: Option<u64>,
}

impl ClientModelUsage {
    /// The five kinds; the flat cache-write figure counts as 5-minute when no split is given.
    pub fn tokens(&self) -> crate::record::Tokens {
        let (five, hour) = match (
            self.cache_creation_ephemeral5m_input_tokens,
            self.cache_creation_ephemeral1h_input_tokens,
        ) {
            (None, None) => (self.cache_creation_input_tokens, 0),
            (five, hour) => (five.unwrap_or(0), hour.unwrap_or(0)),
        };
        crate::record::Tokens {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write_5m: five,
            cache_write_1h: hour,
            reasoning: 0,
        }
    }
}

/// `message` of a user or assistant line.
#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub usage: Option<Usage<'a>>,
    /// A string or an array of blocks; decoded only when a line may hold a spawn or a result.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
}

/// `message.usage` (HOOKS.md 4.3).
#[derive(Deserialize, Default)]
pub struct Usage<'a> {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation: Option<CacheCreation>,
    #[serde(default)]
    pub server_tool_use: Option<ServerToolUse>,
    #[serde(borrow, default)]
    pub service_tier: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub speed: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub inference_geo: Option<Cow<'a, str>>,
}

/// `usage.server_tool_use`: server-side tool calls billed per call.
#[derive(Deserialize, Default)]
pub struct ServerToolUse {
    #[serde(default)]
    pub web_search_requests: Option<u64>,
    #[serde(default)]
    pub web_fetch_requests: Option<u64>,
}

/// The 5-minute / 1-hour split of cache writes.
#[derive(Deserialize, Default)]
pub struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: Option<u64>,
}

/// A content block; only tool uses and tool results are read.
#[derive(Deserialize)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    /// Decoded as a [`SpawnInput`] only for `Task` / `Agent` calls.
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_use_id: Option<Cow<'a, str>>,
    /// Set on a tool result that failed.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// A text block's text (read only for task notifications).
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
}

/// The input of a `Task` / `Agent` call.
#[derive(Deserialize)]
pub struct SpawnInput<'a> {
    #[serde(borrow, default)]
    pub subagent_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub description: Option<Cow<'a, str>>,
}

/// `toolUseResult` when it is an object naming the agent it ran.
#[derive(Deserialize)]
pub struct ToolUseResult<'a> {
    #[serde(rename = "agentId", borrow, default)]
    pub agent_id: Option<Cow<'a, str>>,
    /// `completed`, `async_launched`, or a word for an early end.
    #[serde(borrow, default)]
    pub status: Option<Cow<'a, str>>,
}

/// `data` of a `progress` line.
#[derive(Deserialize)]
pub struct ProgressData<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(rename = "agentId", borrow, default)]
    pub agent_id: Option<Cow<'a, str>>,
}

/// `cost-state` payload when nested under `costState`.
#[derive(Deserialize)]
pub struct CostState {
    #[serde(rename = "totalCostUSD", default)]
    pub total_cost_usd: Option<f64>,
}

impl Usage<'_> {
    /// Cache writes of both durations: the nested split when the line has one (v2.1.152 fixed
    /// a total of 0 beside a non-zero split), else the flat field, all counted as 5-minute.
    pub fn cache_writes(&self) -> (u64, u64) {
        match &self.cache_creation {
            Some(split) => (
                split.ephemeral_5m_input_tokens.unwrap_or(0),
                split.ephemeral_1h_input_tokens.unwrap_or(0),
            ),
            None => (self.cache_creation_input_tokens.unwrap_or(0), 0),
        }
    }
}

/// The texts of a raw content value: the string itself, or each text block's text.
pub fn texts(raw: &RawValue) -> Vec<Cow<'_, str>> {
    if raw.get().starts_with('"') {
        return serde_json::from_str::<Cow<'_, str>>(raw.get())
            .map(|text| vec![text])
            .unwrap_or_default();
    }
    blocks(raw)
        .into_iter()
        .filter(|block| block.kind.as_deref() == Some("text"))
        .filter_map(|block| block.text)
        .collect()
}

/// Decodes a raw array of content blocks; anything else (a plain string) has none.
pub fn blocks(raw: &RawValue) -> Vec<Block<'_>> {
    if !raw.get().starts_with('[') {
        return Vec::new();
    }
    serde_json::from_str(raw.get()).unwrap_or_default()
}
