//! Cross-tenant maintenance: the lease-expiry sweep and the excerpt time-to-live (CONTRACT
//! Part 2 table H, "Sweep pass"). Runs as the maintenance role (BYPASSRLS), never on the
//! request path.
//!
//! A row closes when `closed_at IS NULL AND last_seen_at < now − lease − grace` (strict), at
//! most `batch` per tenant per pass, oldest first. The UPDATE re-asserts both predicates on the
//! row it locks, so a concurrent close or heartbeat wins, and two sweepers at once close each
//! row once. Such a close lands after the lease ran out, so it reads as implicit and a later
//! heartbeat or write still resurrects the run.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;
use tokio::sync::Notify;
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::messages;
use crate::session::Lease;

/// Excerpts of closed rows unseen this long are cleared (SESSION_EXCERPT_TTL_MS).
pub const EXCERPT_TTL: Duration = Duration::days(7);
/// Largest per-tenant batch (MAX_SESSION_SWEEP_BATCH).
pub const MAX_BATCH: u32 = 100;

/// A row the sweep closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub tenant_id: Uuid,
    pub id: Uuid,
    pub activation_epoch: i64,
    pub closed_at: DateTime<Utc>,
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub closed: Vec<Swept>,
    pub excerpts_cleared: u64,
}

/// The sweep, on the maintenance pool.
#[derive(Debug, Clone)]
pub struct Sweeper {
    maintenance: PgPool,
    lease: Lease,
    grace: Duration,
    relay: Option<Arc<Notify>>,
}

impl Sweeper {
    pub fn new(maintenance: PgPool, lease: Lease, grace: std::time::Duration) -> Sweeper {
        Sweeper {
            maintenance,
            lease,
            grace: Duration::from_std(grace).unwrap_or(Duration::hours(1)),
            relay: None,
        }
    }

    pub fn with_relay(mut self, relay: Arc<Notify>) -> Sweeper {
        self.relay = Some(relay);
        self
    }

    /// One pass at `now`: close stale rows (publishing each close in the same transaction) and
    /// clear expired excerpts.
    pub async fn sweep(&self, now: DateTime<Utc>, batch: u32) -> Result<SweepReport, ApiError> {
        let batch = i64::from(if batch == 0 {
            MAX_BATCH
        } else {
            batch.min(MAX_BATCH)
        });
        let cutoff = now - self.lease.duration - self.grace;
        let mut transaction = self.maintenance.begin().await?;
        let closed = sqlx::query_as!(
            Swept,
            "WITH candidates AS ( \
               SELECT tenant_id, id FROM ( \
                 SELECT tenant_id, id, \
                        row_number() OVER (PARTITION BY tenant_id ORDER BY last_seen_at, id) AS rank \
                 FROM registry.agent_sessions \
                 WHERE closed_at IS NULL AND last_seen_at < $1) ranked \
               WHERE rank <= $2) \
             UPDATE registry.agent_sessions s SET closed_at = $3 \
             FROM candidates c \
             WHERE s.tenant_id = c.tenant_id AND s.id = c.id \
               AND s.closed_at IS NULL AND s.last_seen_at < $1 \
             RETURNING s.tenant_id, s.id, s.activation_epoch, s.closed_at AS \"closed_at!\"",
            cutoff,
            batch,
            now,
        )
        .fetch_all(&mut *transaction)
        .await?;
        for row in &closed {
            messages::swept(
                &mut transaction,
                row.tenant_id,
                row.id,
                row.activation_epoch,
                row.closed_at,
            )
            .await?;
        }
        let cleared = sqlx::query!(
            "UPDATE registry.agent_sessions SET last_message_excerpt = NULL \
             WHERE (tenant_id, id) IN ( \
               SELECT tenant_id, id FROM ( \
                 SELECT tenant_id, id, \
                        row_number() OVER (PARTITION BY tenant_id ORDER BY last_seen_at, id) AS rank \
                 FROM registry.agent_sessions \
                 WHERE closed_at IS NOT NULL AND last_message_excerpt IS NOT NULL \
                   AND last_seen_at < $1) ranked \
               WHERE rank <= $2) \
               AND closed_at IS NOT NULL AND last_seen_at < $1",
            now - EXCERPT_TTL,
            batch,
        )
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        transaction.commit().await?;
        if let (false, Some(relay)) = (closed.is_empty(), &self.relay) {
            relay.notify_one();
        }
        tracing::info!(
            closed = closed.len(),
            excerpts_cleared = cleared,
            "lease-expiry sweep"
        );
        Ok(SweepReport {
            closed,
            excerpts_cleared: cleared,
        })
    }
}
