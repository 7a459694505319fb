//! Opportunistic batching of the heartbeat fast path.
//!
//! Heartbeats are the hottest write Baton takes (every turn end, every liveness pulse). A live
//! row's refresh is a floor of `last_seen_at` and needs no decision beyond "is it live", so
//! concurrent refreshes are gathered and applied in one statement and one round trip
//! (`store::refresh_live_batch`). Nothing waits to fill a batch: a worker takes whatever is
//! queued the moment it becomes free, so a lone heartbeat goes out at once and a burst shares
//! round trips and commits. A handful of workers keep several batches in flight.
//!
//! A refresh that finds its row absent, closed or stale comes back `None`, and the caller takes
//! the locked, decided path, exactly as with a single-row fast path.
//!
//! Telemetry: the workers run apart from the requests, so each batch is its own root span,
//! `registry.heartbeat_batch`, of the registry's component, with a span link to every
//! heartbeat it carries (`baton_kit::telemetry::detached`); its statements are database spans
//! under it and are measured in `db.client.operation.duration` like any request's.

use std::collections::HashMap;
use std::sync::Arc;

use baton_kit::telemetry::detached::SpanContext;
use sqlx::PgPool;
use tokio::sync::{Mutex, mpsc, oneshot};
use tracing::Instrument as _;
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_kit::telemetry::{Component, component, detached};

use crate::store::{self, LiveRefresh, Refreshed};

/// Batches in flight at once.
pub const WORKERS: usize = 4;
/// Most refreshes one batch carries.
pub const MAX_BATCH: usize = 64;
/// Refreshes waiting for a worker before callers are made to wait for queue room.
const QUEUE: usize = 4096;

type Key = (Uuid, String, String);
type Reply = oneshot::Sender<Result<Option<Refreshed>, ApiError>>;

struct Pending {
    refresh: LiveRefresh,
    reply: Reply,
    /// The heartbeat request's span, linked from the batch that carries it.
    served: Option<SpanContext>,
}

/// The handle callers use; cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveRefresher {
    sender: mpsc::Sender<Pending>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Pending")
    }
}

impl LiveRefresher {
    /// Starts the workers on the current runtime.
    pub fn start(pool: PgPool) -> LiveRefresher {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..WORKERS {
            // The registry's from the start: anything outside a batch span is still its own.
            tokio::spawn(component::within(
                Component::Registry,
                worker(pool.clone(), receiver.clone()),
            ));
        }
        LiveRefresher { sender }
    }

    /// Refreshes one live row; `None` when the row is not live (or does not exist).
    pub async fn refresh(&self, refresh: LiveRefresh) -> Result<Option<Refreshed>, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Pending {
                refresh,
                reply,
                served: detached::served_by_current(),
            })
            .await
            .map_err(|_| ApiError::unavailable("registry is shutting down"))?;
        answer
            .await
            .map_err(|_| ApiError::unavailable("registry is shutting down"))?
    }
}

fn key_of(refresh: &LiveRefresh) -> Key {
    (
        refresh.tenant_id,
        refresh.agent.clone(),
        refresh.session_id.clone(),
    )
}

/// One refresh per natural key, sorted by key so concurrent batches lock rows in one order. Of
/// duplicates, the latest clock (and its cutoff) wins and the last excerpt given is kept, which
/// is what applying them one after another would leave.
pub fn merge(refreshes: &[LiveRefresh]) -> Vec<LiveRefresh> {
    let mut merged: HashMap<Key, LiveRefresh> = HashMap::new();
    for refresh in refreshes {
        merged
            .entry(key_of(refresh))
            .and_modify(|existing| {
                existing.now = existing.now.max(refresh.now);
                existing.cutoff = existing.cutoff.max(refresh.cutoff);
                if refresh.excerpt.is_some() {
                    existing.excerpt = refresh.excerpt.clone();
                }
            })
            .or_insert_with(|| refresh.clone());
    }
    let mut sorted: Vec<LiveRefresh> = merged.into_values().collect();
    sorted.sort_by_key(key_of);
    sorted
}

async fn worker(pool: PgPool, receiver: Arc<Mutex<mpsc::Receiver<Pending>>>) {
    loop {
        let batch = {
            let mut receiver = receiver.lock().await;
            let Some(first) = receiver.recv().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(pending) => batch.push(pending),
                    Err(_) => break,
                }
            }
            batch
        };
        let refreshes: Vec<LiveRefresh> = batch
            .iter()
            .map(|pending| pending.refresh.clone())
            .collect();
        let span = tracing::info_span!(
            "registry.heartbeat_batch",
            otel.kind = "internal",
            batch.size = batch.len()
        );
        detached::root(
            &span,
            Component::Registry,
            batch.iter().filter_map(|pending| pending.served.clone()),
        );
        let outcome = apply(&pool, &merge(&refreshes)).instrument(span).await;
        for pending in batch {
            let answer = match &outcome {
                Ok(rows) => Ok(rows.get(&key_of(&pending.refresh)).cloned()),
                Err(error) => Err(error.clone()),
            };
            let _ = pending.reply.send(answer);
        }
    }
}

/// Runs the batch, retrying once if it lost a deadlock to another batch.
async fn apply(pool: &PgPool, merged: &[LiveRefresh]) -> Result<HashMap<Key, Refreshed>, ApiError> {
    let mut attempt = 0;
    loop {
        match store::refresh_live_batch(pool, merged).await {
            Ok(rows) => {
                return Ok(rows
                    .into_iter()
                    .map(|row| {
                        (
                            (row.tenant_id, row.agent.clone(), row.session_id.clone()),
                            row,
                        )
                    })
                    .collect());
            }
            Err(sqlx::Error::Database(error))
                if attempt == 0 && error.code().as_deref() == Some("40P01") =>
            {
                attempt += 1;
            }
            Err(error) => return Err(ApiError::from(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn refresh(session: &str, second: u32, excerpt: Option<&str>) -> LiveRefresh {
        let now = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, second)
            .single()
            .expect("valid");
        LiveRefresh {
            tenant_id: Uuid::nil(),
            agent: "codex".to_string(),
            session_id: session.to_string(),
            now,
            cutoff: now - chrono::Duration::hours(24),
            excerpt: excerpt.map(str::to_string),
        }
    }

    #[test]
    fn duplicates_merge_to_the_latest_clock_and_last_excerpt() {
        let merged = merge(&[
            refresh("b", 5, Some("first")),
            refresh("a", 1, None),
            refresh("b", 9, None),
            refresh("b", 7, Some("last")),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].session_id, "a", "sorted by key");
        assert_eq!(merged[1].now, refresh("b", 9, None).now);
        assert_eq!(merged[1].cutoff, refresh("b", 9, None).cutoff);
        assert_eq!(merged[1].excerpt.as_deref(), Some("last"));
    }
}
