//! The gRPC adapter: turns `baton.registry.v1` requests into validated commands, calls the
//! registry, and turns answers and domain errors back into messages and `Status`.

use tonic::{Request, Response, Status};

use baton_kit::clock::{Clock, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_kit::member::member_of;
use baton_kit::selector::Selector;
use baton_proto::common::v1 as common;
use baton_proto::registry::v1 as proto;
use baton_proto::registry::v1::session_registry_server::SessionRegistry;

use crate::decide::OpenCommand;
use crate::service::Registry;
use crate::session::{Liveness, Session, Source};
use crate::sweep::Sweeper;
use crate::validate;

/// The `SessionRegistry` gRPC service.
#[derive(Debug, Clone)]
pub struct RegistryGrpc {
    pub(crate) registry: Registry,
    sweeper: Sweeper,
    clock: Clock,
    /// Records the calling key's member on the sessions it reports.
    pub(crate) members: crate::members::Attribution,
}

impl RegistryGrpc {
    pub fn new(registry: Registry, sweeper: Sweeper, clock: Clock) -> RegistryGrpc {
        RegistryGrpc {
            registry,
            sweeper,
            clock,
            members: crate::members::Attribution::default(),
        }
    }
}

pub(crate) fn key_of(key: Option<&proto::SessionKey>) -> Result<(String, String), ApiError> {
    let key = key.ok_or_else(|| ApiError::invalid_input("key is required"))?;
    validate::natural_key(&key.agent, &key.session_id)
}

fn source_from_proto(value: i32) -> Result<Source, ApiError> {
    match proto::Source::try_from(value) {
        Ok(proto::Source::Startup) => Ok(Source::Startup),
        Ok(proto::Source::Resume) => Ok(Source::Resume),
        _ => Err(ApiError::invalid_input("source must be startup or resume")),
    }
}

fn source_to_proto(source: Source) -> proto::Source {
    match source {
        Source::Startup => proto::Source::Startup,
        Source::Resume => proto::Source::Resume,
    }
}

fn open_command(request: &proto::OpenRequest) -> Result<OpenCommand, ApiError> {
    let (agent, session_id) = key_of(request.key.as_ref())?;
    let follows_session_id = validate::follows(request.follows_session_id.as_deref(), &session_id)?;
    let briefed_memories = match &request.briefed_memories {
        None => None,
        Some(briefed) => {
            validate::briefed_count(briefed.items.len())?;
            let rows = briefed
                .items
                .iter()
                .map(|row| validate::briefed_memory(&row.id, &row.topic, &row.status))
                .collect::<Result<Vec<_>, _>>()?;
            Some(rows)
        }
    };
    Ok(OpenCommand {
        agent,
        session_id,
        source: source_from_proto(request.source)?,
        project: validate::optional_project(request.project.as_deref())?,
        scope: validate::optional_scope(request.scope.as_deref())?,
        selector: Selector::from_proto(request.selector.clone())?,
        briefed_memories,
        follows_session_id,
    })
}

fn liveness_to_proto(liveness: Liveness) -> proto::Liveness {
    match liveness {
        Liveness::Live => proto::Liveness::Live,
        Liveness::Stale => proto::Liveness::Stale,
        Liveness::ClosedExplicitly => proto::Liveness::ClosedExplicitly,
        Liveness::ClosedImplicitly => proto::Liveness::ClosedImplicitly,
    }
}

pub(crate) fn session_to_proto(session: &Session, liveness: Liveness) -> proto::Session {
    proto::Session {
        session_run_id: session.id.to_string(),
        agent: session.agent.clone(),
        session_id: session.session_id.clone(),
        source: source_to_proto(session.source).into(),
        project: session.project.clone(),
        scope: session.scope.clone(),
        selector: Some(session.selector.to_proto()),
        activation_epoch: session.activation_epoch,
        opened_at: Some(to_timestamp(session.opened_at)),
        closed_at: session.closed_at.map(to_timestamp),
        last_seen_at: Some(to_timestamp(session.last_seen_at)),
        briefing_delivered_at: session.briefing_delivered_at.map(to_timestamp),
        briefed_memories: session
            .briefed_memories
            .iter()
            .map(|row| common::BriefedMemory {
                id: row.id.to_string(),
                topic: row.topic.clone(),
                status: row.status.clone(),
            })
            .collect(),
        liveness: liveness_to_proto(liveness).into(),
    }
}

#[tonic::async_trait]
impl SessionRegistry for RegistryGrpc {
    #[tracing::instrument(name = "registry.open", skip_all, fields(created, reopened))]
    async fn open(
        &self,
        request: Request<proto::OpenRequest>,
    ) -> Result<Response<proto::OpenResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let member = member_of(&request)?;
        let command = open_command(request.get_ref())?;
        let opened = self
            .registry
            .open(call.tenant_id, &command, call.now)
            .await?;
        self.members
            .record(
                self.registry.pool(),
                call.tenant_id,
                opened.session.id,
                member.as_deref(),
            )
            .await;
        tracing::Span::current()
            .record("created", opened.created)
            .record("reopened", opened.reopened);
        let session = &opened.session;
        Ok(Response::new(proto::OpenResponse {
            session_run_id: session.id.to_string(),
            activation_epoch: session.activation_epoch,
            source: source_to_proto(command.source).into(),
            created: opened.created,
            reopened: opened.reopened,
            opened_at: Some(to_timestamp(session.opened_at)),
            last_seen_at: Some(to_timestamp(session.last_seen_at)),
            briefing_delivered_at: session.briefing_delivered_at.map(to_timestamp),
        }))
    }

    #[tracing::instrument(name = "registry.heartbeat", skip_all, fields(resurrected))]
    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let member = member_of(&request)?;
        let message = request.get_ref();
        let (agent, session_id) = key_of(message.key.as_ref())?;
        if let Some(excerpt) = &message.last_message_excerpt {
            validate::excerpt(excerpt)?;
        }
        let excerpt = message.last_message_excerpt.as_deref();
        let beat = match validate::observed_at(message.observed_at.as_ref())? {
            Some(observed_at) => {
                self.registry
                    .replayed_heartbeat(
                        call.tenant_id,
                        &agent,
                        &session_id,
                        excerpt,
                        observed_at,
                        call.now,
                    )
                    .await?
            }
            None => {
                self.registry
                    .heartbeat(call.tenant_id, &agent, &session_id, excerpt, call.now)
                    .await?
            }
        };
        self.members
            .record(
                self.registry.pool(),
                call.tenant_id,
                beat.id,
                member.as_deref(),
            )
            .await;
        tracing::Span::current().record("resurrected", beat.resurrected);
        Ok(Response::new(proto::HeartbeatResponse {
            session_run_id: beat.id.to_string(),
            activation_epoch: beat.activation_epoch,
            last_seen_at: Some(to_timestamp(beat.last_seen_at)),
            resurrected: beat.resurrected,
        }))
    }

    #[tracing::instrument(name = "registry.close", skip_all, fields(already_closed))]
    async fn close(
        &self,
        request: Request<proto::CloseRequest>,
    ) -> Result<Response<proto::CloseResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let (agent, session_id) = key_of(request.get_ref().key.as_ref())?;
        let observed_at = validate::observed_at(request.get_ref().observed_at.as_ref())?;
        let closed = self
            .registry
            .close_observed(call.tenant_id, &agent, &session_id, observed_at, call.now)
            .await?;
        tracing::Span::current().record("already_closed", closed.already_closed);
        Ok(Response::new(proto::CloseResponse {
            session_run_id: closed.id.to_string(),
            activation_epoch: closed.activation_epoch,
            closed_at: Some(to_timestamp(closed.closed_at)),
            already_closed: closed.already_closed,
        }))
    }

    #[tracing::instrument(name = "registry.get_session", skip_all)]
    async fn get_session(
        &self,
        request: Request<proto::GetSessionRequest>,
    ) -> Result<Response<proto::GetSessionResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let session = match &request.get_ref().lookup {
            Some(proto::get_session_request::Lookup::SessionRunId(text)) => {
                let id = baton_kit::text::session_run_id("sessionRunId", text)?;
                self.registry.get_by_id(call.tenant_id, id).await?
            }
            Some(proto::get_session_request::Lookup::Key(key)) => {
                let (agent, session_id) = key_of(Some(key))?;
                self.registry
                    .get_by_key(call.tenant_id, &agent, &session_id)
                    .await?
            }
            None => return Err(ApiError::invalid_input("lookup is required").into()),
        };
        let liveness = self.registry.lease().of(&session, call.now);
        Ok(Response::new(proto::GetSessionResponse {
            session: Some(session_to_proto(&session, liveness)),
        }))
    }

    #[tracing::instrument(
        name = "registry.attach_write",
        skip_all,
        fields(attached, resurrected)
    )]
    async fn attach_write(
        &self,
        request: Request<proto::AttachWriteRequest>,
    ) -> Result<Response<proto::AttachWriteResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let id =
            baton_kit::text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let attached = self
            .registry
            .attach_write(call.tenant_id, id, call.now)
            .await?;
        tracing::Span::current()
            .record("attached", attached.attached)
            .record("resurrected", attached.resurrected);
        Ok(Response::new(proto::AttachWriteResponse {
            attached: attached.attached,
            session_run_id: attached.id.to_string(),
            resurrected: attached.resurrected,
            activation_epoch: attached.activation_epoch,
        }))
    }

    #[tracing::instrument(name = "registry.sole_open_session", skip_all, fields(found))]
    async fn sole_open_session(
        &self,
        request: Request<proto::SoleOpenSessionRequest>,
    ) -> Result<Response<proto::SoleOpenSessionResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let project = validate::optional_project(request.get_ref().project.as_deref())?;
        let found = self
            .registry
            .sole_open_session(call.tenant_id, project.as_deref(), call.now)
            .await?;
        tracing::Span::current().record("found", found.is_some());
        Ok(Response::new(proto::SoleOpenSessionResponse {
            session_run_id: found.map(|id| id.to_string()),
        }))
    }

    #[tracing::instrument(name = "registry.sweep_expired", skip_all, fields(closed))]
    async fn sweep_expired(
        &self,
        request: Request<proto::SweepExpiredRequest>,
    ) -> Result<Response<proto::SweepExpiredResponse>, Status> {
        let now = baton_kit::grpc::call_instant(&request, &self.clock)?;
        let report = self
            .sweeper
            .sweep(now, request.get_ref().batch_per_tenant)
            .await?;
        tracing::Span::current().record("closed", report.closed.len());
        Ok(Response::new(proto::SweepExpiredResponse {
            closed: report
                .closed
                .iter()
                .map(|row| proto::SweptSession {
                    tenant_id: row.tenant_id.to_string(),
                    session_run_id: row.id.to_string(),
                    activation_epoch: row.activation_epoch,
                })
                .collect(),
            excerpts_cleared: report.excerpts_cleared as u32,
        }))
    }

    #[tracing::instrument(name = "registry.read_for_close", skip_all)]
    async fn read_for_close(
        &self,
        request: Request<proto::ReadForCloseRequest>,
    ) -> Result<Response<proto::ReadForCloseResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let id =
            baton_kit::text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let (session, excerpt) = self.registry.read_for_close(call.tenant_id, id).await?;
        let liveness = self.registry.lease().of(&session, call.now);
        Ok(Response::new(proto::ReadForCloseResponse {
            session: Some(session_to_proto(&session, liveness)),
            last_message_excerpt: excerpt,
        }))
    }

    #[tracing::instrument(name = "registry.consume_excerpt", skip_all, fields(cleared))]
    async fn consume_excerpt(
        &self,
        request: Request<proto::ConsumeExcerptRequest>,
    ) -> Result<Response<proto::ConsumeExcerptResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let message = request.get_ref();
        let id = baton_kit::text::session_run_id("sessionRunId", &message.session_run_id)?;
        let cleared = self
            .registry
            .consume_excerpt(call.tenant_id, id, message.activation_epoch)
            .await?;
        tracing::Span::current().record("cleared", cleared);
        Ok(Response::new(proto::ConsumeExcerptResponse { cleared }))
    }

    #[tracing::instrument(name = "registry.pulse", skip_all, fields(ended))]
    async fn pulse(
        &self,
        request: Request<proto::PulseRequest>,
    ) -> Result<Response<proto::PulseResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let member = member_of(&request)?;
        let answer = self.pulse_rpc(&call, request.get_ref()).await?;
        if let Ok(id) = answer.session_run_id.parse() {
            self.members
                .record(self.registry.pool(), call.tenant_id, id, member.as_deref())
                .await;
        }
        Ok(Response::new(answer))
    }

    #[tracing::instrument(name = "registry.get_liveness", skip_all, fields(state))]
    async fn get_liveness(
        &self,
        request: Request<proto::GetLivenessRequest>,
    ) -> Result<Response<proto::GetLivenessResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        Ok(Response::new(
            self.liveness_rpc(&call, request.get_ref()).await?,
        ))
    }

    #[tracing::instrument(name = "registry.list_sessions", skip_all, fields(sessions, more))]
    async fn list_sessions(
        &self,
        request: Request<proto::ListSessionsRequest>,
    ) -> Result<Response<proto::ListSessionsResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        Ok(Response::new(
            self.list_sessions_rpc(&call, request.get_ref()).await?,
        ))
    }

    #[tracing::instrument(name = "registry.find_sessions", skip_all, fields(keys, found))]
    async fn find_sessions(
        &self,
        request: Request<proto::FindSessionsRequest>,
    ) -> Result<Response<proto::FindSessionsResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        Ok(Response::new(
            self.find_sessions_rpc(&call, request.get_ref()).await?,
        ))
    }

    #[tracing::instrument(name = "registry.list_machines", skip_all, fields(machines, truncated))]
    async fn list_machines(
        &self,
        request: Request<proto::ListMachinesRequest>,
    ) -> Result<Response<proto::ListMachinesResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        Ok(Response::new(
            self.list_machines_rpc(&call, request.get_ref()).await?,
        ))
    }

    #[tracing::instrument(name = "registry.briefed_since", skip_all)]
    async fn briefed_since(
        &self,
        request: Request<proto::BriefedSinceRequest>,
    ) -> Result<Response<proto::BriefedSinceResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let message = request.get_ref();
        let since = baton_kit::clock::required_since("since", message.since.as_ref())?;
        let limit = crate::report::limit(message.limit)?;
        let answer = self.registry.briefed_since(&call, since, limit).await?;
        Ok(Response::new(proto::BriefedSinceResponse {
            sessions_opened: answer.sessions_opened.max(0) as u64,
            briefed: answer
                .briefed
                .into_iter()
                .map(|(run, memory)| proto::BriefedPair {
                    session_run_id: run.to_string(),
                    memory_id: memory.to_string(),
                })
                .collect(),
            truncated: answer.truncated,
        }))
    }
}
