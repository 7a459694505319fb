//! The gRPC adapter for pulses and liveness reads: validation of the sidecar's fields and the
//! mapping of episodes and states onto `baton.registry.v1`.

use baton_kit::clock::to_timestamp;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_proto::registry::v1 as proto;

use crate::episodes::{EndReason, Episode, Pulse};
use crate::grpc::{RegistryGrpc, key_of};
use crate::liveness::State;
use crate::validate;

pub(crate) fn state_to_proto(state: State) -> proto::SessionState {
    match state {
        State::Live => proto::SessionState::Live,
        State::Idle => proto::SessionState::Idle,
        State::Disconnected => proto::SessionState::Disconnected,
        State::Closed => proto::SessionState::Closed,
    }
}

fn episode_to_proto(episode: &Episode) -> proto::Episode {
    proto::Episode {
        episode_id: episode.id.to_string(),
        client: episode.client.clone(),
        client_version: episode.client_version.clone(),
        host_client: episode.host_client.clone(),
        host_id: episode.host_id.clone(),
        pid: u32::try_from(episode.pid).unwrap_or(0),
        started_at: Some(to_timestamp(episode.started_at)),
        last_pulse_at: Some(to_timestamp(episode.last_pulse_at)),
        ended_at: episode.ended_at.map(to_timestamp),
        end_reason: episode.end_reason.clone(),
        host_label: episode.host_label.clone(),
    }
}

/// Validates a pulse's episode fields.
pub fn pulse_of(request: &proto::PulseRequest) -> Result<Pulse, ApiError> {
    let episode_id = baton_kit::text::session_run_id("episodeId", &request.episode_id)?;
    if request.pid == 0 || request.pid > i32::MAX as u32 {
        return Err(ApiError::invalid_input("pid must be a positive process id"));
    }
    let end_reason = request
        .end_reason
        .as_deref()
        .map(|reason| {
            EndReason::parse(reason).ok_or_else(|| {
                ApiError::invalid_input(
                    "endReason must be process_exited, session_closed or stopped",
                )
            })
        })
        .transpose()?;
    Ok(Pulse {
        episode_id,
        client: validate::client_name("client", &request.client)?,
        client_version: request
            .client_version
            .as_deref()
            .map(|version| validate::token("clientVersion", version, 64))
            .transpose()?,
        host_client: request
            .host_client
            .as_deref()
            .map(|host| validate::client_name("hostClient", host))
            .transpose()?,
        host_id: validate::token("hostId", &request.host_id, 128)?,
        pid: request.pid,
        end_reason,
        host_label: request
            .host_label
            .as_deref()
            .map(validate::host_label)
            .transpose()?,
    })
}

impl RegistryGrpc {
    pub(crate) async fn pulse_rpc(
        &self,
        call: &CallContext,
        request: &proto::PulseRequest,
    ) -> Result<proto::PulseResponse, ApiError> {
        let (agent, session_id) = key_of(request.key.as_ref())?;
        let pulse = pulse_of(request)?;
        let observed_at = validate::observed_at(request.observed_at.as_ref())?;
        tracing::Span::current().record("ended", pulse.end_reason.is_some());
        let (id, state) = self
            .registry
            .pulse(
                call.tenant_id,
                &agent,
                &session_id,
                &pulse,
                observed_at,
                call.now,
            )
            .await?;
        Ok(proto::PulseResponse {
            session_run_id: id.to_string(),
            state: state_to_proto(state).into(),
        })
    }

    pub(crate) async fn liveness_rpc(
        &self,
        call: &CallContext,
        request: &proto::GetLivenessRequest,
    ) -> Result<proto::GetLivenessResponse, ApiError> {
        let id = baton_kit::text::session_run_id("sessionRunId", &request.session_run_id)?;
        let read = self.registry.liveness(call.tenant_id, id, call.now).await?;
        tracing::Span::current().record("state", read.state.as_str());
        Ok(proto::GetLivenessResponse {
            session_run_id: read.session.id.to_string(),
            state: state_to_proto(read.state).into(),
            last_seen_at: Some(to_timestamp(read.session.last_seen_at)),
            closed_at: read.session.closed_at.map(to_timestamp),
            follows_session_run_id: read.follows.map(|id| id.to_string()),
            episodes: read.episodes.iter().map(episode_to_proto).collect(),
            followed_by_session_run_id: read.followed_by.map(|id| id.to_string()),
        })
    }
}
