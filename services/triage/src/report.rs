//! Debrief nudge counts for the closer's report (`NudgeCounts`): attempts armed since an
//! instant, by outcome, and how many runs were nudged once or more than once.
//!
//! Read from the attempt log, which keeps each run's newest 50 attempts: a run nudged more
//! than 50 times in the window counts 50 (it still counts as repeated).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;

use crate::service::Triage;

/// The counts, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NudgeCounts {
    pub armed: i64,
    pub completed: i64,
    pub expired: i64,
    pub overflowed: i64,
    pub runs: i64,
    pub runs_repeated: i64,
}

#[tracing::instrument(name = "db.triage.nudge_counts", skip_all)]
async fn counts(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    since: DateTime<Utc>,
) -> Result<NudgeCounts, ApiError> {
    // Each count is of a subquery, never null.
    Ok(sqlx::query_as!(
        NudgeCounts,
        r#"WITH window_attempts AS (
             SELECT session_run_id, outcome FROM triage.attempts
             WHERE tenant_id = $1 AND armed_at >= $2),
           per_run AS (SELECT count(*) AS n FROM window_attempts GROUP BY session_run_id)
           SELECT (SELECT count(*) FROM window_attempts) AS "armed!",
             (SELECT count(*) FROM window_attempts WHERE outcome = 'completed') AS "completed!",
             (SELECT count(*) FROM window_attempts WHERE outcome = 'expired') AS "expired!",
             (SELECT count(*) FROM window_attempts WHERE outcome = 'overflowed') AS "overflowed!",
             (SELECT count(*) FROM per_run) AS "runs!",
             (SELECT count(*) FROM per_run WHERE n > 1) AS "runs_repeated!""#,
        tenant_id,
        since,
    )
    .fetch_one(connection)
    .await?)
}

impl Triage {
    /// The tenant's nudge counts since `since`.
    pub async fn nudge_counts(
        &self,
        call: &CallContext,
        since: DateTime<Utc>,
    ) -> Result<NudgeCounts, ApiError> {
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        let counts = counts(&mut transaction, call.tenant_id, since).await?;
        transaction.commit().await?;
        Ok(counts)
    }
}
