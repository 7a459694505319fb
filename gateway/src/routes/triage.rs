//! The Stop handshake and its reads: `POST /agent-sessions/triage/begin|complete`,
//! `GET /agent-sessions/{sessionRunId}/triage-attempts` and `GET /prompts/debrief`
//! (CONTRACT sections 5, 6, 8 and 9).

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_proto::triage::v1 as proto;

use crate::api_schema::enums::{AttemptOutcome, BeginReason, TriageStatus};
use crate::api_schema::errors;
use crate::api_schema::text::{Agent, ContractUuid, Identifier, Scope, Timestamp};
use crate::path_ids::RunIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::sessions::unknown_run_is_invalid;
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{self, NoQuery, StrictJson};

/// `POST /agent-sessions/triage/begin` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BeginBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    /// A JSON integer 0..100000 (strings, null and fractions are refused).
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(maximum = 100000, nullable = false)]
    pub turn_count: Option<u32>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(nullable = false)]
    pub stop_hook_active: Option<bool>,
}

/// `POST /agent-sessions/triage/begin` answer; absent keys are omitted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeginAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    pub armed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = ContractUuid::schema)]
    pub attempt_id: Option<String>,
    #[schema(schema_with = TriageStatus::schema)]
    pub triage_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = BeginReason::schema)]
    pub reason: Option<String>,
}

/// `POST /agent-sessions/triage/complete` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompleteBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[schema(schema_with = ContractUuid::schema)]
    pub attempt_id: String,
}

/// `POST /agent-sessions/triage/complete` answer: counts only.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(schema_with = AttemptOutcome::schema)]
    pub triage_status: String,
    #[schema(maximum = 500)]
    pub event_count: u32,
    #[schema(maximum = 500)]
    pub since_begin_count: u32,
    pub truncated: bool,
}

/// One attempt of the log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptItem {
    #[schema(schema_with = ContractUuid::schema)]
    pub attempt_id: String,
    #[schema(schema_with = Timestamp::schema)]
    pub armed_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = Timestamp::schema)]
    pub finalized_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = AttemptOutcome::schema)]
    pub outcome: Option<String>,
}

/// `GET /agent-sessions/{id}/triage-attempts` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptsAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(inline, max_items = 50)]
    pub items: Vec<AttemptItem>,
    pub count: u32,
    pub truncated: bool,
}

/// `GET /prompts/debrief` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DebriefAnswer {
    #[schema(min_length = 1)]
    pub prompt: String,
}

/// May this turn end inject a debrief? (table F)
///
/// Arms at most one attempt at a time.
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/triage/begin",
    tag = "triage",
    operation_id = "beginTriage",
    request_body(content = BeginBody,
        example = json!({"agent": "claude-code", "sessionId": "doc-1", "turnCount": 3})),
    responses((status = 200, description = "success", body = BeginAnswer), errors::NotFound),
)]
pub async fn begin(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<BeginBody>,
) -> HttpResult<Json<BeginAnswer>> {
    let request = proto::BeginRequest {
        agent: body.agent,
        session_id: body.session_id,
        turn_count: body.turn_count,
        stop_hook_active: body.stop_hook_active.unwrap_or(false),
    };
    let began = rpc!(state.triage.begin(&call, request))?;
    Ok(Json(BeginAnswer {
        session_run_id: began.session_run_id,
        armed: began.armed,
        attempt_id: began.attempt_id,
        triage_status: began.triage_status,
        reason: began.reason,
    }))
}

/// Absorb an armed attempt's writes (table G)
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/triage/complete",
    tag = "triage",
    operation_id = "completeTriage",
    request_body(content = CompleteBody, example = json!({"agent": "claude-code",
        "sessionId": "doc-1", "attemptId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"})),
    responses(
        (status = 200, description = "success", body = CompleteAnswer),
        errors::NotFound,
        errors::Conflict,
    ),
)]
pub async fn complete(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<CompleteBody>,
) -> HttpResult<Json<CompleteAnswer>> {
    let request = proto::CompleteRequest {
        agent: body.agent,
        session_id: body.session_id,
        attempt_id: body.attempt_id,
    };
    let completed = rpc!(state.triage.complete(&call, request))?;
    Ok(Json(CompleteAnswer {
        session_run_id: completed.session_run_id,
        triage_status: completed.triage_status,
        event_count: completed.event_count,
        since_begin_count: completed.since_begin_count,
        truncated: completed.truncated,
    }))
}

/// A run's attempt log, oldest first, the newest 50 kept
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}/triage-attempts",
    tag = "triage",
    operation_id = "listTriageAttempts",
    params(RunIdPath),
    responses(
        (status = 200, description = "success", body = AttemptsAnswer),
        errors::InvalidInput,
    ),
)]
pub async fn attempts(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    _: NoQuery,
) -> HttpResult<Json<AttemptsAnswer>> {
    let log = rpc!(state.triage.list_attempts(
        &call,
        proto::ListAttemptsRequest {
            session_run_id: run_id,
        },
    ))
    .map_err(|status| unknown_run_is_invalid(status.into()))?;
    let items: Vec<AttemptItem> = log
        .items
        .into_iter()
        .map(|item| AttemptItem {
            armed_at: iso_of(item.armed_at.as_ref()),
            finalized_at: optional_iso(item.finalized_at.as_ref()),
            attempt_id: item.attempt_id,
            outcome: item.outcome,
        })
        .collect();
    Ok(Json(AttemptsAnswer {
        session_run_id: log.session_run_id,
        truncated: log.count as usize > items.len(),
        count: log.count,
        items,
    }))
}

/// The debrief prompt; `agent` and `sessionId` go together
///
/// Baton's instructions plus the session's facets and briefed rows as one fenced JSON data
/// block. A read: never refreshes a lease.
#[utoipa::path(
    get,
    path = "/api/v1/prompts/debrief",
    tag = "triage",
    operation_id = "getDebriefPrompt",
    params(
        ("scope" = inline(Option<Scope>), Query),
        ("project" = inline(Option<Identifier<256>>), Query),
        ("agent" = inline(Option<Agent>), Query),
        ("sessionId" = inline(Option<Identifier<256>>), Query),
    ),
    responses(
        (status = 200, description = "success", body = DebriefAnswer),
        errors::InvalidInput,
        errors::NotFound,
    ),
)]
pub async fn debrief(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<DebriefAnswer>> {
    let pairs = strict::query_pairs(query.as_deref())?;
    strict::only_keys(&pairs, &["scope", "project", "agent", "sessionId"])?;
    let get = |key: &str| strict::single(&pairs, key).map(str::to_string);
    let (agent, session_id) = (get("agent"), get("sessionId"));
    if agent.is_some() != session_id.is_some() {
        return Err(HttpError::new(
            ErrorCode::InvalidInput,
            "agent and sessionId go together",
        ));
    }
    let request = proto::RenderDebriefRequest {
        scope: get("scope"),
        project: get("project"),
        agent,
        session_id,
    };
    let rendered = rpc!(state.triage.render_debrief(&call, request))?;
    Ok(Json(DebriefAnswer {
        prompt: rendered.prompt,
    }))
}
