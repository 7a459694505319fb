//! Persistence of `triage.runs` and `triage.attempts`. Every function takes the caller's
//! transaction, so a decision and its write share one row lock and one commit.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::decide::RunState;
use crate::status::{Holder, Status};

/// Most attempt log entries kept per run (MAX_TRIAGE_ATTEMPT_LOG).
pub const MAX_ATTEMPT_LOG: i64 = 50;

struct RunRecord {
    status: String,
    attempt_id: Option<Uuid>,
    armed_at: Option<DateTime<Utc>>,
    watermark: Vec<Uuid>,
}

/// Who holds a run's attempt (`None` when no attempt was ever taken).
#[tracing::instrument(name = "db.triage.holder", skip_all)]
pub async fn holder(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
) -> Result<Option<String>, ApiError> {
    let holder = sqlx::query_scalar!(
        "SELECT attempt_holder FROM triage.runs WHERE tenant_id = $1 AND session_run_id = $2",
        tenant_id,
        run_id,
    )
    .fetch_optional(connection)
    .await?;
    Ok(holder.flatten())
}

/// A closer pass's key as triage sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosePass {
    pub tenant_id: Uuid,
    pub run_id: Uuid,
    pub epoch: i64,
}

/// The closer's claim as one compare-and-set: a new attempt id held by the closer at `epoch`,
/// a pending handshake retired to expired, only if the attempt is still the one observed and
/// the status is claimable. True when it won.
#[tracing::instrument(name = "db.triage.claim", skip_all)]
pub async fn claim(
    connection: &mut PgConnection,
    pass: ClosePass,
    observed_attempt: Option<Uuid>,
    new_attempt: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    let ClosePass {
        tenant_id,
        run_id,
        epoch,
    } = pass;
    let result = sqlx::query!(
        "UPDATE triage.runs \
         SET attempt_id = $4, attempt_holder = 'closer', claim_epoch = $5, updated_at = $6, \
             status = CASE WHEN status = 'pending' THEN 'expired' ELSE status END \
         WHERE tenant_id = $1 AND session_run_id = $2 \
           AND attempt_id IS NOT DISTINCT FROM $3 \
           AND status IN ('idle', 'pending', 'expired', 'completed')",
        tenant_id,
        run_id,
        observed_attempt,
        new_attempt,
        epoch,
        now,
    )
    .execute(connection)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// The closer's write-back: terminal status and watermark, only while the closer still holds
/// `attempt` at `epoch`. True when it was written.
#[tracing::instrument(name = "db.triage.finish_close", skip_all)]
pub async fn finish_close(
    connection: &mut PgConnection,
    pass: ClosePass,
    attempt: Uuid,
    status: Status,
    watermark: &[Uuid],
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    let ClosePass {
        tenant_id,
        run_id,
        epoch,
    } = pass;
    let result = sqlx::query!(
        "UPDATE triage.runs SET status = $5, watermark = $6, updated_at = $7 \
         WHERE tenant_id = $1 AND session_run_id = $2 AND attempt_id = $3 \
           AND attempt_holder = 'closer' AND claim_epoch = $4",
        tenant_id,
        run_id,
        attempt,
        epoch,
        status.as_str(),
        watermark,
        now,
    )
    .execute(connection)
    .await?;
    Ok(result.rows_affected() == 1)
}

impl RunRecord {
    fn into_state(self) -> Result<RunState, ApiError> {
        Ok(RunState {
            status: Status::parse(&self.status)
                .ok_or_else(|| ApiError::internal("stored triage status is unknown"))?,
            attempt_id: self.attempt_id,
            armed_at: self.armed_at,
            watermark: self.watermark,
        })
    }
}

/// The two reads of one run's row: `$name` (traced as `$span`), the statement ending in
/// `$lock`.
macro_rules! run_read {
    ($(#[doc = $doc:literal])* $name:ident, $span:literal, $lock:literal) => {
        $(#[doc = $doc])*
        #[tracing::instrument(name = $span, skip_all)]
        pub async fn $name(
            connection: &mut PgConnection,
            tenant_id: Uuid,
            run_id: Uuid,
        ) -> Result<Option<RunState>, ApiError> {
            let record = sqlx::query_as!(
                RunRecord,
                "SELECT status, attempt_id, armed_at, watermark FROM triage.runs \
                 WHERE tenant_id = $1 AND session_run_id = $2"
                    + $lock,
                tenant_id,
                run_id,
            )
            .fetch_optional(connection)
            .await?;
            record.map(RunRecord::into_state).transpose()
        }
    };
}

run_read!(
    /// A run's triage row; `None` when triage has never seen the run.
    find,
    "db.triage.find_run",
    ""
);
run_read!(
    /// The row, locked for the transaction.
    lock,
    "db.triage.lock_run",
    " FOR UPDATE"
);

/// A stored run as the batch read sees it: its row and the attempts ever armed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRun {
    pub run_id: Uuid,
    pub state: RunState,
    pub attempts_armed: i64,
}

/// The rows of those of `run_ids` triage has seen for the tenant, in no particular order: one
/// primary-key lookup with `= ANY`, whatever the statistics say.
#[tracing::instrument(name = "db.triage.find_runs", skip_all, fields(requested = run_ids.len()))]
pub async fn find_many(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_ids: &[Uuid],
) -> Result<Vec<FoundRun>, ApiError> {
    let records = sqlx::query!(
        "SELECT session_run_id, attempts_armed, status, attempt_id, armed_at, watermark \
         FROM triage.runs WHERE tenant_id = $1 AND session_run_id = ANY($2::uuid[])",
        tenant_id,
        run_ids,
    )
    .fetch_all(connection)
    .await?;
    records
        .into_iter()
        .map(|record| {
            let run = RunRecord {
                status: record.status,
                attempt_id: record.attempt_id,
                armed_at: record.armed_at,
                watermark: record.watermark,
            };
            Ok(FoundRun {
                run_id: record.session_run_id,
                state: run.into_state()?,
                attempts_armed: i64::from(record.attempts_armed),
            })
        })
        .collect()
}

/// Inserts the first row of a run (idle, empty watermark) unless one exists; either way the row
/// exists afterwards and can be locked.
#[tracing::instrument(name = "db.triage.ensure_run", skip_all)]
pub async fn ensure(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "INSERT INTO triage.runs (tenant_id, session_run_id, status, updated_at) \
         VALUES ($1, $2, 'idle', $3) ON CONFLICT ON CONSTRAINT runs_pkey DO NOTHING",
        tenant_id,
        run_id,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Writes a locked row's new state.
#[tracing::instrument(name = "db.triage.save_run", skip_all)]
pub async fn save(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    state: &RunState,
    holder: Option<Holder>,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "UPDATE triage.runs SET status = $3, attempt_id = $4, attempt_holder = $5, armed_at = $6, \
           watermark = $7, updated_at = $8 \
         WHERE tenant_id = $1 AND session_run_id = $2",
        tenant_id,
        run_id,
        state.status.as_str(),
        state.attempt_id,
        holder.map(Holder::as_str),
        state.armed_at,
        &state.watermark,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Logs a new hook attempt, counts it, and trims the log to its newest entries.
#[tracing::instrument(name = "db.triage.append_attempt", skip_all)]
pub async fn append_attempt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    attempt_id: Uuid,
    armed_at: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "INSERT INTO triage.attempts (tenant_id, session_run_id, attempt_id, armed_at) \
         VALUES ($1, $2, $3, $4)",
        tenant_id,
        run_id,
        attempt_id,
        armed_at,
    )
    .execute(&mut *connection)
    .await?;
    sqlx::query!(
        "UPDATE triage.runs SET attempts_armed = attempts_armed + 1 \
         WHERE tenant_id = $1 AND session_run_id = $2",
        tenant_id,
        run_id,
    )
    .execute(&mut *connection)
    .await?;
    sqlx::query!(
        "DELETE FROM triage.attempts WHERE tenant_id = $1 AND session_run_id = $2 \
           AND attempt_id NOT IN ( \
             SELECT attempt_id FROM triage.attempts WHERE tenant_id = $1 AND session_run_id = $2 \
             ORDER BY armed_at DESC, attempt_id DESC LIMIT $3)",
        tenant_id,
        run_id,
        MAX_ATTEMPT_LOG,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Records the outcome of the attempt a complete finished.
#[tracing::instrument(name = "db.triage.finalize_attempt", skip_all)]
pub async fn finalize_attempt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    attempt_id: Uuid,
    outcome: Status,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "UPDATE triage.attempts SET finalized_at = $4, outcome = $5 \
         WHERE tenant_id = $1 AND session_run_id = $2 AND attempt_id = $3",
        tenant_id,
        run_id,
        attempt_id,
        now,
        outcome.as_str(),
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// One entry of the attempt log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub attempt_id: Uuid,
    pub armed_at: DateTime<Utc>,
    pub finalized_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
}

/// The attempt log, oldest first, and how many attempts were ever armed.
#[tracing::instrument(name = "db.triage.attempts", skip_all)]
pub async fn attempts(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
) -> Result<(Vec<AttemptRow>, i64), ApiError> {
    let count = sqlx::query_scalar!(
        "SELECT attempts_armed FROM triage.runs WHERE tenant_id = $1 AND session_run_id = $2",
        tenant_id,
        run_id,
    )
    .fetch_optional(&mut *connection)
    .await?;
    let rows = sqlx::query_as!(
        AttemptRow,
        "SELECT attempt_id, armed_at, finalized_at, outcome FROM triage.attempts \
         WHERE tenant_id = $1 AND session_run_id = $2 ORDER BY armed_at, attempt_id",
        tenant_id,
        run_id,
    )
    .fetch_all(connection)
    .await?;
    Ok((rows, i64::from(count.unwrap_or(0))))
}
