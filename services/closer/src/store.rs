//! Persistence of `closer.passes` and `closer.inbox`.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::outcome::{self, Outcome};

/// A pass as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassRow {
    pub activation_epoch: i64,
    pub state: String,
    pub outcome: Option<String>,
    pub attempt_id: Option<Uuid>,
    pub resolved: i32,
    pub rejected: i32,
    pub failures: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// A `query_as!` reading [`PassRow`]s of one run: `$1` tenant, `$2` run, then the rest of the
/// `WHERE` clause written as a literal (its own parameters from `$3`).
macro_rules! select_passes {
    ($rest:literal $(, $arg:expr)* $(,)?) => {
        sqlx::query_as!(
            PassRow,
            "SELECT activation_epoch, state, outcome, attempt_id, resolved, rejected, failures, \
               next_attempt_at FROM closer.passes WHERE tenant_id = $1 AND session_run_id = $2 "
                + $rest
            $(, $arg)*
        )
    };
}

/// The pass for (run, epoch), created `running` if it did not exist.
pub async fn open(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    epoch: i64,
    now: DateTime<Utc>,
) -> Result<PassRow, ApiError> {
    sqlx::query!(
        "INSERT INTO closer.passes (tenant_id, session_run_id, activation_epoch, state, \
           created_at, updated_at) \
         VALUES ($1, $2, $3, 'running', $4, $4) ON CONFLICT ON CONSTRAINT passes_pkey DO NOTHING",
        tenant_id,
        run_id,
        epoch,
        now,
    )
    .execute(&mut *connection)
    .await?;
    Ok(
        select_passes!("AND activation_epoch = $3", tenant_id, run_id, epoch)
            .fetch_one(connection)
            .await?,
    )
}

/// Records the attempt this pass claimed, before it acts under it.
pub async fn set_attempt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    epoch: i64,
    attempt: Uuid,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "UPDATE closer.passes SET attempt_id = $4, state = 'running', updated_at = $5 \
         WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3",
        tenant_id,
        run_id,
        epoch,
        attempt,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Settles the pass: a final outcome, or a failure scheduled for retry after backoff.
pub async fn settle(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
    epoch: i64,
    result: &Settled,
    now: DateTime<Utc>,
    backoff: outcome::Backoff,
) -> Result<(), ApiError> {
    if result.outcome.is_final() {
        sqlx::query!(
            "UPDATE closer.passes SET state = 'finished', outcome = $4, resolved = $5, \
               rejected = $6, next_attempt_at = NULL, updated_at = $7 \
             WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3",
            tenant_id,
            run_id,
            epoch,
            result.outcome.as_str(),
            result.resolved as i32,
            result.rejected as i32,
            now,
        )
        .execute(connection)
        .await?;
        return Ok(());
    }
    let failures = sqlx::query_scalar!(
        "SELECT failures FROM closer.passes \
         WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3",
        tenant_id,
        run_id,
        epoch,
    )
    .fetch_one(&mut *connection)
    .await?;
    let delay = chrono::Duration::from_std(backoff.delay(failures + 1))
        .unwrap_or(chrono::Duration::hours(4));
    let error = result
        .error
        .as_deref()
        .map(|error| error.chars().take(300).collect::<String>());
    sqlx::query!(
        "UPDATE closer.passes SET state = 'failed', outcome = $4, failures = failures + 1, \
           next_attempt_at = $5, last_error = $6, resolved = resolved + $7, updated_at = $8 \
         WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3",
        tenant_id,
        run_id,
        epoch,
        result.outcome.as_str(),
        now + delay,
        error,
        result.resolved as i32,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// How a pass settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub outcome: Outcome,
    pub resolved: usize,
    pub rejected: usize,
    /// A bounded error kind for operators (never content).
    pub error: Option<String>,
}

impl Settled {
    pub fn of(outcome: Outcome) -> Settled {
        Settled {
            outcome,
            resolved: 0,
            rejected: 0,
            error: None,
        }
    }
}

/// A run's passes, oldest epoch first.
pub async fn list(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
) -> Result<Vec<PassRow>, ApiError> {
    Ok(
        select_passes!("ORDER BY activation_epoch", tenant_id, run_id)
            .fetch_all(connection)
            .await?,
    )
}

/// A pass due for another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub tenant_id: Uuid,
    pub session_run_id: Uuid,
    pub activation_epoch: i64,
}

/// Failed passes whose backoff ran out, across tenants (maintenance role).
pub async fn due(
    maintenance: &PgPool,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Due>, ApiError> {
    Ok(sqlx::query_as!(
        Due,
        "SELECT tenant_id, session_run_id, activation_epoch FROM closer.passes \
         WHERE state = 'failed' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2",
        now,
        limit,
    )
    .fetch_all(maintenance)
    .await?)
}

/// Whether a message id was already handled.
pub async fn seen(pool: &PgPool, message_id: Uuid) -> Result<bool, ApiError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM closer.inbox WHERE message_id = $1) AS "seen!""#,
        message_id,
    )
    .fetch_one(pool)
    .await?)
}

/// Records a handled message id (idempotent).
pub async fn remember(pool: &PgPool, message_id: Uuid, now: DateTime<Utc>) -> Result<(), ApiError> {
    sqlx::query!(
        "INSERT INTO closer.inbox (message_id, processed_at) VALUES ($1, $2) \
         ON CONFLICT ON CONSTRAINT inbox_pkey DO NOTHING",
        message_id,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}
