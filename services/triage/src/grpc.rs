//! The gRPC adapter for `baton.triage.v1`.

use tonic::{Request, Response, Status};

use baton_kit::clock::{required_since, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_kit::text;
use baton_proto::triage::v1 as proto;
use baton_proto::triage::v1::triage_server;

use crate::close::Claim;
use crate::service::Triage;
use crate::states;

/// The `Triage` gRPC service.
#[derive(Debug, Clone)]
pub struct TriageGrpc {
    triage: Triage,
}

impl TriageGrpc {
    pub fn new(triage: Triage) -> TriageGrpc {
        TriageGrpc { triage }
    }

    fn call<T>(&self, request: &Request<T>) -> Result<CallContext, Status> {
        CallContext::from_request(request, self.triage.clock())
    }
}

fn natural_key(agent: &str, session_id: &str) -> Result<(String, String), ApiError> {
    Ok((text::agent(agent)?, text::session_id(session_id)?))
}

#[tonic::async_trait]
impl triage_server::Triage for TriageGrpc {
    #[tracing::instrument(name = "triage.begin", skip_all)]
    async fn begin(
        &self,
        request: Request<proto::BeginRequest>,
    ) -> Result<Response<proto::BeginResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let (agent, session_id) = natural_key(&message.agent, &message.session_id)?;
        let began = self
            .triage
            .begin(
                &call,
                &agent,
                &session_id,
                message.turn_count,
                message.stop_hook_active,
            )
            .await?;
        Ok(Response::new(proto::BeginResponse {
            session_run_id: began.run_id.to_string(),
            armed: began.armed,
            attempt_id: began.attempt_id.map(|id| id.to_string()),
            triage_status: began.status.as_str().to_string(),
            reason: began.reason.map(|reason| reason.as_str().to_string()),
        }))
    }

    #[tracing::instrument(name = "triage.complete", skip_all)]
    async fn complete(
        &self,
        request: Request<proto::CompleteRequest>,
    ) -> Result<Response<proto::CompleteResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let (agent, session_id) = natural_key(&message.agent, &message.session_id)?;
        let attempt_id = text::session_run_id("attemptId", &message.attempt_id)?;
        let completed = self
            .triage
            .complete(&call, &agent, &session_id, attempt_id)
            .await?;
        Ok(Response::new(proto::CompleteResponse {
            session_run_id: completed.run_id.to_string(),
            triage_status: completed.status.as_str().to_string(),
            event_count: completed.event_count as u32,
            since_begin_count: completed.since_begin_count as u32,
            truncated: completed.truncated,
        }))
    }

    #[tracing::instrument(name = "triage.get_state", skip_all)]
    async fn get_state(
        &self,
        request: Request<proto::GetStateRequest>,
    ) -> Result<Response<proto::GetStateResponse>, Status> {
        let call = self.call(&request)?;
        let run_id = text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let status = self.triage.state(&call, run_id).await?;
        Ok(Response::new(proto::GetStateResponse {
            triage_status: status.as_str().to_string(),
        }))
    }

    #[tracing::instrument(name = "triage.list_attempts", skip_all)]
    async fn list_attempts(
        &self,
        request: Request<proto::ListAttemptsRequest>,
    ) -> Result<Response<proto::ListAttemptsResponse>, Status> {
        let call = self.call(&request)?;
        let run_id = text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let (rows, count) = self.triage.attempts(&call, run_id).await?;
        Ok(Response::new(proto::ListAttemptsResponse {
            session_run_id: run_id.to_string(),
            items: rows
                .into_iter()
                .map(|row| proto::Attempt {
                    attempt_id: row.attempt_id.to_string(),
                    armed_at: Some(to_timestamp(row.armed_at)),
                    finalized_at: row.finalized_at.map(to_timestamp),
                    outcome: row.outcome,
                })
                .collect(),
            count: count as u32,
        }))
    }

    #[tracing::instrument(name = "triage.render_debrief", skip_all)]
    async fn render_debrief(
        &self,
        request: Request<proto::RenderDebriefRequest>,
    ) -> Result<Response<proto::RenderDebriefResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let scope = message.scope.as_deref().map(text::scope).transpose()?;
        let project = message.project.as_deref().map(text::project).transpose()?;
        let key = match (&message.agent, &message.session_id) {
            (Some(agent), Some(session_id)) => Some(natural_key(agent, session_id)?),
            (None, None) => None,
            _ => return Err(ApiError::invalid_input("agent and sessionId go together").into()),
        };
        let prompt = self.triage.debrief(&call, scope, project, key).await?;
        Ok(Response::new(proto::RenderDebriefResponse { prompt }))
    }

    #[tracing::instrument(name = "triage.get_run_for_close", skip_all)]
    async fn get_run_for_close(
        &self,
        request: Request<proto::GetRunForCloseRequest>,
    ) -> Result<Response<proto::GetRunForCloseResponse>, Status> {
        let call = self.call(&request)?;
        let run_id = text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let run = self.triage.run_for_close(&call, run_id).await?;
        Ok(Response::new(proto::GetRunForCloseResponse {
            status: run.state.status.as_str().to_string(),
            attempt_id: run.state.attempt_id.map(|id| id.to_string()),
            holder: run.holder,
            watermark: run
                .state
                .watermark
                .iter()
                .map(ToString::to_string)
                .collect(),
        }))
    }

    #[tracing::instrument(name = "triage.claim_for_close", skip_all, fields(claimed))]
    async fn claim_for_close(
        &self,
        request: Request<proto::ClaimForCloseRequest>,
    ) -> Result<Response<proto::ClaimForCloseResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let run_id = text::session_run_id("sessionRunId", &message.session_run_id)?;
        let observed = message
            .observed_attempt_id
            .as_deref()
            .map(|id| text::session_run_id("observedAttemptId", id))
            .transpose()?;
        let claim = self
            .triage
            .claim_for_close(&call, run_id, message.observed_epoch, observed)
            .await?;
        let answer = match claim {
            Claim::Won(attempt) => proto::ClaimForCloseResponse {
                claimed: true,
                fenced: false,
                attempt_id: Some(attempt.to_string()),
            },
            Claim::Lost => proto::ClaimForCloseResponse {
                claimed: false,
                fenced: false,
                attempt_id: None,
            },
            Claim::Fenced => proto::ClaimForCloseResponse {
                claimed: false,
                fenced: true,
                attempt_id: None,
            },
        };
        tracing::Span::current().record("claimed", answer.claimed);
        Ok(Response::new(answer))
    }

    #[tracing::instrument(name = "triage.finish_close", skip_all, fields(finished))]
    async fn finish_close(
        &self,
        request: Request<proto::FinishCloseRequest>,
    ) -> Result<Response<proto::FinishCloseResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let run_id = text::session_run_id("sessionRunId", &message.session_run_id)?;
        let attempt = text::session_run_id("attemptId", &message.attempt_id)?;
        let visible = message
            .visible_ids
            .iter()
            .map(|id| text::session_run_id("visibleIds[]", id))
            .collect::<Result<Vec<_>, _>>()?;
        let status = self
            .triage
            .finish_close(
                &call,
                run_id,
                attempt,
                message.epoch,
                &visible,
                message.truncated,
            )
            .await?;
        tracing::Span::current().record("finished", status.is_some());
        Ok(Response::new(proto::FinishCloseResponse {
            finished: status.is_some(),
            status: status
                .map(|status| status.as_str().to_string())
                .unwrap_or_default(),
        }))
    }

    #[tracing::instrument(name = "triage.get_states", skip_all, fields(answered))]
    async fn get_states(
        &self,
        request: Request<proto::GetStatesRequest>,
    ) -> Result<Response<proto::GetStatesResponse>, Status> {
        let call = self.call(&request)?;
        let run_ids = states::requested(&request.get_ref().session_run_ids)?;
        let runs = self.triage.states(&call, &run_ids).await?;
        tracing::Span::current().record("answered", runs.len());
        Ok(Response::new(proto::GetStatesResponse {
            states: runs
                .into_iter()
                .map(|run| proto::RunState {
                    session_run_id: run.run_id.to_string(),
                    triage_status: run.status.as_str().to_string(),
                    attempts: u32::try_from(run.attempts.max(0)).unwrap_or(u32::MAX),
                })
                .collect(),
        }))
    }

    #[tracing::instrument(name = "triage.nudge_counts", skip_all)]
    async fn nudge_counts(
        &self,
        request: Request<proto::NudgeCountsRequest>,
    ) -> Result<Response<proto::NudgeCountsResponse>, Status> {
        let call = self.call(&request)?;
        let since = required_since("since", request.get_ref().since.as_ref())?;
        let counts = self.triage.nudge_counts(&call, since).await?;
        let count = |value: i64| value.max(0) as u64;
        Ok(Response::new(proto::NudgeCountsResponse {
            armed: count(counts.armed),
            completed: count(counts.completed),
            expired: count(counts.expired),
            overflowed: count(counts.overflowed),
            runs: count(counts.runs),
            runs_repeated: count(counts.runs_repeated),
        }))
    }
}
