//! `POST /usage/batches`: one host's facts, strict camelCase JSON of `baton.usage.v1` (an
//! unknown key such as `prompt`, `message` or `content` is 400; identifiers and counts are all
//! an upload can carry), gzip or zstd accepted, 8 MiB after decoding.

use axum::Json;
use axum::extract::{Request, State};
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_proto::usage::v1 as proto;

use crate::api_schema::enums::{AgentEnd, AgentKind, JoinPath};
use crate::api_schema::text::{Agent, ContractUuid, FactId, Identifier, Instant};
use crate::api_schema::{List, errors};
use crate::response::{HttpError, HttpResult};
use crate::routes::usage_body;
use crate::routes::{instant, optional_instant};
use crate::state::{AppState, Caller, Member};
use crate::strict;

/// `POST /usage/batches` body: an `UploadBatchRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadBody {
    #[schema(schema_with = FactId::<128>::schema)]
    pub host_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<255>::schema)]
    pub hostname: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<64>::schema)]
    pub client_version: Option<String>,
    #[serde(default)]
    #[schema(inline, max_items = 500)]
    pub sessions: Vec<SessionBody>,
    #[serde(default)]
    #[schema(inline, max_items = 5000)]
    pub agents: Vec<AgentBody>,
    #[serde(default)]
    #[schema(inline, max_items = 5000)]
    pub edges: Vec<EdgeBody>,
    #[serde(default)]
    #[schema(inline, max_items = 10000)]
    pub usage: Vec<UsageBody>,
    #[serde(default)]
    #[schema(inline, max_items = 2000)]
    pub deliveries: Vec<DeliveryBody>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub project_slug: String,
    #[serde(default)]
    #[schema(schema_with = List::<Identifier<64>, 32>::schema)]
    pub client_versions: Vec<String>,
    #[serde(default)]
    pub output_under_reported: bool,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub first_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub last_activity_at: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = FactId::<128>::schema)]
    pub agent_id: Option<String>,
    #[schema(schema_with = AgentKind::schema)]
    pub kind: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = FactId::<128>::schema)]
    pub parent_agent_id: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<128>::schema)]
    pub subagent_type: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<64>::schema)]
    pub spawn_tool: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<128>::schema)]
    pub model: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub first_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub last_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = AgentEnd::schema)]
    pub ended: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub ended_at: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EdgeBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = FactId::<128>::schema)]
    pub parent_agent_id: Option<String>,
    #[schema(schema_with = FactId::<128>::schema)]
    pub child_agent_id: String,
    #[schema(schema_with = JoinPath::schema)]
    pub join_path: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UsageBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = FactId::<128>::schema)]
    pub agent_id: Option<String>,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub dedup_key: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<128>::schema)]
    pub model: Option<String>,
    #[schema(schema_with = Instant::schema)]
    pub at: String,
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub input: u64,
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub output: u64,
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_read: u64,
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_write_5m: u64,
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_write_1h: u64,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_length = 64, nullable = false)]
    pub service_tier: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_length = 64, nullable = false)]
    pub speed: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_length = 64, nullable = false)]
    pub inference_geo: Option<String>,
    #[serde(default)]
    pub sidechain: bool,
    /// Reasoning tokens, already inside `output`.
    #[serde(default)]
    #[schema(maximum = 1_000_000_000_000u64)]
    pub reasoning: u64,
    /// Server-side web searches, billed per call.
    #[serde(default)]
    #[schema(maximum = 1_000_000)]
    pub web_search_requests: u64,
    /// Server-side web fetches, billed per call.
    #[serde(default)]
    #[schema(maximum = 1_000_000)]
    pub web_fetch_requests: u64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeliveryBody {
    #[schema(schema_with = ContractUuid::schema)]
    pub delivery_id: String,
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[schema(max_length = 64, pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub event: String,
    #[schema(schema_with = Instant::schema)]
    pub observed_at: String,
}

impl UploadBody {
    fn into_proto(self) -> Result<proto::UploadBatchRequest, HttpError> {
        Ok(proto::UploadBatchRequest {
            host_id: self.host_id,
            hostname: self.hostname,
            client_version: self.client_version,
            sessions: self
                .sessions
                .into_iter()
                .map(|s| {
                    Ok(proto::SessionFact {
                        first_activity_at: optional_instant(
                            "firstActivityAt",
                            s.first_activity_at.as_deref(),
                        )?,
                        last_activity_at: optional_instant(
                            "lastActivityAt",
                            s.last_activity_at.as_deref(),
                        )?,
                        agent: s.agent,
                        session_id: s.session_id,
                        project_slug: s.project_slug,
                        client_versions: s.client_versions,
                        output_under_reported: s.output_under_reported,
                    })
                })
                .collect::<Result<_, HttpError>>()?,
            agents: self
                .agents
                .into_iter()
                .map(|a| {
                    Ok(proto::AgentFact {
                        first_activity_at: optional_instant(
                            "firstActivityAt",
                            a.first_activity_at.as_deref(),
                        )?,
                        last_activity_at: optional_instant(
                            "lastActivityAt",
                            a.last_activity_at.as_deref(),
                        )?,
                        ended_at: optional_instant("endedAt", a.ended_at.as_deref())?,
                        agent: a.agent,
                        session_id: a.session_id,
                        agent_id: a.agent_id,
                        kind: a.kind,
                        parent_agent_id: a.parent_agent_id,
                        subagent_type: a.subagent_type,
                        spawn_tool: a.spawn_tool,
                        model: a.model,
                        ended: a.ended,
                    })
                })
                .collect::<Result<_, HttpError>>()?,
            edges: self
                .edges
                .into_iter()
                .map(|e| proto::EdgeFact {
                    agent: e.agent,
                    session_id: e.session_id,
                    parent_agent_id: e.parent_agent_id,
                    child_agent_id: e.child_agent_id,
                    join_path: e.join_path,
                })
                .collect(),
            usage: self
                .usage
                .into_iter()
                .map(|u| {
                    Ok(proto::UsageFact {
                        at: Some(instant("at", &u.at)?),
                        agent: u.agent,
                        session_id: u.session_id,
                        agent_id: u.agent_id,
                        dedup_key: u.dedup_key,
                        model: u.model,
                        input: u.input,
                        output: u.output,
                        cache_read: u.cache_read,
                        cache_write_5m: u.cache_write_5m,
                        cache_write_1h: u.cache_write_1h,
                        service_tier: u.service_tier,
                        speed: u.speed,
                        inference_geo: u.inference_geo,
                        sidechain: u.sidechain,
                        reasoning: u.reasoning,
                        web_search_requests: u.web_search_requests,
                        web_fetch_requests: u.web_fetch_requests,
                    })
                })
                .collect::<Result<_, HttpError>>()?,
            deliveries: self
                .deliveries
                .into_iter()
                .map(|d| {
                    Ok(proto::DeliveryFact {
                        observed_at: Some(instant("observedAt", &d.observed_at)?),
                        delivery_id: d.delivery_id,
                        agent: d.agent,
                        session_id: d.session_id,
                        event: d.event,
                    })
                })
                .collect::<Result<_, HttpError>>()?,
        })
    }
}

/// `POST /usage/batches` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadAnswer {
    pub sessions: u32,
    pub agents: u32,
    pub edges_inserted: u32,
    pub usage_inserted: u32,
    pub usage_replaced: u32,
    pub usage_unchanged: u32,
    pub deliveries_inserted: u32,
    pub deliveries_duplicate: u32,
}

/// Upload one host's session, agent, edge, usage and delivery facts
///
/// Identifiers and counts only; idempotent. `Content-Encoding: gzip|zstd` accepted, 415 for
/// any other; the 8 MiB limit applies after decoding.
#[utoipa::path(
    post,
    path = "/api/v1/usage/batches",
    tag = "usage",
    operation_id = "uploadUsageBatch",
    request_body(content = UploadBody, example = json!({
        "hostId": "host-example", "clientVersion": "0.1.0",
        "sessions": [{"agent": "claude-code", "sessionId": "openapi-usage",
            "projectSlug": "-home-me-repo", "clientVersions": ["2.1.100"],
            "firstActivityAt": "2026-01-05T10:00:00Z", "lastActivityAt": "2026-01-05T10:20:00Z"}],
        "agents": [{"agent": "claude-code", "sessionId": "openapi-usage", "agentId": "a1",
            "kind": "subagent", "subagentType": "Explore", "spawnTool": "Task",
            "model": "claude-haiku-4-5", "lastActivityAt": "2026-01-05T10:10:00Z"}],
        "edges": [{"agent": "claude-code", "sessionId": "openapi-usage", "childAgentId": "a1",
            "joinPath": "tool_result"}],
        "usage": [{"agent": "claude-code", "sessionId": "openapi-usage",
            "dedupKey": "msg_1:req_1", "model": "claude-opus-4-5",
            "at": "2026-01-05T10:01:00Z", "input": 1000, "output": 50, "cacheRead": 200,
            "reasoning": 20, "webSearchRequests": 2}],
        "deliveries": [{"deliveryId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7b",
            "agent": "claude-code", "sessionId": "openapi-usage", "event": "UserPromptSubmit",
            "observedAt": "2026-01-05T10:00:00Z"}]
    })),
    responses(
        (status = 200, description = "success", body = UploadAnswer),
        errors::NotFound,
        errors::UnsupportedMediaType,
    ),
)]
pub async fn upload(
    State(state): State<AppState>,
    Caller(call): Caller,
    member: Member,
    request: Request,
) -> HttpResult<Json<UploadAnswer>> {
    let bytes = usage_body::read(request, state.usage_body_limit).await?;
    let body: UploadBody = strict::parse_body(&bytes)?;
    let message = body.into_proto()?;
    let done = state
        .usage
        .clone()
        .upload_batch(member.request(&state, &call, message))
        .await?
        .into_inner();
    Ok(Json(UploadAnswer {
        sessions: done.sessions,
        agents: done.agents,
        edges_inserted: done.edges_inserted,
        usage_inserted: done.usage_inserted,
        usage_replaced: done.usage_replaced,
        usage_unchanged: done.usage_unchanged,
        deliveries_inserted: done.deliveries_inserted,
        deliveries_duplicate: done.deliveries_duplicate,
    }))
}
