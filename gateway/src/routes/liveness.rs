//! Additive routes for the liveness sidecar (DESIGN section 5): `POST /agent-sessions/pulse`
//! records a process episode's pulse; `GET /agent-sessions/{sessionRunId}/liveness` reads the
//! derived state, the episodes and the session a `/clear` successor follows.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_proto::registry::v1 as proto;

use crate::api_schema::Nullable;
use crate::api_schema::enums::{EndReason, Liveness, Outcome};
use crate::api_schema::errors;
use crate::api_schema::text::{Agent, ContractUuid, Identifier, Instant, Timestamp, Token};
use crate::path_ids::RunIdPath;
use crate::response::HttpResult;
use crate::routes::sessions::{key, observed, unknown_run_is_invalid};
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller, Member};
use crate::strict::{self, NoQuery, StrictJson};

/// `POST /agent-sessions/pulse` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PulseBody {
    #[schema(schema_with = Agent::schema)]
    pub agent: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub session_id: String,
    /// Minted by the sidecar when it starts (uuid); one episode per session and process.
    #[schema(schema_with = ContractUuid::schema)]
    pub episode_id: String,
    /// The client process's kind, e.g. `claude-code`.
    #[schema(schema_with = Agent::schema)]
    pub client: String,
    /// Resolved from the client's executable.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Token::<64>::schema)]
    pub client_version: Option<String>,
    /// The client that really hosts the session (`cursor` running Claude Code hooks).
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Agent::schema)]
    pub host_client: Option<String>,
    /// An opaque, stable id of the machine (a digest, never a hostname).
    #[schema(schema_with = Token::<128>::schema)]
    pub host_id: String,
    #[schema(minimum = 1, maximum = 2147483647)]
    pub pid: u32,
    /// When the sidecar observed it (RFC 3339); at most now.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Instant::schema)]
    pub observed_at: Option<String>,
    /// The last pulse: `process_exited`, `session_closed` or `stopped`.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = EndReason::schema)]
    pub end_reason: Option<String>,
    /// A display label for the machine, sent only when its owner configured one
    /// (`BATON_HOOK_HOST_LABEL`); 1..255 characters, no control characters.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<255>::schema)]
    pub host_label: Option<String>,
}

/// `POST /agent-sessions/pulse` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PulseAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    /// `live`, `idle`, `disconnected` or `closed` after this pulse.
    #[schema(schema_with = Liveness::schema)]
    pub liveness: String,
}

/// One process episode.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EpisodeView {
    #[schema(schema_with = ContractUuid::schema)]
    pub episode_id: String,
    pub client: String,
    #[schema(required = true)]
    pub client_version: Option<String>,
    #[schema(required = true)]
    pub host_client: Option<String>,
    pub host_id: String,
    pub pid: u32,
    #[schema(schema_with = Timestamp::schema)]
    pub started_at: String,
    #[schema(schema_with = Timestamp::schema)]
    pub last_pulse_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub ended_at: Option<String>,
    #[schema(required = true)]
    pub end_reason: Option<String>,
    /// The label the machine's hook reported (`BATON_HOOK_HOST_LABEL`), if any.
    #[schema(required = true)]
    pub host_label: Option<String>,
}

/// `GET /agent-sessions/{sessionRunId}/liveness` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LivenessAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    /// `live`, `idle`, `disconnected` or `closed`.
    #[schema(schema_with = Liveness::schema)]
    pub liveness: String,
    /// `unknown` when disconnected: the client went away without an end.
    #[schema(schema_with = Nullable::<Outcome>::schema, required = true)]
    pub outcome: Option<String>,
    #[schema(schema_with = Timestamp::schema)]
    pub last_seen_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub closed_at: Option<String>,
    /// The run this session follows in the same process (after `/clear`).
    #[schema(schema_with = Nullable::<ContractUuid>::schema, required = true)]
    pub follows_session_run_id: Option<String>,
    /// Newest first, at most 50.
    #[schema(inline, max_items = 50)]
    pub episodes: Vec<EpisodeView>,
}

fn state_name(value: i32) -> &'static str {
    match proto::SessionState::try_from(value) {
        Ok(proto::SessionState::Live) => "live",
        Ok(proto::SessionState::Idle) => "idle",
        Ok(proto::SessionState::Disconnected) => "disconnected",
        _ => "closed",
    }
}

/// Record a liveness sidecar's pulse; never refreshes the lease
///
/// 404 for an unknown natural key.
#[utoipa::path(
    post,
    path = "/api/v1/agent-sessions/pulse",
    tag = "sessions",
    operation_id = "pulseSession",
    request_body(content = PulseBody, example = json!({"agent": "claude-code",
        "sessionId": "doc-1", "episodeId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a",
        "client": "claude-code", "hostId": "host-1", "pid": 4242})),
    responses(
        (status = 200, description = "success", body = PulseAnswer),
        errors::NotFound,
        errors::Conflict,
    ),
)]
pub async fn pulse(
    State(state): State<AppState>,
    Caller(call): Caller,
    member: Member,
    StrictJson(body): StrictJson<PulseBody>,
) -> HttpResult<Json<PulseAnswer>> {
    let request = proto::PulseRequest {
        observed_at: observed(body.observed_at.as_deref())?,
        key: key(body.agent, body.session_id),
        episode_id: body.episode_id,
        client: body.client,
        client_version: body.client_version,
        host_client: body.host_client,
        host_id: body.host_id,
        pid: body.pid,
        end_reason: body.end_reason,
        host_label: body.host_label,
    };
    let answer = state
        .registry
        .clone()
        .pulse(member.request(&state, &call, request))
        .await?
        .into_inner();
    Ok(Json(PulseAnswer {
        session_run_id: answer.session_run_id,
        liveness: state_name(answer.state).to_string(),
    }))
}

/// A session's liveness and process episodes; never refreshes the lease
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}/liveness",
    tag = "sessions",
    operation_id = "getSessionLiveness",
    params(RunIdPath),
    responses(
        (status = 200, description = "success", body = LivenessAnswer),
        errors::InvalidInput,
    ),
)]
pub async fn read(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(session_run_id): RunIdPath,
    _: NoQuery,
) -> HttpResult<Json<LivenessAnswer>> {
    let request = proto::GetLivenessRequest { session_run_id };
    let answer = rpc!(state.registry.get_liveness(&call, request))
        .map_err(|status| unknown_run_is_invalid(status.into()))?;
    let liveness = state_name(answer.state);
    Ok(Json(LivenessAnswer {
        session_run_id: answer.session_run_id,
        liveness: liveness.to_string(),
        outcome: (liveness == "disconnected").then(|| "unknown".to_string()),
        last_seen_at: iso_of(answer.last_seen_at.as_ref()),
        closed_at: optional_iso(answer.closed_at.as_ref()),
        follows_session_run_id: answer.follows_session_run_id,
        episodes: answer
            .episodes
            .into_iter()
            .map(|episode| EpisodeView {
                episode_id: episode.episode_id,
                client: episode.client,
                client_version: episode.client_version,
                host_client: episode.host_client,
                host_id: episode.host_id,
                pid: episode.pid,
                started_at: iso_of(episode.started_at.as_ref()),
                last_pulse_at: iso_of(episode.last_pulse_at.as_ref()),
                ended_at: optional_iso(episode.ended_at.as_ref()),
                end_reason: episode.end_reason,
                host_label: episode.host_label,
            })
            .collect(),
    }))
}
