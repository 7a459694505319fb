//! The upload's wire shapes: the camelCase JSON of `baton.usage.v1.UploadBatchRequest`
//! (`proto/baton/usage/v1/usage.proto`). Identifiers and counts only: there is no field here
//! that could carry a prompt, a message, a tool input or output, a spawn description or a path.
//! Timestamps are RFC 3339 strings; optional fields are omitted when absent.

use serde::Serialize;

/// One upload: facts from one host.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    pub host_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    pub sessions: Vec<SessionFact>,
    pub agents: Vec<AgentFact>,
    pub edges: Vec<EdgeFact>,
    pub usage: Vec<UsageFact>,
    pub deliveries: Vec<DeliveryFact>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
            && self.agents.is_empty()
            && self.edges.is_empty()
            && self.usage.is_empty()
            && self.deliveries.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFact {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    pub client_versions: Vec<String>,
    pub output_under_reported: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_activity_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFact {
    pub agent: String,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `main`, `subagent` or `compaction`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_activity_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_at: Option<String>,
    /// `completed` or `error`, with `ended_at`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeFact {
    pub agent: String,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    pub child_agent_id: String,
    pub join_path: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageFact {
    pub agent: String,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub dedup_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub at: String,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference_geo: Option<String>,
    pub sidechain: bool,
    /// Reasoning tokens, already inside `output` (Codex states them).
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning: u64,
    /// Server-side web searches the request ran, billed per call.
    #[serde(skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
    /// Server-side web fetches the request ran, billed per call.
    #[serde(skip_serializing_if = "is_zero")]
    pub web_fetch_requests: u64,
}

/// Zero counts are left out: the server reads an absent count as 0, and a row without
/// reasoning or server-tool calls keeps the shape (and ledger hash) it had before they existed.
fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliveryFact {
    pub delivery_id: String,
    pub agent: String,
    pub session_id: String,
    pub event: String,
    pub observed_at: String,
}

/// Milliseconds since the epoch as an RFC 3339 UTC string (millisecond precision).
pub fn timestamp(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}
