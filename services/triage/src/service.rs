//! The handshake: gather facts (registry's row, provenance's listing), lock triage's row,
//! decide with the pure functions, apply, commit.
//!
//! Facts from other contexts are read before the row lock; the decision is re-made under the
//! lock, so concurrent begins on one run arm at most one attempt. A listing a moment older than
//! the lock is the seed's disclosed residual: a write committing in between lands outside the
//! watermark and re-arms the next Stop.

use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::Clock;
use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;

use crate::debrief::{self, DebriefData};
use crate::decide::{
    self, BeginDecision, BeginFacts, CompleteDecision, Listing, RunState, Thresholds,
};
use crate::links::Links;
use crate::status::{Holder, Reason, Status};
use crate::store::{self, AttemptRow};

/// Triage's state.
#[derive(Debug, Clone)]
pub struct Triage {
    pool: PgPool,
    links: Links,
    clock: Clock,
    thresholds: Thresholds,
}

/// What a begin answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Began {
    pub run_id: Uuid,
    pub armed: bool,
    pub attempt_id: Option<Uuid>,
    pub status: Status,
    pub reason: Option<Reason>,
}

/// What a complete answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub run_id: Uuid,
    pub status: Status,
    pub event_count: usize,
    pub since_begin_count: usize,
    pub truncated: bool,
}

/// Largest `turnCount` (MAX_TRIAGE_TURN_COUNT).
pub const MAX_TURN_COUNT: u32 = 100_000;

impl Triage {
    pub fn new(pool: PgPool, links: Links, clock: Clock, thresholds: Thresholds) -> Triage {
        Triage {
            pool,
            links,
            clock,
            thresholds,
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) fn links(&self) -> &Links {
        &self.links
    }

    /// Table F.
    pub async fn begin(
        &self,
        call: &CallContext,
        agent: &str,
        session_id: &str,
        turn_count: Option<u32>,
        stop_hook_active: bool,
    ) -> Result<Began, ApiError> {
        let turn_count = turn_count.unwrap_or(0);
        if turn_count > MAX_TURN_COUNT {
            return Err(ApiError::invalid_input("turnCount must be 0 to 100000"));
        }
        let onward = call.onward(&self.clock);
        let session = self
            .links
            .session_by_key(&onward, agent, session_id)
            .await?;
        let listing = self.links.listing(&onward, session.run_id).await?;
        let facts = BeginFacts {
            live: session.live,
            opened_at: session.opened_at,
            now: call.now,
            turn_count,
            stop_hook_active,
            listing,
        };
        let (tenant_id, run_id) = (call.tenant_id, session.run_id);
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let mut run = store::lock(&mut transaction, tenant_id, run_id).await?;
        let mut decision = decide::decide_begin(
            run.as_ref().unwrap_or(&RunState::never_seen()),
            &facts,
            &self.thresholds,
        );
        let writes = !matches!(decision, BeginDecision::Decline { .. });
        if writes && run.is_none() {
            // A run triage has never seen has no row to lock: create it (a concurrent begin may
            // have just done so), lock it, and decide again against what is really there.
            store::ensure(&mut transaction, tenant_id, run_id, call.now).await?;
            run = store::lock(&mut transaction, tenant_id, run_id).await?;
            decision = decide::decide_begin(
                run.as_ref().unwrap_or(&RunState::never_seen()),
                &facts,
                &self.thresholds,
            );
        }
        let run = run.unwrap_or_else(RunState::never_seen);
        let answer = |armed, attempt_id, status, reason| Began {
            run_id,
            armed,
            attempt_id,
            status,
            reason,
        };
        let began = match decision {
            BeginDecision::Decline { reason, hand_back } => {
                let attempt = if hand_back { run.attempt_id } else { None };
                answer(
                    false,
                    attempt,
                    decide::effective_status(&run, &facts.listing),
                    Some(reason),
                )
            }
            BeginDecision::Overflow => {
                let next = RunState {
                    status: Status::Overflowed,
                    ..run
                };
                store::save(&mut transaction, tenant_id, run_id, &next, None, call.now).await?;
                answer(false, None, Status::Overflowed, Some(Reason::Overflowed))
            }
            BeginDecision::Arm => {
                let attempt_id = Uuid::now_v7();
                let next = RunState {
                    status: Status::Pending,
                    attempt_id: Some(attempt_id),
                    armed_at: Some(call.now),
                    watermark: facts.listing.ids.clone(),
                };
                store::save(
                    &mut transaction,
                    tenant_id,
                    run_id,
                    &next,
                    Some(Holder::Hook),
                    call.now,
                )
                .await?;
                store::append_attempt(&mut transaction, tenant_id, run_id, attempt_id, call.now)
                    .await?;
                answer(true, Some(attempt_id), Status::Pending, None)
            }
        };
        transaction.commit().await?;
        count_begin(&began);
        tracing::info!(
            armed = began.armed,
            reason = began.reason.map(Reason::as_str),
            status = began.status.as_str(),
            "triage begin"
        );
        Ok(began)
    }

    /// Table G.
    pub async fn complete(
        &self,
        call: &CallContext,
        agent: &str,
        session_id: &str,
        attempt_id: Uuid,
    ) -> Result<Completed, ApiError> {
        let onward = call.onward(&self.clock);
        let session = self
            .links
            .session_by_key(&onward, agent, session_id)
            .await?;
        let (tenant_id, run_id) = (call.tenant_id, session.run_id);
        let conflict = || ApiError::conflict("no pending attempt with that id");
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let current = store::find(&mut transaction, tenant_id, run_id).await?;
        transaction.commit().await?;
        // G1 before any listing.
        let pending = current
            .is_some_and(|run| run.status == Status::Pending && run.attempt_id == Some(attempt_id));
        if !pending {
            return Err(conflict());
        }
        let listing = self.links.listing(&onward, run_id).await?;
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let run = store::lock(&mut transaction, tenant_id, run_id)
            .await?
            .ok_or_else(conflict)?;
        let CompleteDecision::Finish(finish) = decide::decide_complete(&run, attempt_id, &listing)
        else {
            return Err(conflict());
        };
        let next = RunState {
            status: finish.status,
            attempt_id: run.attempt_id,
            armed_at: run.armed_at,
            watermark: finish.watermark.clone(),
        };
        store::save(
            &mut transaction,
            tenant_id,
            run_id,
            &next,
            Some(Holder::Hook),
            call.now,
        )
        .await?;
        store::finalize_attempt(
            &mut transaction,
            tenant_id,
            run_id,
            attempt_id,
            finish.status,
            call.now,
        )
        .await?;
        transaction.commit().await?;
        tracing::info!(
            status = finish.status.as_str(),
            since_begin = finish.since_begin_count,
            "triage complete"
        );
        Ok(Completed {
            run_id,
            status: finish.status,
            event_count: finish.event_count,
            since_begin_count: finish.since_begin_count,
            truncated: finish.truncated,
        })
    }

    /// A run's effective status (the caller has established the run is the tenant's).
    pub async fn state(&self, call: &CallContext, run_id: Uuid) -> Result<Status, ApiError> {
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let run = store::find(&mut transaction, call.tenant_id, run_id).await?;
        transaction.commit().await?;
        let run = run.unwrap_or_else(RunState::never_seen);
        if run.status != Status::Completed {
            return Ok(run.status);
        }
        let listing: Listing = self
            .links
            .listing(&call.onward(&self.clock), run_id)
            .await?;
        Ok(decide::effective_status(&run, &listing))
    }

    /// A run's attempt log; NOT_FOUND when the run is not the tenant's.
    pub async fn attempts(
        &self,
        call: &CallContext,
        run_id: Uuid,
    ) -> Result<(Vec<AttemptRow>, i64), ApiError> {
        self.links
            .session_by_id(&call.onward(&self.clock), run_id)
            .await?;
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let log = store::attempts(&mut transaction, call.tenant_id, run_id).await?;
        transaction.commit().await?;
        Ok(log)
    }

    /// The debrief prompt. Explicit facets win over the run's; a run's briefed rows come only
    /// when a natural key is given (404 when it names no run). Never refreshes a lease.
    pub async fn debrief(
        &self,
        call: &CallContext,
        scope: Option<String>,
        project: Option<String>,
        key: Option<(String, String)>,
    ) -> Result<String, ApiError> {
        let data = match key {
            None => DebriefData {
                scope,
                project,
                briefed: None,
            },
            Some((agent, session_id)) => {
                let session = self
                    .links
                    .session_by_key(&call.onward(&self.clock), &agent, &session_id)
                    .await?;
                DebriefData {
                    scope: scope.or(session.scope),
                    project: project.or(session.project),
                    briefed: Some(session.briefed),
                }
            }
        };
        Ok(debrief::render(&data))
    }
}

/// `baton.triage.begins`: every answered begin, by whether it armed and, when not, why.
fn count_begin(began: &Began) {
    use baton_kit::telemetry::Component;
    use baton_kit::telemetry::component::PerComponent;
    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Counter;
    static COUNTER: PerComponent<Counter<u64>> = PerComponent::new();
    let counter = COUNTER.get_or_init(Component::Triage, |meter| {
        meter
            .u64_counter("baton.triage.begins")
            .with_unit("{begin}")
            .with_description("Triage begins, by outcome and reason")
            .build()
    });
    counter.add(
        1,
        &[
            KeyValue::new("baton.triage.armed", began.armed),
            KeyValue::new(
                "baton.triage.reason",
                began.reason.map_or("armed", Reason::as_str),
            ),
        ],
    );
}
