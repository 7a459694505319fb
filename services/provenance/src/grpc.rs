//! The gRPC adapter for `baton.provenance.v1`.

use tonic::{Request, Response, Status};

use baton_kit::clock::to_timestamp;
use baton_kit::grpc::CallContext;
use baton_kit::selector::Selector;
use baton_kit::text;
use baton_proto::provenance::v1 as proto;
use baton_proto::provenance::v1::provenance_server;

use crate::briefing::{Briefing, BriefingQuery, CommitmentItem, Mode, SectionOf};
use crate::link::Provenance as WriteProvenance;
use crate::service::{Provenance, Written};
use crate::store::briefing::MemoryItemRow;
use crate::store::memories::MemoryRow;
use crate::validate;
use crate::writes::EdgeIntent;

/// The `Provenance` gRPC service.
#[derive(Debug, Clone)]
pub struct ProvenanceGrpc {
    service: Provenance,
}

impl ProvenanceGrpc {
    pub fn new(service: Provenance) -> ProvenanceGrpc {
        ProvenanceGrpc { service }
    }

    fn call<T>(&self, request: &Request<T>) -> Result<CallContext, Status> {
        CallContext::from_request(request, self.service.clock())
    }
}

fn summary(memory_id: uuid::Uuid, memory: &validate::NewMemory) -> proto::MemorySummary {
    proto::MemorySummary {
        id: memory_id.to_string(),
        memory_type: memory.memory_type.as_str().to_string(),
        topic: memory.topic.clone(),
        scope: memory.scope.clone(),
        project: memory.project.clone(),
    }
}

fn written(answer: &Written, memory: &validate::NewMemory) -> proto::WriteResponse {
    proto::WriteResponse {
        memory: Some(summary(answer.memory_id, memory)),
        commitment_id: answer.commitment_id.map(|id| id.to_string()),
        session_run_id: answer.stamp.map(|id| id.to_string()),
    }
}

fn memory_to_proto(row: &MemoryRow) -> proto::Memory {
    proto::Memory {
        id: row.id.to_string(),
        memory_type: row.memory_type.as_str().to_string(),
        topic: row.topic.clone(),
        content: row.content.clone(),
        scope: row.scope.clone(),
        project: row.project.clone(),
        tags: row.tags.clone(),
        status: row.status.as_str().to_string(),
        commitment: row.commitment.as_ref().map(|commitment| proto::Commitment {
            id: commitment.id.to_string(),
            status: commitment.status.as_str().to_string(),
            due_at: commitment.due_at.map(to_timestamp),
        }),
        superseded_by: row.superseded_by.map(|id| id.to_string()),
        predecessor_id: row.predecessor_id.map(|id| id.to_string()),
        created_at: Some(to_timestamp(row.created_at)),
        updated_at: Some(to_timestamp(row.updated_at)),
    }
}

fn commitment_section(section: &SectionOf<CommitmentItem>) -> proto::CommitmentSection {
    proto::CommitmentSection {
        count: section.count as u32,
        has_more: section.has_more,
        items: section
            .items
            .iter()
            .map(|item| proto::CommitmentItem {
                id: item.row.id.to_string(),
                memory_id: item.row.memory_id.to_string(),
                topic: item.row.topic.clone(),
                status: item.row.status.clone(),
                due_at: item.row.due_at.map(to_timestamp),
                overdue: item.overdue,
            })
            .collect(),
    }
}

fn memory_section(section: &SectionOf<MemoryItemRow>) -> proto::MemorySection {
    proto::MemorySection {
        count: section.count as u32,
        has_more: section.has_more,
        items: section
            .items
            .iter()
            .map(|row| proto::MemoryItem {
                id: row.id.to_string(),
                memory_type: row.memory_type.clone(),
                topic: row.topic.clone(),
                scope: row.scope.clone(),
                project: row.project.clone(),
                recorded_at: Some(to_timestamp(row.created_at)),
                updated_at: Some(to_timestamp(row.updated_at)),
            })
            .collect(),
    }
}

fn briefing_to_proto(briefing: &Briefing) -> proto::BriefingResponse {
    proto::BriefingResponse {
        selector: Some(briefing.selector.to_proto()),
        mode: briefing.mode.as_str().to_string(),
        generated_at: Some(to_timestamp(briefing.generated_at)),
        commitments: briefing.commitments.as_ref().map(commitment_section),
        overdue: briefing.overdue.as_ref().map(commitment_section),
        blockers: briefing.blockers.as_ref().map(memory_section),
        stale_candidates: briefing.stale_candidates.as_ref().map(memory_section),
        recent_decisions: briefing.recent_decisions.as_ref().map(memory_section),
        preferences: briefing.preferences.as_ref().map(memory_section),
    }
}

#[tonic::async_trait]
impl provenance_server::Provenance for ProvenanceGrpc {
    #[tracing::instrument(name = "provenance.remember", skip_all, fields(attributed))]
    async fn remember(
        &self,
        request: Request<proto::RememberRequest>,
    ) -> Result<Response<proto::WriteResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let memory = validate::new_memory(message.memory.as_ref())?;
        let actor = validate::actor(message.actor)?;
        let provenance = WriteProvenance::from_proto(message.provenance.as_ref())?;
        let answer = self
            .service
            .remember(&call, &memory, actor, provenance)
            .await?;
        tracing::Span::current().record("attributed", answer.stamp.is_some());
        Ok(Response::new(written(&answer, &memory)))
    }

    #[tracing::instrument(name = "provenance.revise", skip_all, fields(attributed))]
    async fn revise(
        &self,
        request: Request<proto::ReviseRequest>,
    ) -> Result<Response<proto::WriteResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let predecessor_id = validate::memory_id("predecessorId", &message.predecessor_id)?;
        let memory = validate::new_memory(message.memory.as_ref())?;
        let edge_intent = EdgeIntent::parse(message.edge_intent.as_deref())?;
        let actor = validate::actor(message.actor)?;
        let provenance = WriteProvenance::from_proto(message.provenance.as_ref())?;
        let answer = self
            .service
            .revise(
                &call,
                predecessor_id,
                &memory,
                edge_intent,
                actor,
                provenance,
            )
            .await?;
        tracing::Span::current().record("attributed", answer.stamp.is_some());
        Ok(Response::new(written(&answer, &memory)))
    }

    #[tracing::instrument(name = "provenance.transition", skip_all, fields(changed))]
    async fn transition(
        &self,
        request: Request<proto::TransitionRequest>,
    ) -> Result<Response<proto::TransitionResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let memory_id = validate::memory_id("memoryId", &message.memory_id)?;
        let target = validate::target_status(&message.target_status)?;
        let actor = validate::actor(message.actor)?;
        let provenance = WriteProvenance::from_proto(message.provenance.as_ref())?;
        let answer = self
            .service
            .transition(&call, memory_id, target, actor, provenance)
            .await?;
        tracing::Span::current().record("changed", answer.changed);
        Ok(Response::new(proto::TransitionResponse {
            commitment_id: answer.commitment_id.to_string(),
            status: answer.status,
            changed: answer.changed,
        }))
    }

    #[tracing::instrument(name = "provenance.archive", skip_all)]
    async fn archive(
        &self,
        request: Request<proto::ArchiveRequest>,
    ) -> Result<Response<proto::ArchiveResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let memory_id = validate::memory_id("memoryId", &message.memory_id)?;
        let actor = validate::actor(message.actor)?;
        let provenance = WriteProvenance::from_proto(message.provenance.as_ref())?;
        self.service
            .archive(&call, memory_id, actor, provenance)
            .await?;
        Ok(Response::new(proto::ArchiveResponse {
            id: memory_id.to_string(),
            status: "archived".to_string(),
        }))
    }

    #[tracing::instrument(name = "provenance.get_memory", skip_all)]
    async fn get_memory(
        &self,
        request: Request<proto::GetMemoryRequest>,
    ) -> Result<Response<proto::GetMemoryResponse>, Status> {
        let call = self.call(&request)?;
        let memory_id = validate::memory_id("memoryId", &request.get_ref().memory_id)?;
        let row = self.service.memory(call.tenant_id, memory_id).await?;
        Ok(Response::new(proto::GetMemoryResponse {
            memory: Some(memory_to_proto(&row)),
        }))
    }

    #[tracing::instrument(name = "provenance.history", skip_all)]
    async fn history(
        &self,
        request: Request<proto::HistoryRequest>,
    ) -> Result<Response<proto::HistoryResponse>, Status> {
        let call = self.call(&request)?;
        let memory_id = validate::memory_id("memoryId", &request.get_ref().memory_id)?;
        let rows = self.service.history(call.tenant_id, memory_id).await?;
        Ok(Response::new(proto::HistoryResponse {
            memory_id: memory_id.to_string(),
            events: rows
                .into_iter()
                .map(|row| proto::HistoryEvent {
                    id: row.id.to_string(),
                    event_kind: row.event_kind,
                    actor_kind: row.actor_kind,
                    created_at: Some(to_timestamp(row.created_at)),
                    payload: Some(proto::PayloadShape {
                        present: row.json_type.is_some(),
                        json_type: row.json_type.unwrap_or_default(),
                        byte_length: i64::from(row.byte_length.unwrap_or(0)),
                    }),
                })
                .collect(),
        }))
    }

    #[tracing::instrument(name = "provenance.import", skip_all, fields(memories))]
    async fn import(
        &self,
        request: Request<proto::ImportRequest>,
    ) -> Result<Response<proto::ImportResponse>, Status> {
        let call = self.call(&request)?;
        let ids = self
            .service
            .import(&call, &request.get_ref().document_json)
            .await?;
        tracing::Span::current().record("memories", ids.len());
        Ok(Response::new(proto::ImportResponse {
            memory_ids: ids.iter().map(ToString::to_string).collect(),
        }))
    }

    #[tracing::instrument(name = "provenance.list_run_events", skip_all)]
    async fn list_run_events(
        &self,
        request: Request<proto::ListRunEventsRequest>,
    ) -> Result<Response<proto::ListRunEventsResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let run_id = text::session_run_id("sessionRunId", &message.session_run_id)?;
        let cursor = message
            .cursor
            .as_deref()
            .map(|cursor| text::session_run_id("cursor", cursor))
            .transpose()?;
        let limit = message.limit.unwrap_or(crate::run_events::DEFAULT_LIMIT);
        let page = self
            .service
            .run_events(&call, run_id, cursor, limit)
            .await?;
        let run = run_id.to_string();
        Ok(Response::new(proto::ListRunEventsResponse {
            items: page
                .items
                .into_iter()
                .map(|row| proto::RunEvent {
                    id: row.id.to_string(),
                    memory_id: row.memory_id.to_string(),
                    event_kind: row.event_kind,
                    actor_kind: row.actor_kind,
                    session_run_id: run.clone(),
                    created_at: Some(to_timestamp(row.created_at)),
                })
                .collect(),
            next_cursor: page.next_cursor.map(|id| id.to_string()),
            truncated: page.truncated,
        }))
    }

    #[tracing::instrument(name = "provenance.list_run_event_ids", skip_all, fields(truncated))]
    async fn list_run_event_ids(
        &self,
        request: Request<proto::ListRunEventIdsRequest>,
    ) -> Result<Response<proto::ListRunEventIdsResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let run_id = text::session_run_id("sessionRunId", &message.session_run_id)?;
        let (ids, truncated) = self
            .service
            .run_event_ids(&call, run_id, message.ceiling)
            .await?;
        tracing::Span::current().record("truncated", truncated);
        Ok(Response::new(proto::ListRunEventIdsResponse {
            ids: ids.iter().map(ToString::to_string).collect(),
            truncated,
        }))
    }

    #[tracing::instrument(name = "provenance.briefing", skip_all)]
    async fn briefing(
        &self,
        request: Request<proto::BriefingRequest>,
    ) -> Result<Response<proto::BriefingResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let selector = Selector::from_proto(message.selector.clone())?;
        let mode = Mode::parse(message.mode.as_deref())?;
        let query = BriefingQuery::new(selector, mode, &message.sections, message.section_limit)
            .map_err(Status::from)?;
        let briefing = self.service.briefing(&call, &query).await?;
        Ok(Response::new(briefing_to_proto(&briefing)))
    }

    #[tracing::instrument(name = "provenance.write_counts", skip_all)]
    async fn write_counts(
        &self,
        request: Request<proto::WriteCountsRequest>,
    ) -> Result<Response<proto::WriteCountsResponse>, Status> {
        let call = self.call(&request)?;
        let since = baton_kit::clock::required_since("since", request.get_ref().since.as_ref())?;
        let counts = self.service.write_counts(call.tenant_id, since).await?;
        let count = |value: i64| value.max(0) as u64;
        Ok(Response::new(proto::WriteCountsResponse {
            writes: count(counts.writes),
            attributed: count(counts.attributed),
            created: count(counts.created),
        }))
    }

    #[tracing::instrument(name = "provenance.commitment_trails", skip_all)]
    async fn commitment_trails(
        &self,
        request: Request<proto::CommitmentTrailsRequest>,
    ) -> Result<Response<proto::CommitmentTrailsResponse>, Status> {
        let call = self.call(&request)?;
        let ids = crate::report::trail_ids(&request.get_ref().memory_ids)?;
        let trails = self.service.trails(call.tenant_id, &ids).await?;
        Ok(Response::new(proto::CommitmentTrailsResponse {
            trails: trails
                .into_iter()
                .map(|trail| proto::CommitmentTrail {
                    memory_id: trail.memory_id.to_string(),
                    status: trail.status,
                    memory_status: trail.memory_status,
                    events: trail
                        .events
                        .into_iter()
                        .map(|event| proto::TrailEvent {
                            event_kind: event.event_kind,
                            actor_kind: event.actor_kind,
                            session_run_id: event.session_run_id,
                            created_at: Some(to_timestamp(event.created_at)),
                        })
                        .collect(),
                })
                .collect(),
        }))
    }
}
