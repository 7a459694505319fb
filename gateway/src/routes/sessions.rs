//! `/api/v1/agent-sessions`: open, heartbeat, close and the row read (CONTRACT sections 2–4
//! and 8). Each handler parses strictly, forwards one RPC to registry and shapes the answer.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_kit::grpc::OutboundCall;
use baton_kit::selector::Selector;
use baton_proto::common::v1 as common;
use baton_proto::registry::v1 as proto;

use crate::api_schema::enums::TriageStatus;
use crate::api_schema::errors;
use crate::api_schema::selector::{SelectorAnswer, SelectorBody};
use crate::api_schema::text::{Agent, ContractUuid, Identifier, Scope, Timestamp};
use crate::api_schema::{Nullable, text};
use crate::path_ids::RunIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller, Member};
use crate::strict::{self, NoQuery, StrictJson};

/// `source` of an open: `compact` and `clear` are not sources (400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionSource {
    Startup,
    Resume,
}

impl SessionSource {
    fn to_proto(self) -> proto::Source {
        match self {
            SessionSource::Startup => proto::Source::Startup,
            SessionSource::Resume => proto::Source::Resume,
        }
    }

    fn from_proto(value: i32) -> SessionSource {
        match proto::Source::try_from(value) {
            Ok(proto::Source::Resume) => SessionSource::Resume,
            _ => SessionSource::Startup,
        }
    }
}

/// A commitment the agent was shown: `{id, topic, status}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BriefedRow {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub topic: String,
    #[schema(schema_with = Identifier::<64>::schema)]
    pub status: String,
}

/// `POST /agent-sessions/open` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OpenBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    #[schema(inline)]
    pub source: SessionSource,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<256>::schema)]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Scope::schema)]
    pub scope: Option<String>,
    /// Defaults to `{"kind":"all"}`.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(value_type = Option<SelectorBody>, nullable = false)]
    pub selector: Option<Selector>,
    /// Present (even `[]`) stamps the briefing delivery; at most 100 rows.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_items = 100, nullable = false)]
    pub briefed_memories: Option<Vec<BriefedRow>>,
    /// Additive: the session this one follows in the same client process (after Claude
    /// Code's `/clear`), by its `sessionId` under the same agent. Recorded on insert only.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<256>::schema)]
    pub follows_session_id: Option<String>,
}

/// `POST /agent-sessions/open` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(minimum = 1)]
    pub activation_epoch: i64,
    #[schema(inline)]
    pub source: SessionSource,
    pub created: bool,
    pub reopened: bool,
    #[schema(schema_with = Timestamp::schema)]
    pub opened_at: String,
    #[schema(schema_with = Timestamp::schema)]
    pub last_seen_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub briefing_delivered_at: Option<String>,
}

/// `POST /agent-sessions/heartbeat` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HeartbeatBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    /// 1..4000 UTF-16 units, stored as sent.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = text::Prose::<4000>::schema)]
    pub last_message_excerpt: Option<String>,
    /// Additive: when the hook observed this heartbeat (RFC 3339), for a replay from its
    /// spool. Clamped to `[lastSeenAt, now]`; a replay from before the session's close changes
    /// nothing, and an old replay never makes a session read live now.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = text::Instant::schema)]
    pub observed_at: Option<String>,
}

/// `POST /agent-sessions/heartbeat` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(minimum = 1)]
    pub activation_epoch: i64,
    #[schema(schema_with = Timestamp::schema)]
    pub last_seen_at: String,
    pub resurrected: bool,
}

/// `POST /agent-sessions/close` body: the natural key, and for a replay when it was observed.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    /// Additive: when the hook observed the end (RFC 3339); `closedAt` becomes this instant
    /// clamped to `[lastSeenAt, now]`.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = text::Instant::schema)]
    pub observed_at: Option<String>,
}

/// `POST /agent-sessions/close` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(minimum = 1)]
    pub activation_epoch: i64,
    #[schema(schema_with = Timestamp::schema)]
    pub closed_at: String,
    pub already_closed: bool,
}

/// `GET /agent-sessions/{sessionRunId}` answer: never the excerpt or the watermark.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    pub agent: String,
    pub session_id: String,
    #[schema(inline)]
    pub source: SessionSource,
    #[schema(required = true)]
    pub project: Option<String>,
    #[schema(required = true)]
    pub scope: Option<String>,
    #[schema(value_type = SelectorAnswer)]
    pub selector: Selector,
    #[schema(minimum = 1)]
    pub activation_epoch: i64,
    /// The run's effective triage status (`idle` for a run triage has never handled).
    #[schema(schema_with = TriageStatus::schema)]
    pub triage_status: String,
    #[schema(schema_with = Timestamp::schema)]
    pub opened_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub closed_at: Option<String>,
    #[schema(schema_with = Timestamp::schema)]
    pub last_seen_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub briefing_delivered_at: Option<String>,
    #[schema(max_items = 100)]
    pub briefed_memories: Vec<BriefedRow>,
}

/// An optional `observedAt`: an RFC 3339 instant, else 400.
pub fn observed(text: Option<&str>) -> Result<Option<baton_proto::Timestamp>, HttpError> {
    text.map(|text| {
        baton_kit::clock::parse_instant(text)
            .map(baton_kit::clock::to_timestamp)
            .ok_or_else(|| {
                HttpError::new(
                    ErrorCode::InvalidInput,
                    "observedAt must be an RFC 3339 instant",
                )
            })
    })
    .transpose()
}

pub fn key(agent: String, session_id: String) -> Option<proto::SessionKey> {
    Some(proto::SessionKey { agent, session_id })
}

/// Open or reactivate a session (CONTRACT table A)
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/open",
    tag = "sessions",
    operation_id = "openSession",
    request_body(content = OpenBody, example = json!({"agent": "claude-code",
        "sessionId": "doc-1", "source": "startup", "project": "baton", "scope": "work"})),
    responses((status = 200, description = "success", body = OpenAnswer), errors::Conflict),
)]
pub async fn open(
    State(state): State<AppState>,
    Caller(call): Caller,
    member: Member,
    StrictJson(body): StrictJson<OpenBody>,
) -> HttpResult<Json<OpenAnswer>> {
    let request = proto::OpenRequest {
        key: key(body.agent, body.session_id),
        source: body.source.to_proto().into(),
        project: body.project,
        scope: body.scope,
        selector: body.selector.map(|selector| selector.to_proto()),
        briefed_memories: body.briefed_memories.map(|rows| proto::BriefedMemories {
            items: rows
                .into_iter()
                .map(|row| common::BriefedMemory {
                    id: row.id,
                    topic: row.topic,
                    status: row.status,
                })
                .collect(),
        }),
        follows_session_id: body.follows_session_id,
    };
    let answer = state
        .registry
        .clone()
        .open(member.request(&state, &call, request))
        .await?
        .into_inner();
    Ok(Json(OpenAnswer {
        session_run_id: answer.session_run_id,
        activation_epoch: answer.activation_epoch,
        source: body.source,
        created: answer.created,
        reopened: answer.reopened,
        opened_at: iso_of(answer.opened_at.as_ref()),
        last_seen_at: iso_of(answer.last_seen_at.as_ref()),
        briefing_delivered_at: optional_iso(answer.briefing_delivered_at.as_ref()),
    }))
}

/// Refresh the lease; resurrects a closed or expired session (CONTRACT table B)
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/heartbeat",
    tag = "sessions",
    operation_id = "heartbeatSession",
    request_body(content = HeartbeatBody, example = json!({"agent": "claude-code",
        "sessionId": "doc-1", "lastMessageExcerpt": "tests pass"})),
    responses((status = 200, description = "success", body = HeartbeatAnswer), errors::NotFound),
)]
pub async fn heartbeat(
    State(state): State<AppState>,
    Caller(call): Caller,
    member: Member,
    StrictJson(body): StrictJson<HeartbeatBody>,
) -> HttpResult<Json<HeartbeatAnswer>> {
    let request = proto::HeartbeatRequest {
        key: key(body.agent, body.session_id),
        last_message_excerpt: body.last_message_excerpt,
        observed_at: observed(body.observed_at.as_deref())?,
    };
    let answer = state
        .registry
        .clone()
        .heartbeat(member.request(&state, &call, request))
        .await?
        .into_inner();
    Ok(Json(HeartbeatAnswer {
        session_run_id: answer.session_run_id,
        activation_epoch: answer.activation_epoch,
        last_seen_at: iso_of(answer.last_seen_at.as_ref()),
        resurrected: answer.resurrected,
    }))
}

/// Close by natural key; idempotent (CONTRACT table C)
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/close",
    tag = "sessions",
    operation_id = "closeSession",
    request_body(content = CloseBody,
        example = json!({"agent": "claude-code", "sessionId": "doc-1"})),
    responses((status = 200, description = "success", body = CloseAnswer), errors::NotFound),
)]
pub async fn close(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<CloseBody>,
) -> HttpResult<Json<CloseAnswer>> {
    let request = proto::CloseRequest {
        key: key(body.agent, body.session_id),
        observed_at: observed(body.observed_at.as_deref())?,
    };
    let answer = rpc!(state.registry.close(&call, request))?;
    Ok(Json(CloseAnswer {
        session_run_id: answer.session_run_id,
        activation_epoch: answer.activation_epoch,
        closed_at: iso_of(answer.closed_at.as_ref()),
        already_closed: answer.already_closed,
    }))
}

/// Maps "no such run" to the 400 the contract answers for unknown and foreign run ids.
pub fn unknown_run_is_invalid(error: HttpError) -> HttpError {
    if error.code == ErrorCode::NotFound {
        HttpError::new(ErrorCode::InvalidInput, "unknown sessionRunId")
    } else {
        error
    }
}

/// Run `run_id`'s session as registry reads it (never refreshing the lease); an answer without
/// one is a 500.
pub async fn run_session(
    state: &AppState,
    call: &OutboundCall,
    run_id: String,
) -> HttpResult<proto::Session> {
    let request = proto::GetSessionRequest {
        lookup: Some(proto::get_session_request::Lookup::SessionRunId(run_id)),
    };
    rpc!(state.registry.get_session(call, request))?
        .session
        .ok_or_else(|| HttpError::new(ErrorCode::Internal, "registry answered no session"))
}

/// Read one session row; never refreshes the lease (CONTRACT section 8)
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}",
    tag = "sessions",
    operation_id = "getSession",
    params(RunIdPath),
    responses((status = 200, description = "success", body = SessionRow), errors::InvalidInput),
)]
pub async fn row(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    _: NoQuery,
) -> HttpResult<Json<SessionRow>> {
    let session = run_session(&state, &call, run_id)
        .await
        .map_err(unknown_run_is_invalid)?;
    let selector = Selector::from_proto(session.selector.clone())?;
    let triage_status = rpc!(state.triage.get_state(
        &call,
        baton_proto::triage::v1::GetStateRequest {
            session_run_id: session.session_run_id.clone(),
        },
    ))?
    .triage_status;
    Ok(Json(SessionRow {
        session_run_id: session.session_run_id,
        agent: session.agent,
        session_id: session.session_id,
        source: SessionSource::from_proto(session.source),
        project: session.project,
        scope: session.scope,
        selector,
        activation_epoch: session.activation_epoch,
        triage_status,
        opened_at: iso_of(session.opened_at.as_ref()),
        closed_at: optional_iso(session.closed_at.as_ref()),
        last_seen_at: iso_of(session.last_seen_at.as_ref()),
        briefing_delivered_at: optional_iso(session.briefing_delivered_at.as_ref()),
        briefed_memories: session
            .briefed_memories
            .into_iter()
            .map(|row| BriefedRow {
                id: row.id,
                topic: row.topic,
                status: row.status,
            })
            .collect(),
    }))
}
