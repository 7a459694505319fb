//! Retention of the hook-delivery record (seed 002's signed policy: 90 days by default).
//!
//! - Only `usage.hook_deliveries` is pruned: rows received before `now − days`. Sessions,
//!   agents, edges, token usage and rollups are never touched (token usage is kept).
//! - `days = 0` keeps everything: nothing runs and nothing is journalled.
//! - Deletion runs as the maintenance role in bounded windows of `batch` rows per statement,
//!   each its own transaction, so no statement holds many locks or a long snapshot.
//! - Each run journals its cutoff, the rows deleted, the statements used and the number of
//!   sessions whose deliveries straddle the cutoff (counted before deleting: those sessions
//!   keep a partial record and say so).
//! - The service runs it every interval (not under the test clock, where "now" belongs to
//!   each request); `baton usage retention` runs it once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use baton_kit::shutdown::Shutdown;

use crate::config::RetentionConfig;

/// One run's journal line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub cutoff: DateTime<Utc>,
    pub deliveries_deleted: u64,
    pub statements: u32,
    pub sessions_straddling: u64,
}

/// The cutoff for `now`, or `None` when retention keeps everything (pure).
pub fn cutoff(config: &RetentionConfig, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    (config.days > 0).then(|| now - chrono::Duration::days(i64::from(config.days)))
}

/// Runs retention once as the maintenance role.
pub async fn run_once(
    maintenance: &PgPool,
    config: &RetentionConfig,
    now: DateTime<Utc>,
) -> Result<Option<Journal>, sqlx::Error> {
    let Some(cutoff) = cutoff(config, now) else {
        return Ok(None);
    };
    let straddling: i64 = sqlx::query_scalar!(
        "SELECT count(*) AS \"count!\" FROM (SELECT 1 FROM usage.hook_deliveries \
           GROUP BY tenant_id, agent, session_id \
           HAVING min(received_at) < $1 AND max(received_at) >= $1) AS s",
        cutoff,
    )
    .fetch_one(maintenance)
    .await?;
    let mut deleted: u64 = 0;
    let mut statements: u32 = 0;
    loop {
        let affected = sqlx::query!(
            "DELETE FROM usage.hook_deliveries WHERE ctid = ANY(ARRAY( \
               SELECT ctid FROM usage.hook_deliveries WHERE received_at < $1 LIMIT $2))",
            cutoff,
            i64::from(config.batch),
        )
        .execute(maintenance)
        .await?
        .rows_affected();
        statements += 1;
        deleted += affected;
        if affected < u64::from(config.batch) {
            break;
        }
    }
    let journal = Journal {
        cutoff,
        deliveries_deleted: deleted,
        statements,
        sessions_straddling: straddling.max(0) as u64,
    };
    sqlx::query!(
        "INSERT INTO usage.retention_runs (ran_at, cutoff, deliveries_deleted, statements, \
           sessions_straddling) VALUES ($1, $2, $3, $4, $5)",
        now,
        cutoff,
        deleted as i64,
        statements as i32,
        journal.sessions_straddling as i64,
    )
    .execute(maintenance)
    .await?;
    tracing::info!(
        deliveries_deleted = deleted,
        statements,
        sessions_straddling = journal.sessions_straddling,
        "usage retention ran"
    );
    Ok(Some(journal))
}

/// Runs retention every `config.interval` until `shutdown`.
pub async fn run_periodically(maintenance: PgPool, config: RetentionConfig, shutdown: Shutdown) {
    let mut ticker = tokio::time::interval(config.interval.max(Duration::from_secs(1)));
    let stopped = shutdown.wait();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            () = &mut stopped => return,
            _ = ticker.tick() => {
                // A root span of the usage component per round: its statements report as
                // usage's, in its traces and its database metric.
                let span = tracing::info_span!("usage.retention", otel.kind = "internal");
                baton_kit::telemetry::detached::root(&span, baton_kit::telemetry::Component::Usage, []);
                let round = tracing::Instrument::instrument(run_once(&maintenance, &config, Utc::now()), span);
                if let Err(error) = round.await {
                    tracing::warn!(error = %error, "usage retention failed; retrying next interval");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_is_the_window_before_now_and_zero_keeps_everything() {
        let now: DateTime<Utc> = "2026-06-01T00:00:00Z".parse().expect("instant");
        let default = RetentionConfig::default();
        assert_eq!(
            cutoff(&default, now),
            Some("2026-03-03T00:00:00Z".parse().expect("instant"))
        );
        let keep = RetentionConfig { days: 0, ..default };
        assert_eq!(cutoff(&keep, now), None);
    }
}
