//! The usage context's routes: `POST /usage/batches`, `GET /usage`, `GET /usage/sessions` and
//! `GET /agent-sessions/{sessionRunId}/tree`. Bodies and answers are the camelCase JSON of
//! `baton.usage.v1` (timestamps as RFC 3339 strings); every body is strict (an unknown key
//! such as `prompt`, `message` or `content` is 400) and identifiers and counts are all an
//! upload can carry.

use axum::Json;
use axum::extract::{RawQuery, Request, State};
use serde::{Deserialize, Serialize};

use baton_kit::clock::{parse_instant, to_timestamp};
use baton_kit::error::ErrorCode;
use baton_proto::Timestamp;
use baton_proto::registry::v1 as registry;
use baton_proto::usage::v1 as proto;

use crate::path_ids::RunIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso, usage_body};
use crate::state::{AppState, Caller};
use crate::strict;

fn instant(field: &str, text: &str) -> Result<Timestamp, HttpError> {
    parse_instant(text).map(to_timestamp).ok_or_else(|| {
        HttpError::new(
            ErrorCode::InvalidInput,
            format!("{field} must be an RFC 3339 instant"),
        )
    })
}

fn optional_instant(field: &str, text: Option<&str>) -> Result<Option<Timestamp>, HttpError> {
    text.map(|text| instant(field, text)).transpose()
}

/// `POST /usage/batches` body: an `UploadBatchRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadBody {
    pub host_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub hostname: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub client_version: Option<String>,
    #[serde(default)]
    pub sessions: Vec<SessionBody>,
    #[serde(default)]
    pub agents: Vec<AgentBody>,
    #[serde(default)]
    pub edges: Vec<EdgeBody>,
    #[serde(default)]
    pub usage: Vec<UsageBody>,
    #[serde(default)]
    pub deliveries: Vec<DeliveryBody>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionBody {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    #[serde(default)]
    pub client_versions: Vec<String>,
    #[serde(default)]
    pub output_under_reported: bool,
    #[serde(default, deserialize_with = "strict::present")]
    pub first_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub last_activity_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentBody {
    pub agent: String,
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub agent_id: Option<String>,
    pub kind: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub parent_agent_id: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub subagent_type: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub spawn_tool: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub model: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub first_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub last_activity_at: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub ended: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub ended_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EdgeBody {
    pub agent: String,
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub parent_agent_id: Option<String>,
    pub child_agent_id: String,
    pub join_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UsageBody {
    pub agent: String,
    pub session_id: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub agent_id: Option<String>,
    pub dedup_key: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub model: Option<String>,
    pub at: String,
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write_5m: u64,
    #[serde(default)]
    pub cache_write_1h: u64,
    #[serde(default, deserialize_with = "strict::present")]
    pub service_tier: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub speed: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub inference_geo: Option<String>,
    #[serde(default)]
    pub sidechain: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeliveryBody {
    pub delivery_id: String,
    pub agent: String,
    pub session_id: String,
    pub event: String,
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
#[derive(Debug, Serialize)]
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

/// One host's facts (API key; strict body; 8 MiB after decoding; gzip or zstd accepted).
pub async fn upload(
    State(state): State<AppState>,
    Caller(call): Caller,
    request: Request,
) -> HttpResult<Json<UploadAnswer>> {
    let bytes = usage_body::read(request, state.usage_body_limit).await?;
    let body: UploadBody = strict::parse_body(&bytes)?;
    let message = body.into_proto()?;
    let done = state
        .usage
        .clone()
        .upload_batch(state.outbound.request(&call, message))
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

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokensAnswer {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub total: u64,
}

#[derive(Debug, Serialize)]
pub struct UnpricedAnswer {
    pub model: String,
    pub tokens: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FiguresAnswer {
    pub tokens: TokensAnswer,
    pub cost_usd: f64,
    pub unpriced_tokens: u64,
    pub unpriced: Vec<UnpricedAnswer>,
    pub requests: u64,
}

fn figures(figures: Option<proto::Figures>) -> FiguresAnswer {
    let figures = figures.unwrap_or_default();
    let tokens = figures.tokens.unwrap_or_default();
    FiguresAnswer {
        tokens: TokensAnswer {
            input: tokens.input,
            output: tokens.output,
            cache_read: tokens.cache_read,
            cache_write_5m: tokens.cache_write_5m,
            cache_write_1h: tokens.cache_write_1h,
            total: tokens.total,
        },
        cost_usd: figures.cost_usd,
        unpriced_tokens: figures.unpriced_tokens,
        unpriced: figures
            .unpriced
            .into_iter()
            .map(|m| UnpricedAnswer {
                model: m.model,
                tokens: m.tokens,
            })
            .collect(),
        requests: figures.requests,
    }
}

#[derive(Debug, Serialize)]
pub struct GroupAnswer {
    pub key: String,
    pub figures: FiguresAnswer,
}

/// `GET /usage` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAnswer {
    pub group_by: String,
    pub timezone: String,
    pub from: String,
    pub to: String,
    pub groups: Vec<GroupAnswer>,
    pub total: FiguresAnswer,
}

/// Tokens and cost in `[from, to)` grouped by `groupBy` (default `day`), days cut in
/// `timezone`.
pub async fn query(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<QueryAnswer>> {
    let pairs = strict::query_pairs(query.as_deref())?;
    strict::only_keys(&pairs, &["from", "to", "groupBy", "timezone"])?;
    let get = |key: &str| strict::single(&pairs, key);
    let request = proto::QueryUsageRequest {
        from: optional_instant("from", get("from"))?,
        to: optional_instant("to", get("to"))?,
        group_by: get("groupBy").unwrap_or("day").to_string(),
        timezone: get("timezone").map(str::to_string),
        split_by_model: false,
    };
    let answer = state
        .usage
        .clone()
        .query_usage(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(QueryAnswer {
        group_by: answer.group_by,
        timezone: answer.timezone,
        from: iso_of(answer.from.as_ref()),
        to: iso_of(answer.to.as_ref()),
        groups: answer
            .groups
            .into_iter()
            .map(|group| GroupAnswer {
                key: group.key,
                figures: figures(group.figures),
            })
            .collect(),
        total: figures(answer.total),
    }))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAnswer {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    pub host_ids: Vec<String>,
    pub client_versions: Vec<String>,
    pub output_under_reported: bool,
    pub first_activity_at: Option<String>,
    pub last_activity_at: Option<String>,
    pub agent_count: u32,
    pub figures: FiguresAnswer,
}

fn session(summary: proto::SessionSummary) -> SessionAnswer {
    SessionAnswer {
        first_activity_at: optional_iso(summary.first_activity_at.as_ref()),
        last_activity_at: optional_iso(summary.last_activity_at.as_ref()),
        agent: summary.agent,
        session_id: summary.session_id,
        project_slug: summary.project_slug,
        host_ids: summary.host_ids,
        client_versions: summary.client_versions,
        output_under_reported: summary.output_under_reported,
        agent_count: summary.agent_count,
        figures: figures(summary.figures),
    }
}

/// `GET /usage/sessions` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsAnswer {
    pub sessions: Vec<SessionAnswer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Sessions by newest activity, keyset-paged.
pub async fn sessions(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<SessionsAnswer>> {
    let pairs = strict::query_pairs(query.as_deref())?;
    strict::only_keys(
        &pairs,
        &[
            "from", "to", "project", "agent", "hostId", "limit", "cursor",
        ],
    )?;
    let get = |key: &str| strict::single(&pairs, key);
    let request = proto::ListSessionsRequest {
        from: optional_instant("from", get("from"))?,
        to: optional_instant("to", get("to"))?,
        project: get("project").map(str::to_string),
        agent: get("agent").map(str::to_string),
        host_id: get("hostId").map(str::to_string),
        limit: get("limit")
            .map(|text| strict::strict_integer("limit", text))
            .transpose()?,
        cursor: get("cursor").map(str::to_string),
    };
    let answer = state
        .usage
        .clone()
        .list_sessions(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(SessionsAnswer {
        sessions: answer.sessions.into_iter().map(session).collect(),
        next_cursor: answer.next_cursor,
    }))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeAgentAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub status: String,
    pub first_activity_at: Option<String>,
    pub last_activity_at: Option<String>,
    pub own: FiguresAnswer,
    pub rolled_up: FiguresAnswer,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeEdgeAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    pub child_agent_id: String,
    pub join_path: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavingsAnswer {
    pub actual_usd: f64,
    pub counterfactual_usd: f64,
    pub savings_usd: f64,
    pub is_estimate: bool,
    pub skipped_agent_ids: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counterfactual_model: Option<String>,
}

/// `GET /agent-sessions/{sessionRunId}/tree` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeAnswer {
    pub session_run_id: String,
    pub session: SessionAnswer,
    pub agents: Vec<TreeAgentAnswer>,
    pub edges: Vec<TreeEdgeAnswer>,
    pub delegation_savings: SavingsAnswer,
}

/// A run's agent tree: registry names the run's natural key (an unknown or foreign run is
/// 404); a run with nothing uploaded answers its empty tree.
pub async fn tree(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<TreeAnswer>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let lookup = registry::GetSessionRequest {
        lookup: Some(registry::get_session_request::Lookup::SessionRunId(
            run_id.clone(),
        )),
    };
    let run = state
        .registry
        .clone()
        .get_session(state.outbound.request(&call, lookup))
        .await?
        .into_inner()
        .session
        .ok_or_else(|| HttpError::new(ErrorCode::Internal, "registry answered no session"))?;
    let request = proto::GetTreeRequest {
        agent: run.agent.clone(),
        session_id: run.session_id.clone(),
    };
    let answer = match state
        .usage
        .clone()
        .get_tree(state.outbound.request(&call, request))
        .await
    {
        Ok(answer) => answer.into_inner(),
        Err(status) if ErrorCode::from_status(&status) == ErrorCode::NotFound => empty_tree(&run),
        Err(status) => return Err(status.into()),
    };
    let savings = answer.delegation_savings.unwrap_or_default();
    Ok(Json(TreeAnswer {
        session_run_id: run.session_run_id,
        session: session(answer.session.unwrap_or_default()),
        agents: answer
            .agents
            .into_iter()
            .map(|agent| TreeAgentAnswer {
                first_activity_at: optional_iso(agent.first_activity_at.as_ref()),
                last_activity_at: optional_iso(agent.last_activity_at.as_ref()),
                agent_id: agent.agent_id,
                kind: agent.kind,
                parent_agent_id: agent.parent_agent_id,
                subagent_type: agent.subagent_type,
                spawn_tool: agent.spawn_tool,
                model: agent.model,
                status: agent.status,
                own: figures(agent.own),
                rolled_up: figures(agent.rolled_up),
            })
            .collect(),
        edges: answer
            .edges
            .into_iter()
            .map(|edge| TreeEdgeAnswer {
                parent_agent_id: edge.parent_agent_id,
                child_agent_id: edge.child_agent_id,
                join_path: edge.join_path,
            })
            .collect(),
        delegation_savings: SavingsAnswer {
            actual_usd: savings.actual_usd,
            counterfactual_usd: savings.counterfactual_usd,
            savings_usd: savings.savings_usd,
            is_estimate: true,
            skipped_agent_ids: savings.skipped_agent_ids,
            counterfactual_model: savings.counterfactual_model,
        },
    }))
}

/// The tree of a run nothing was uploaded for: its key, no agents, no figures.
fn empty_tree(run: &registry::Session) -> proto::GetTreeResponse {
    proto::GetTreeResponse {
        session: Some(proto::SessionSummary {
            agent: run.agent.clone(),
            session_id: run.session_id.clone(),
            project_slug: run.project.clone().unwrap_or_default(),
            ..proto::SessionSummary::default()
        }),
        agents: Vec::new(),
        edges: Vec::new(),
        delegation_savings: Some(proto::DelegationSavings {
            is_estimate: true,
            ..proto::DelegationSavings::default()
        }),
    }
}
