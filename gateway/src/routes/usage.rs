//! The usage context's reads: `GET /usage`, `GET /usage/sessions` and
//! `GET /agent-sessions/{sessionRunId}/tree` (the upload is [`super::usage_upload`]). Answers
//! are the camelCase JSON of `baton.usage.v1`, timestamps as RFC 3339 strings.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_proto::registry::v1 as registry;
use baton_proto::usage::v1 as proto;

use crate::api_schema::enums::RunawayFilter;
use crate::api_schema::enums::{AgentKind, AgentStatus, AlwaysTrue, GroupBy, JoinPath};
use crate::api_schema::text::{Agent, ContractUuid, FactId, Identifier, Instant, Timestamp};
use crate::api_schema::{Nullable, errors};
use crate::csv_export;
use crate::path_ids::RunIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::sessions::run_session;
use crate::routes::usage_answers::{FiguresAnswer, QueryAnswer, SessionAnswer, figures, session};
use crate::routes::{optional_instant, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{self, NoQuery};

pub(crate) use crate::routes::usage_answers::query_answer;

/// Tokens by kind, cost and unpriced tokens by model, grouped
///
/// In [from, to) (default: the last 30 days, at most 400), grouped by `groupBy` (default
/// `day`, cut in `timezone`). CSV when the caller prefers it: one header row, then one row
/// per group.
#[utoipa::path(
    get,
    path = "/api/v1/usage",
    tag = "usage",
    operation_id = "queryUsage",
    params(
        ("from" = inline(Option<Instant>), Query),
        ("to" = inline(Option<Instant>), Query),
        ("groupBy" = inline(Option<GroupBy>), Query),
        ("timezone" = Option<String>, Query, max_length = 64,
            description = "An IANA zone; UTC by default."),
    ),
    responses(
        (status = 200, description = "success",
            content((QueryAnswer = "application/json"), (String = "text/csv"))),
        errors::InvalidInput,
    ),
)]
pub async fn query(
    State(state): State<AppState>,
    Caller(call): Caller,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> HttpResult<Response> {
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
    let answer = rpc!(state.usage.query_usage(&call, request))?;
    let answer = query_answer(answer);
    if csv_export::wants_csv(&headers) {
        let name = format!("baton-usage-by-{}.csv", answer.group_by);
        return Ok(csv_export::response(
            csv_export::usage_csv(&answer),
            &name,
            None,
        ));
    }
    Ok(Json(answer).into_response())
}

/// `GET /usage/sessions` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsAnswer {
    #[schema(max_items = 200)]
    pub sessions: Vec<SessionAnswer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub next_cursor: Option<String>,
}

/// Sessions by their last activity, newest first, with their figures
///
/// Those whose last activity is in [from, to), keyset-paged by the opaque `nextCursor` (a
/// malformed cursor is 400). CSV when the caller prefers it: one header row, then one row per
/// session, the next page in a `Link` header.
#[utoipa::path(
    get,
    path = "/api/v1/usage/sessions",
    tag = "usage",
    operation_id = "listUsageSessions",
    params(
        ("from" = inline(Option<Instant>), Query),
        ("to" = inline(Option<Instant>), Query),
        ("project" = inline(Option<Identifier<256>>), Query),
        ("agent" = inline(Option<Agent>), Query),
        ("hostId" = inline(Option<FactId<128>>), Query),
        ("member" = Option<String>, Query, max_length = 64,
            description = "A member's sessions; `unattributed`: those no member uploaded."),
        ("runaway" = inline(Option<RunawayFilter>), Query),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 200),
        ("cursor" = Option<String>, Query, max_length = 2048),
    ),
    responses(
        (status = 200, description = "success",
            content((SessionsAnswer = "application/json"), (String = "text/csv")),
            headers(("Link" = String,
                description = "The next page when `Accept: text/csv` (RFC 8288), `<…>; rel=\"next\"`"))),
        errors::InvalidInput,
    ),
)]
pub async fn sessions(
    State(state): State<AppState>,
    Caller(call): Caller,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> HttpResult<Response> {
    let pairs = strict::query_pairs(query.as_deref())?;
    strict::only_keys(
        &pairs,
        &[
            "from", "to", "project", "agent", "hostId", "member", "runaway", "limit", "cursor",
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
        // The API's listing stays newest activity first (its contract).
        order: proto::SessionOrder::LastActivity.into(),
        member: get("member").map(str::to_string),
        runaway: match get("runaway") {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(HttpError::new(
                    ErrorCode::InvalidInput,
                    "runaway must be true or false",
                ));
            }
        },
    };
    let answer = rpc!(state.usage.list_sessions(&call, request))?;
    let sessions: Vec<SessionAnswer> = answer.sessions.into_iter().map(session).collect();
    if csv_export::wants_csv(&headers) {
        let next = answer.next_cursor.map(|cursor| {
            let mut link = url::form_urlencoded::Serializer::new(String::new());
            for (key, value) in pairs.iter().filter(|(key, _)| key != "cursor") {
                link.append_pair(key, value);
            }
            link.append_pair("cursor", &cursor);
            format!("/api/v1/usage/sessions?{}", link.finish())
        });
        return Ok(csv_export::response(
            csv_export::sessions_csv(&sessions),
            "baton-sessions.csv",
            next,
        ));
    }
    Ok(Json(SessionsAnswer {
        sessions,
        next_cursor: answer.next_cursor,
    })
    .into_response())
}

/// An agent of a run's tree, with its own and its subtree's figures.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeAgentAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub agent_id: Option<String>,
    #[schema(schema_with = AgentKind::schema)]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub parent_agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub subagent_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub spawn_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub model: Option<String>,
    #[schema(schema_with = AgentStatus::schema)]
    pub status: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub first_activity_at: Option<String>,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub last_activity_at: Option<String>,
    pub own: FiguresAnswer,
    pub rolled_up: FiguresAnswer,
}

/// A parent-child edge of the tree, with the join path that proved it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeEdgeAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub parent_agent_id: Option<String>,
    pub child_agent_id: String,
    #[schema(schema_with = JoinPath::schema)]
    pub join_path: String,
}

/// What delegating to subagents saved, against running their work on the main agent's model.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SavingsAnswer {
    #[schema(minimum = 0.0)]
    pub actual_usd: f64,
    #[schema(minimum = 0.0)]
    pub counterfactual_usd: f64,
    pub savings_usd: f64,
    #[schema(schema_with = AlwaysTrue::schema)]
    pub is_estimate: bool,
    pub skipped_agent_ids: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counterfactual_model: Option<String>,
}

/// `GET /agent-sessions/{sessionRunId}/tree` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    pub session: SessionAnswer,
    #[schema(inline)]
    pub agents: Vec<TreeAgentAnswer>,
    #[schema(inline)]
    pub edges: Vec<TreeEdgeAnswer>,
    #[schema(inline)]
    pub delegation_savings: SavingsAnswer,
}

/// A run's agent tree
///
/// Agents with status, own and rolled-up figures, edges with the join path that proved them,
/// and delegation savings (always an estimate). Registry names the run's natural key; a run
/// with nothing uploaded answers its empty tree.
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}/tree",
    tag = "usage",
    operation_id = "getAgentTree",
    params(("sessionRunId" = inline(ContractUuid), Path,
        example = "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a",
        description = "Malformed ids are 400; unknown and other tenants' runs are 404. A run \
            with nothing uploaded answers its empty tree.")),
    responses(
        (status = 200, description = "success", body = TreeAnswer),
        errors::InvalidInput,
        errors::NotFound,
    ),
)]
pub async fn tree(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    _: NoQuery,
) -> HttpResult<Json<TreeAnswer>> {
    let run = run_session(&state, &call, run_id).await?;
    let request = proto::GetTreeRequest {
        agent: run.agent.clone(),
        session_id: run.session_id.clone(),
    };
    let answer = match rpc!(state.usage.get_tree(&call, request)) {
        Ok(answer) => answer,
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
