//! Remember, revise, resolve/unresolve and archive (CONTRACT section 10).
//!
//! Every write resolves its provenance stamp first (which may attach or resurrect a run in
//! registry), then writes the memory and every event it inserts — create, supersede, and any
//! implicit resolve or archive — in one transaction, each event carrying the same
//! `{"sessionRunId"}` payload. Validation and existence checks come before the stamp, so a
//! refused write never touches a session.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::{ApiError, ErrorCode};
use baton_kit::grpc::CallContext;

use crate::lifecycle::{self, CarryDecision, TransitionDecision};
use crate::link::{self, Provenance as WriteProvenance};
use crate::memory::{ActorKind, CommitmentStatus, EventKind, MemoryStatus, MemoryType};
use crate::service::{Provenance, Written};
use crate::store::events;
use crate::store::memories::{self, CommitmentRow, Lineage};
use crate::validate::NewMemory;

/// How a successor relates to its predecessor. Both supersede the predecessor; the intent is
/// recorded on the successor for readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeIntent {
    Supersedes,
    Updates,
}

impl EdgeIntent {
    pub fn parse(text: Option<&str>) -> Result<EdgeIntent, ApiError> {
        match text {
            None | Some("supersedes") => Ok(EdgeIntent::Supersedes),
            Some("updates") => Ok(EdgeIntent::Updates),
            Some(_) => Err(ApiError::invalid_input(
                "edgeIntent must be supersedes or updates",
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            EdgeIntent::Supersedes => "supersedes",
            EdgeIntent::Updates => "updates",
        }
    }
}

/// What a resolve answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transitioned {
    /// The commitment id; for a blocker, the blocker memory's id.
    pub commitment_id: Uuid,
    pub status: String,
    pub changed: bool,
}

fn conflict(detail: &str) -> ApiError {
    ApiError::conflict(detail)
}

/// What every statement of one write shares: the tenant, who acted, the run stamp's payload
/// (on each event) and the instant. Its methods run on the write's transaction.
struct Writer<'a> {
    tenant_id: Uuid,
    actor: ActorKind,
    payload: Option<&'a serde_json::Value>,
    now: DateTime<Utc>,
}

impl<'a> Writer<'a> {
    fn new(call: &CallContext, actor: ActorKind, payload: Option<&'a serde_json::Value>) -> Self {
        Writer {
            tenant_id: call.tenant_id,
            actor,
            payload,
            now: call.now,
        }
    }

    /// Records a `kind` event on `memory_id`.
    async fn record(
        &self,
        connection: &mut PgConnection,
        memory_id: Uuid,
        kind: EventKind,
    ) -> Result<(), ApiError> {
        events::insert(
            connection,
            self.tenant_id,
            memory_id,
            kind,
            self.actor,
            self.payload,
            self.now,
        )
        .await?;
        Ok(())
    }

    /// Inserts the commitment of `memory_id` at `status`; answers its id.
    async fn insert_commitment(
        &self,
        connection: &mut PgConnection,
        memory_id: Uuid,
        status: CommitmentStatus,
        due_at: Option<DateTime<Utc>>,
    ) -> Result<Uuid, ApiError> {
        memories::insert_commitment(
            connection,
            self.tenant_id,
            memory_id,
            status,
            due_at,
            self.now,
        )
        .await
    }

    /// Moves `commitment` (of `memory_id`) to `target` and records `kind` on the memory.
    async fn move_commitment(
        &self,
        connection: &mut PgConnection,
        memory_id: Uuid,
        commitment: &CommitmentRow,
        target: CommitmentStatus,
        kind: EventKind,
    ) -> Result<(), ApiError> {
        // The caller holds the commitment's lock and read its status under it, so the status
        // cannot have moved; if it did, nothing is recorded for a move that did not happen.
        let moved = memories::set_commitment_status(
            connection,
            self.tenant_id,
            commitment.id,
            commitment.status,
            target,
            self.now,
        )
        .await?;
        if !moved {
            return Err(conflict("the commitment changed concurrently"));
        }
        self.record(connection, memory_id, kind).await
    }

    /// Moves an open memory to archived; false when it was no longer open. The caller records
    /// the `archive` event.
    async fn archive(
        &self,
        connection: &mut PgConnection,
        memory_id: Uuid,
    ) -> Result<bool, ApiError> {
        memories::set_status(
            connection,
            self.tenant_id,
            memory_id,
            MemoryStatus::Open,
            MemoryStatus::Archived,
            self.now,
        )
        .await
    }
}

impl Provenance {
    /// Resolves the write's session provenance (attach, resurrect, or the single-open
    /// default): the run its events are stamped with, if any.
    async fn stamp(
        &self,
        call: &CallContext,
        provenance: WriteProvenance,
        project: Option<&str>,
    ) -> Result<Option<Uuid>, ApiError> {
        self.link
            .stamp(&call.onward(&self.clock), provenance, project)
            .await
    }

    /// Writes a new memory (with its commitment when it is one) and its `create` event.
    pub async fn remember(
        &self,
        call: &CallContext,
        memory: &NewMemory,
        actor: ActorKind,
        provenance: WriteProvenance,
    ) -> Result<Written, ApiError> {
        let stamp = self
            .stamp(call, provenance, memory.project.as_deref())
            .await?;
        let payload = link::payload(stamp);
        let writer = Writer::new(call, actor, payload.as_ref());
        let (tenant_id, now) = (call.tenant_id, call.now);
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let id = Uuid::now_v7();
        memories::insert(&mut transaction, tenant_id, id, memory, None, now).await?;
        let commitment_id = if memory.memory_type == MemoryType::Commitment {
            Some(
                writer
                    .insert_commitment(&mut transaction, id, CommitmentStatus::Open, memory.due_at)
                    .await?,
            )
        } else {
            None
        };
        writer
            .record(&mut transaction, id, EventKind::Create)
            .await?;
        transaction.commit().await?;
        Ok(Written {
            memory_id: id,
            commitment_id,
            stamp,
        })
    }

    /// Creates the successor and supersedes the predecessor; a live commitment on the
    /// predecessor is carried (resolved, status moved to the successor) or demoted (expired).
    pub async fn revise(
        &self,
        call: &CallContext,
        predecessor_id: Uuid,
        memory: &NewMemory,
        edge_intent: EdgeIntent,
        actor: ActorKind,
        provenance: WriteProvenance,
    ) -> Result<Written, ApiError> {
        let predecessor = self.memory(call.tenant_id, predecessor_id).await?;
        if predecessor.status != MemoryStatus::Open {
            return Err(conflict(
                "the predecessor is already superseded or archived",
            ));
        }
        let stamp = self
            .stamp(call, provenance, memory.project.as_deref())
            .await?;
        let payload = link::payload(stamp);
        let writer = Writer::new(call, actor, payload.as_ref());
        let (tenant_id, now) = (call.tenant_id, call.now);
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let predecessor = memories::lock(&mut transaction, tenant_id, predecessor_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no memory with that id"))?;
        let successor_id = Uuid::now_v7();
        if !memories::supersede(
            &mut transaction,
            tenant_id,
            predecessor_id,
            successor_id,
            now,
        )
        .await?
        {
            return Err(conflict(
                "the predecessor is already superseded or archived",
            ));
        }
        let lineage = Lineage {
            predecessor_id,
            edge_intent: edge_intent.as_str(),
        };
        memories::insert(
            &mut transaction,
            tenant_id,
            successor_id,
            memory,
            Some(lineage),
            now,
        )
        .await?;
        let predecessor_commitment = predecessor.commitment.as_ref();
        let carry = lifecycle::decide_carry(
            predecessor_commitment.map(|commitment| commitment.status),
            memory.memory_type,
        );
        let commitment_id = if memory.memory_type == MemoryType::Commitment {
            let (status, due_at) = match carry {
                CarryDecision::Carry { status } => (
                    status,
                    memory
                        .due_at
                        .or(predecessor_commitment.and_then(|commitment| commitment.due_at)),
                ),
                _ => (CommitmentStatus::Open, memory.due_at),
            };
            Some(
                writer
                    .insert_commitment(&mut transaction, successor_id, status, due_at)
                    .await?,
            )
        } else {
            None
        };
        writer
            .record(&mut transaction, successor_id, EventKind::Create)
            .await?;
        writer
            .record(&mut transaction, predecessor_id, EventKind::Supersede)
            .await?;
        if let Some(commitment) = predecessor_commitment {
            let implicit = match carry {
                CarryDecision::Carry { .. } => Some(CommitmentStatus::Resolved),
                CarryDecision::Demote => Some(CommitmentStatus::Expired),
                CarryDecision::Nothing => None,
            };
            if let Some(target) = implicit {
                let kind = lifecycle::event_for(target);
                writer
                    .move_commitment(&mut transaction, predecessor_id, commitment, target, kind)
                    .await?;
            }
        }
        transaction.commit().await?;
        Ok(Written {
            memory_id: successor_id,
            commitment_id,
            stamp,
        })
    }

    /// Moves a commitment to `target` (or archives a blocker). Already at the target is a 200
    /// no-op that only checks a supplied run id's ownership: no attach, no lease refresh.
    pub async fn transition(
        &self,
        call: &CallContext,
        memory_id: Uuid,
        target: CommitmentStatus,
        actor: ActorKind,
        provenance: WriteProvenance,
    ) -> Result<Transitioned, ApiError> {
        let memory = self.memory(call.tenant_id, memory_id).await?;
        let decision = lifecycle::decide_transition(
            memory.memory_type,
            memory.status,
            memory
                .commitment
                .as_ref()
                .map(|commitment| commitment.status),
            target,
        );
        let answer_id = memory
            .commitment
            .as_ref()
            .map_or(memory.id, |commitment| commitment.id);
        let status_after = |decision: TransitionDecision| match decision {
            TransitionDecision::ArchiveBlocker | TransitionDecision::NoOp
                if memory.memory_type == MemoryType::Blocker =>
            {
                MemoryStatus::Archived.as_str().to_string()
            }
            _ => target.as_str().to_string(),
        };
        match decision {
            TransitionDecision::NoCommitment => {
                return Err(ApiError::not_found("that memory has no commitment"));
            }
            TransitionDecision::Invalid => {
                return Err(ApiError::new(
                    ErrorCode::InvalidTransition,
                    "that transition is not allowed from the current status",
                ));
            }
            TransitionDecision::NoOp => {
                if let WriteProvenance::Given(run) = provenance {
                    self.link
                        .check_owned(&call.onward(&self.clock), run)
                        .await?;
                }
                return Ok(Transitioned {
                    commitment_id: answer_id,
                    status: status_after(decision),
                    changed: false,
                });
            }
            TransitionDecision::Commitment { .. } | TransitionDecision::ArchiveBlocker => {}
        }
        // A person acting in the console is not an agent session: without a run given, their
        // write is unattributed rather than stamped with the project's single open run.
        let stamp = if actor == ActorKind::UserDashboard && provenance == WriteProvenance::Default {
            None
        } else {
            self.stamp(call, provenance, memory.project.as_deref())
                .await?
        };
        let payload = link::payload(stamp);
        let writer = Writer::new(call, actor, payload.as_ref());
        let tenant_id = call.tenant_id;
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let locked = memories::lock(&mut transaction, tenant_id, memory_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no memory with that id"))?;
        let current = locked
            .commitment
            .as_ref()
            .map(|commitment| commitment.status);
        let decision =
            lifecycle::decide_transition(locked.memory_type, locked.status, current, target);
        match (decision, &locked.commitment) {
            (TransitionDecision::NoOp, _) => {}
            (TransitionDecision::Commitment { event }, Some(commitment)) => {
                writer
                    .move_commitment(&mut transaction, memory_id, commitment, target, event)
                    .await?;
            }
            (TransitionDecision::ArchiveBlocker, _) => {
                writer.archive(&mut transaction, memory_id).await?;
                writer
                    .record(&mut transaction, memory_id, EventKind::Archive)
                    .await?;
            }
            _ => return Err(conflict("the commitment changed concurrently")),
        }
        transaction.commit().await?;
        Ok(Transitioned {
            commitment_id: answer_id,
            status: status_after(decision),
            changed: decision != TransitionDecision::NoOp,
        })
    }

    /// Archives an open memory. Unknown, archived and superseded memories are 404.
    pub async fn archive(
        &self,
        call: &CallContext,
        memory_id: Uuid,
        actor: ActorKind,
        provenance: WriteProvenance,
    ) -> Result<(), ApiError> {
        let memory = self.memory(call.tenant_id, memory_id).await?;
        let gone = || ApiError::not_found("no open memory with that id");
        if memory.status != MemoryStatus::Open {
            return Err(gone());
        }
        let stamp = self
            .stamp(call, provenance, memory.project.as_deref())
            .await?;
        let payload = link::payload(stamp);
        let writer = Writer::new(call, actor, payload.as_ref());
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        if !writer.archive(&mut transaction, memory_id).await? {
            return Err(gone());
        }
        writer
            .record(&mut transaction, memory_id, EventKind::Archive)
            .await?;
        transaction.commit().await?;
        Ok(())
    }
}
