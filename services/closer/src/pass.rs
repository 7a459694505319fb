//! One closer pass per (session run, activation epoch): CONTRACT Part 2 table H in order —
//! read, list events, eligibility, nothing-briefed, claim, judge, resolve, finish — fenced on the
//! epoch before the claim, before each resolve and at write-back.
//!
//! Resolve only: every write is a reversible `resolve` as actor `worker`, stamped with the run
//! (pre-resolved provenance: no attach, no resurrection), each preceded by a live re-read of the
//! commitment. A resurrection that lands mid-pass stops the pass before its next resolve and
//! leaves the bookkeeping alone; resolves already made stay (undo them with unresolve). The
//! watermark comes from a listing taken after the resolves, and the excerpt is cleared last,
//! once the verdict is durable.
//!
//! Crash safety: a pass holds a Postgres advisory lock on its key while it runs (released if the
//! process dies), records the attempt it claimed before acting, and on a re-run recognises its
//! own finished write-back. A commitment already resolved is skipped at the live re-read, so a
//! re-run never resolves it twice; one its cut attempt resolved still counts as the pass's
//! (`pass/resolve.rs`).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use opentelemetry::KeyValue;
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::{ApiError, ErrorCode};
use baton_kit::grpc::OutboundCall;

use crate::judge::{BriefedCommitment, Judge, JudgeInput, Verdict, WrittenMemory};
use crate::links::{ClaimAnswer, Links, RunRead, TriageRead};
use crate::metering::{Meter, PassKey};
use crate::outcome::{self, Backoff, Outcome};
use crate::pass_metrics::{judge_tokens, outcomes};
use crate::store::{self, PassRow, Settled};
use crate::verdicts;

mod resolve;

use resolve::Resolve;

/// Most written memories a judge sees.
const MAX_WRITTEN: usize = 50;

/// Runs passes.
#[derive(Debug, Clone)]
pub struct Passes {
    pool: PgPool,
    lock_pool: PgPool,
    links: Links,
    judge: Arc<dyn Judge>,
    meter: Meter,
    backoff: Backoff,
    /// Findings below this confidence stay open (`BATON_CLOSER__MIN_CONFIDENCE`).
    min_confidence: f64,
}

/// Where a pass runs: its key, its instant, the test instant to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassCall {
    pub key: PassKey,
    pub now: DateTime<Utc>,
    pub test_now: Option<String>,
}

impl PassCall {
    fn outbound(&self) -> OutboundCall {
        OutboundCall {
            tenant_id: self.key.tenant_id,
            test_now: self.test_now.clone(),
        }
    }
}

impl Passes {
    /// `lock_pool` holds one connection per running pass (its advisory lock); `pool` does the
    /// pass's own short writes.
    pub fn new(
        pool: PgPool,
        lock_pool: PgPool,
        links: Links,
        judge: Arc<dyn Judge>,
        meter: Meter,
    ) -> Passes {
        Passes {
            pool,
            lock_pool,
            links,
            judge,
            meter,
            backoff: Backoff::default(),
            min_confidence: crate::config::DEFAULT_MIN_CONFIDENCE,
        }
    }

    /// Resolves only findings at or above `min_confidence` (see [`crate::judge::abstain`]).
    pub fn with_min_confidence(mut self, min_confidence: f64) -> Passes {
        self.min_confidence = min_confidence;
        self
    }

    /// Retries refused and failed passes on `backoff` instead of the seed's default.
    pub fn with_backoff(mut self, backoff: Backoff) -> Passes {
        self.backoff = backoff;
        self
    }

    pub fn links(&self) -> &Links {
        &self.links
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Runs the pass for `call.key` unless it already finished or another worker is running it
    /// (`None`). Transient failures are recorded with backoff, not returned.
    pub async fn run(&self, call: &PassCall) -> Result<Option<Settled>, ApiError> {
        let key = call.key;
        let mut lock = begin_tenant(&self.lock_pool, key.tenant_id).await?;
        let locked = sqlx::query_scalar!(
            r#"SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS "locked!""#,
            format!("closer.pass:{}:{}:{}", key.tenant_id, key.run_id, key.epoch),
        )
        .fetch_one(&mut *lock)
        .await?;
        if !locked {
            return Ok(None);
        }
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        let pass = store::open(
            &mut transaction,
            key.tenant_id,
            key.run_id,
            key.epoch,
            call.now,
        )
        .await?;
        transaction.commit().await?;
        if pass.state == "finished" {
            return Ok(None);
        }
        let settled = match self.steps(call, &pass).await {
            Ok(settled) => settled,
            Err(error) => {
                tracing::warn!(
                    error = error.code.as_str(),
                    detail = %error.detail,
                    "closer pass failed; backing off"
                );
                Settled {
                    outcome: Outcome::Failed,
                    resolved: 0,
                    rejected: 0,
                    error: Some(error.code.as_str().to_string()),
                }
            }
        };
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        store::settle(
            &mut transaction,
            key.tenant_id,
            key.run_id,
            key.epoch,
            &settled,
            call.now,
            self.backoff,
        )
        .await?;
        transaction.commit().await?;
        lock.commit().await?;
        outcomes().add(1, &[KeyValue::new("result", settled.outcome.as_str())]);
        tracing::info!(
            outcome = settled.outcome.as_str(),
            resolved = settled.resolved,
            rejected = settled.rejected,
            "closer pass"
        );
        Ok(Some(settled))
    }

    async fn steps(&self, call: &PassCall, pass: &PassRow) -> Result<Settled, ApiError> {
        let (key, outbound) = (call.key, call.outbound());
        let read = match self.links.read(&outbound, key.run_id).await {
            Ok(read) => read,
            Err(error) if error.code == ErrorCode::NotFound => {
                return Ok(Settled::of(Outcome::NotFound));
            }
            Err(error) => return Err(error),
        };
        if read.epoch != key.epoch {
            return Ok(Settled::of(Outcome::Fenced));
        }
        if !read.closed {
            return Ok(Settled::of(Outcome::NotClosed));
        }
        let triage = self.links.triage(&outbound, key.run_id).await?;
        if let Some(recovered) = self.recovered(call, pass, &triage).await? {
            return Ok(recovered);
        }
        let (visible, truncated) = self.links.listing(&outbound, key.run_id).await?;
        if truncated {
            return self
                .settle_unjudged(call, &triage, Outcome::Overflowed)
                .await;
        }
        if !outcome::eligible(&triage.status, &triage.watermark, &visible) {
            return Ok(Settled::of(Outcome::NotEligible));
        }
        if read.briefed.is_empty() {
            return self
                .settle_unjudged(call, &triage, Outcome::NothingBriefed)
                .await;
        }
        let attempt = match self.claim(call, &triage).await? {
            Ok(attempt) => attempt,
            Err(outcome) => return Ok(Settled::of(outcome)),
        };
        self.judge_and_resolve(call, &read, attempt, pass.attempt_id.is_some())
            .await
    }

    /// A re-run after a crash: when triage shows this pass's own write-back, finish the
    /// bookkeeping (the excerpt) and settle as completed.
    async fn recovered(
        &self,
        call: &PassCall,
        pass: &PassRow,
        triage: &TriageRead,
    ) -> Result<Option<Settled>, ApiError> {
        let ours = pass.attempt_id.is_some()
            && triage.attempt_id == pass.attempt_id
            && triage.holder.as_deref() == Some("closer");
        let outcome = match (ours, triage.status.as_str()) {
            (true, "completed") => Outcome::Completed,
            (true, "overflowed") => Outcome::Overflowed,
            _ => return Ok(None),
        };
        if outcome == Outcome::Completed {
            self.links
                .consume_excerpt(&call.outbound(), call.key.run_id, call.key.epoch)
                .await?;
        }
        let mut transaction = begin_tenant(&self.pool, call.key.tenant_id).await?;
        let resolved = verdicts::resolved_count(&mut transaction, call.key).await?;
        transaction.commit().await?;
        Ok(Some(Settled {
            resolved,
            rejected: pass.rejected.max(0) as usize,
            ..Settled::of(outcome)
        }))
    }

    /// Claims the run; `Err(outcome)` when the claim was lost or fenced.
    async fn claim(
        &self,
        call: &PassCall,
        triage: &TriageRead,
    ) -> Result<Result<Uuid, Outcome>, ApiError> {
        let key = call.key;
        let answer = self
            .links
            .claim(&call.outbound(), key.run_id, key.epoch, triage.attempt_id)
            .await?;
        let attempt = match answer {
            ClaimAnswer::Won(attempt) => attempt,
            ClaimAnswer::Lost => return Ok(Err(Outcome::ClaimLost)),
            ClaimAnswer::Fenced => return Ok(Err(Outcome::Fenced)),
        };
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        store::set_attempt(
            &mut transaction,
            key.tenant_id,
            key.run_id,
            key.epoch,
            attempt,
            call.now,
        )
        .await?;
        transaction.commit().await?;
        Ok(Ok(attempt))
    }

    /// Overflowed or nothing briefed: claim and finish without a generation; the excerpt is
    /// kept.
    async fn settle_unjudged(
        &self,
        call: &PassCall,
        triage: &TriageRead,
        outcome: Outcome,
    ) -> Result<Settled, ApiError> {
        let attempt = match self.claim(call, triage).await? {
            Ok(attempt) => attempt,
            Err(lost) => return Ok(Settled::of(lost)),
        };
        let key = call.key;
        let (visible, truncated) = self.links.listing(&call.outbound(), key.run_id).await?;
        let finished = self
            .links
            .finish(
                &call.outbound(),
                key.run_id,
                attempt,
                key.epoch,
                &visible,
                truncated,
            )
            .await?;
        Ok(Settled::of(if finished {
            outcome
        } else {
            Outcome::Fenced
        }))
    }

    /// Judges and resolves; `rerun` when an earlier attempt of this pass claimed the run and
    /// was cut (its resolves may have outlived it).
    async fn judge_and_resolve(
        &self,
        call: &PassCall,
        read: &RunRead,
        attempt: Uuid,
        rerun: bool,
    ) -> Result<Settled, ApiError> {
        let (key, outbound) = (call.key, call.outbound());
        let input = self.input(&outbound, key.run_id, read).await?;
        let briefed: Vec<Uuid> = read.briefed.iter().map(|(id, _, _)| *id).collect();
        let verdict = match self.generate(call, &input).await? {
            Some(verdict) => verdict,
            None => return Ok(Settled::of(Outcome::Refused)),
        };
        let verdict = crate::judge::abstain(verdict, self.min_confidence);
        let (candidates, rejected) = outcome::candidates(&briefed, &verdict.completed());
        let rejected = rejected + verdict.dropped;
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        verdicts::record(
            &mut transaction,
            key,
            self.judge.name(),
            &verdicts::recorded(&briefed, &candidates, &verdict.findings),
            call.now,
        )
        .await?;
        transaction.commit().await?;
        let mut resolved = 0;
        for candidate in candidates {
            match self.resolve_candidate(call, candidate, rerun).await? {
                Resolve::Fenced => {
                    return Ok(Settled {
                        resolved,
                        rejected,
                        ..Settled::of(Outcome::Fenced)
                    });
                }
                Resolve::Changed => resolved += 1,
                Resolve::Unchanged => {}
            }
        }
        let (visible, truncated) = self.links.listing(&outbound, key.run_id).await?;
        let finished = self
            .links
            .finish(
                &outbound, key.run_id, attempt, key.epoch, &visible, truncated,
            )
            .await?;
        if !finished {
            return Ok(Settled {
                resolved,
                rejected,
                ..Settled::of(Outcome::Fenced)
            });
        }
        let outcome = if truncated {
            Outcome::Overflowed
        } else {
            self.links
                .consume_excerpt(&outbound, key.run_id, key.epoch)
                .await?;
            Outcome::Completed
        };
        // Counted from the verdicts, not this attempt's own resolves: a re-run after a kill
        // mid-resolve skips the commitments the cut attempt already resolved, and the pass
        // reports every commitment it resolved across its attempts.
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        let resolved = resolved.max(verdicts::resolved_count(&mut transaction, key).await?);
        transaction.commit().await?;
        Ok(Settled {
            resolved,
            rejected,
            ..Settled::of(outcome)
        })
    }

    /// One metered generation; `None` when refused over budget (nothing billed).
    async fn generate(
        &self,
        call: &PassCall,
        input: &JudgeInput,
    ) -> Result<Option<Verdict>, ApiError> {
        let tokens = self.judge.reservation(input);
        let reservation = if tokens > 0 {
            match self.meter.reserve(call.key, tokens, call.now).await? {
                Some(reservation) => Some(reservation),
                None => return Ok(None),
            }
        } else {
            None
        };
        let verdict = self.judge.judge(input).await;
        if let Some(reservation) = reservation {
            let used = verdict.as_ref().ok().map(|verdict| verdict.tokens_used);
            self.meter
                .settle(call.key, reservation, used, call.now)
                .await?;
            if let Some(tokens) = used {
                judge_tokens().add(
                    u64::try_from(tokens).unwrap_or(0),
                    &[
                        KeyValue::new("kind", "total"),
                        KeyValue::new("baton.judge", self.judge.name()),
                    ],
                );
            }
        }
        let verdict = verdict.map_err(|error| {
            tracing::warn!(judge = self.judge.name(), error = %error, "judge gave no verdict");
            ApiError::unavailable("judge gave no verdict")
        })?;
        Ok(Some(verdict))
    }

    /// The judge's input: each briefed commitment's live content, the excerpt, the memories the
    /// run wrote (bounded).
    async fn input(
        &self,
        outbound: &OutboundCall,
        run_id: Uuid,
        read: &RunRead,
    ) -> Result<JudgeInput, ApiError> {
        let mut briefed = Vec::with_capacity(read.briefed.len());
        for (id, topic, status) in &read.briefed {
            if let Some(memory) = self.links.memory(outbound, *id).await? {
                briefed.push(BriefedCommitment {
                    id: *id,
                    topic: topic.clone(),
                    status: status.clone(),
                    content: memory.content,
                    project: memory.project,
                });
            }
        }
        let briefed_ids: Vec<Uuid> = read.briefed.iter().map(|(id, _, _)| *id).collect();
        let mut written = Vec::new();
        for memory_id in self
            .links
            .written_memory_ids(outbound, run_id, MAX_WRITTEN)
            .await?
        {
            if briefed_ids.contains(&memory_id) {
                continue;
            }
            if let Some(memory) = self.links.memory(outbound, memory_id).await? {
                written.push(WrittenMemory {
                    id: memory_id,
                    memory_type: memory.memory_type,
                    topic: memory.topic,
                    content: memory.content,
                    project: memory.project,
                });
            }
        }
        Ok(JudgeInput {
            briefed,
            excerpt: read.excerpt.clone(),
            written,
            session_project: read.project.clone(),
        })
    }
}
