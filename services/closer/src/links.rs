//! The closer's clients. The closer owns no session, memory or triage data: it asks the owners.

use baton_kit::grpc::TracedChannel;
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_kit::grpc::run_events::run_event_ids;
use baton_kit::grpc::session_read;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_kit::text;
use baton_proto::provenance::v1 as provenance;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_proto::registry::v1 as registry;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;
use baton_proto::triage::v1 as triage;
use baton_proto::triage::v1::triage_client::TriageClient;

/// Most events a pass looks at (the per-run ceiling).
pub use baton_kit::grpc::run_events::RUN_EVENT_CEILING as CEILING;

/// What registry says about a run, for the pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRead {
    pub epoch: i64,
    pub closed: bool,
    /// Briefed commitment ids with their topic and status.
    pub briefed: Vec<(Uuid, String, String)>,
    pub excerpt: Option<String>,
    /// The project the session ran in.
    pub project: Option<String>,
}

/// Triage's state of a run, for the pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriageRead {
    pub status: String,
    pub attempt_id: Option<Uuid>,
    pub holder: Option<String>,
    pub watermark: Vec<Uuid>,
}

/// A memory, as the judge and the live re-read need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRead {
    pub memory_type: String,
    pub topic: String,
    pub content: String,
    pub status: String,
    /// The commitment's status, when the memory is one.
    pub commitment_status: Option<String>,
    pub project: Option<String>,
}

/// How a claim went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimAnswer {
    Won(Uuid),
    Lost,
    Fenced,
}

/// Clients of registry, provenance and triage.
#[derive(Debug, Clone)]
pub struct Links {
    pub(crate) registry: SessionRegistryClient<TracedChannel>,
    pub(crate) provenance: ProvenanceClient<TracedChannel>,
    pub(crate) triage: TriageClient<TracedChannel>,
    pub(crate) outbound: Outbound,
}

fn uuid(field: &str, value: &str) -> Result<Uuid, ApiError> {
    text::session_run_id(field, value)
}

impl Links {
    pub fn new(
        registry: TracedChannel,
        provenance: TracedChannel,
        triage: TracedChannel,
        outbound: Outbound,
    ) -> Links {
        Links {
            registry: SessionRegistryClient::new(registry),
            provenance: ProvenanceClient::new(provenance),
            triage: TriageClient::new(triage),
            outbound,
        }
    }

    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// Registry's lease-expiry sweep (cross-tenant). Returns how many rows it closed.
    pub async fn sweep_expired(&self, test_now: Option<&str>) -> Result<usize, ApiError> {
        let request = self.outbound.maintenance_request(
            test_now,
            registry::SweepExpiredRequest {
                batch_per_tenant: 0,
            },
        );
        let answer = self
            .registry
            .clone()
            .sweep_expired(request)
            .await?
            .into_inner();
        Ok(answer.closed.len())
    }

    /// The row and its excerpt; NOT_FOUND stays NOT_FOUND.
    pub async fn read(&self, call: &OutboundCall, run_id: Uuid) -> Result<RunRead, ApiError> {
        let request = registry::ReadForCloseRequest {
            session_run_id: run_id.to_string(),
        };
        let answer = self
            .registry
            .clone()
            .read_for_close(self.outbound.request(call, request))
            .await?
            .into_inner();
        let session = answer
            .session
            .ok_or_else(|| ApiError::internal("registry answered no session"))?;
        let briefed = session
            .briefed_memories
            .iter()
            .map(|row| {
                Ok((
                    uuid("briefedMemories[].id", &row.id)?,
                    row.topic.clone(),
                    row.status.clone(),
                ))
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        Ok(RunRead {
            epoch: session.activation_epoch,
            closed: session.closed_at.is_some(),
            briefed,
            excerpt: answer.last_message_excerpt,
            project: session.project,
        })
    }

    /// The run's current epoch and closed state (the fence re-check before each resolve).
    pub async fn epoch(&self, call: &OutboundCall, run_id: Uuid) -> Result<(i64, bool), ApiError> {
        let session = session_read::session(
            &self.registry,
            &self.outbound,
            call,
            session_read::by_run(run_id),
        )
        .await?;
        Ok((session.activation_epoch, session.closed_at.is_some()))
    }

    /// Clears the excerpt, fenced on the epoch and the closed state.
    pub async fn consume_excerpt(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
        epoch: i64,
    ) -> Result<bool, ApiError> {
        let request = registry::ConsumeExcerptRequest {
            session_run_id: run_id.to_string(),
            activation_epoch: epoch,
        };
        Ok(self
            .registry
            .clone()
            .consume_excerpt(self.outbound.request(call, request))
            .await?
            .into_inner()
            .cleared)
    }

    /// The run's visible event ids and whether it has more than the ceiling.
    pub async fn listing(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
    ) -> Result<(Vec<Uuid>, bool), ApiError> {
        let listed = run_event_ids(&self.provenance, &self.outbound, call, run_id).await?;
        Ok((listed.ids, listed.truncated))
    }

    /// The memories the run's events touched, in first-touch order, at most `limit`.
    pub async fn written_memory_ids(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
        limit: usize,
    ) -> Result<Vec<Uuid>, ApiError> {
        let mut ids: Vec<Uuid> = Vec::new();
        let mut cursor = None;
        loop {
            let request = provenance::ListRunEventsRequest {
                session_run_id: run_id.to_string(),
                cursor: cursor.clone(),
                limit: Some(100),
            };
            let page = self
                .provenance
                .clone()
                .list_run_events(self.outbound.request(call, request))
                .await?
                .into_inner();
            for item in &page.items {
                let id = uuid("memoryId", &item.memory_id)?;
                if !ids.contains(&id) && ids.len() < limit {
                    ids.push(id);
                }
            }
            match page.next_cursor {
                Some(next) if ids.len() < limit => cursor = Some(next),
                _ => return Ok(ids),
            }
        }
    }

    /// A memory, live (`None` when it no longer exists).
    pub async fn memory(
        &self,
        call: &OutboundCall,
        memory_id: Uuid,
    ) -> Result<Option<MemoryRead>, ApiError> {
        let request = provenance::GetMemoryRequest {
            memory_id: memory_id.to_string(),
        };
        let answer = self
            .provenance
            .clone()
            .get_memory(self.outbound.request(call, request))
            .await;
        let memory = match answer {
            Ok(answer) => answer.into_inner().memory,
            Err(status) if status.code() == tonic::Code::NotFound => return Ok(None),
            Err(status) => return Err(status.into()),
        };
        Ok(memory.map(|memory| MemoryRead {
            memory_type: memory.memory_type,
            topic: memory.topic,
            content: memory.content,
            status: memory.status,
            commitment_status: memory.commitment.map(|commitment| commitment.status),
            project: memory.project,
        }))
    }

    /// Resolves a commitment as the worker, stamped with the run (pre-resolved: no attach, no
    /// resurrection). True when it changed.
    pub async fn resolve(
        &self,
        call: &OutboundCall,
        memory_id: Uuid,
        run_id: Uuid,
    ) -> Result<bool, ApiError> {
        let request = provenance::TransitionRequest {
            memory_id: memory_id.to_string(),
            target_status: "resolved".to_string(),
            actor: provenance::ActorKind::Worker.into(),
            provenance: Some(provenance::WriteProvenance {
                source: Some(
                    provenance::write_provenance::Source::PreResolvedSessionRunId(
                        run_id.to_string(),
                    ),
                ),
            }),
        };
        Ok(self
            .provenance
            .clone()
            .transition(self.outbound.request(call, request))
            .await?
            .into_inner()
            .changed)
    }

    /// Triage's stored state of the run.
    pub async fn triage(&self, call: &OutboundCall, run_id: Uuid) -> Result<TriageRead, ApiError> {
        let request = triage::GetRunForCloseRequest {
            session_run_id: run_id.to_string(),
        };
        let answer = self
            .triage
            .clone()
            .get_run_for_close(self.outbound.request(call, request))
            .await?
            .into_inner();
        Ok(TriageRead {
            status: answer.status,
            attempt_id: answer
                .attempt_id
                .map(|id| uuid("attemptId", &id))
                .transpose()?,
            holder: answer.holder,
            watermark: answer
                .watermark
                .iter()
                .map(|id| uuid("watermark[]", id))
                .collect::<Result<Vec<_>, _>>()?,
        })
    }

    /// Claims the run for this pass.
    pub async fn claim(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
        epoch: i64,
        observed: Option<Uuid>,
    ) -> Result<ClaimAnswer, ApiError> {
        let request = triage::ClaimForCloseRequest {
            session_run_id: run_id.to_string(),
            observed_epoch: epoch,
            observed_attempt_id: observed.map(|id| id.to_string()),
        };
        let answer = self
            .triage
            .clone()
            .claim_for_close(self.outbound.request(call, request))
            .await?
            .into_inner();
        Ok(match (answer.claimed, answer.fenced, answer.attempt_id) {
            (true, _, Some(attempt)) => ClaimAnswer::Won(uuid("attemptId", &attempt)?),
            (_, true, _) => ClaimAnswer::Fenced,
            _ => ClaimAnswer::Lost,
        })
    }

    /// Writes the verdict back; false when fenced.
    pub async fn finish(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
        attempt: Uuid,
        epoch: i64,
        visible: &[Uuid],
        truncated: bool,
    ) -> Result<bool, ApiError> {
        let request = triage::FinishCloseRequest {
            session_run_id: run_id.to_string(),
            attempt_id: attempt.to_string(),
            epoch,
            visible_ids: visible.iter().map(ToString::to_string).collect(),
            truncated,
        };
        Ok(self
            .triage
            .clone()
            .finish_close(self.outbound.request(call, request))
            .await?
            .into_inner()
            .finished)
    }
}
