//! The periodic sweep: one replica at a time (a Postgres advisory lock), it asks registry to
//! close rows whose lease and grace ran out (each close reaches the closer as a
//! `registry.session.closed` message), then tries again every failed pass whose backoff ran out.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use opentelemetry::metrics::Histogram;
use sqlx::PgPool;

use baton_kit::error::ApiError;
use baton_kit::shutdown::Shutdown;
use baton_kit::telemetry::component::PerComponent;
use baton_kit::telemetry::{Component, buckets};

use crate::metering::PassKey;
use crate::pass::{PassCall, Passes};
use crate::store;

/// Failed passes retried per sweep.
const RETRIES_PER_SWEEP: i64 = 100;

fn sweep_sizes() -> &'static Histogram<u64> {
    static HISTOGRAM: PerComponent<Histogram<u64>> = PerComponent::new();
    HISTOGRAM.get_or_init(Component::Closer, |meter| {
        meter
            .u64_histogram("baton.closer.sweep.closed")
            .with_unit("{session}")
            .with_description("Rows the lease-expiry sweep closed per pass")
            .with_boundaries(buckets::COUNTS.to_vec())
            .build()
    })
}

/// The sweep.
#[derive(Debug, Clone)]
pub struct Sweeper {
    passes: Arc<Passes>,
    maintenance: PgPool,
}

/// What one sweep did (`None` when another replica held the sweep lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SweepReport {
    pub closed: usize,
    pub retried: usize,
}

impl Sweeper {
    pub fn new(passes: Arc<Passes>, maintenance: PgPool) -> Sweeper {
        Sweeper {
            passes,
            maintenance,
        }
    }

    /// One sweep at `now`, if no other replica is sweeping.
    pub async fn sweep_once(
        &self,
        now: DateTime<Utc>,
        test_now: Option<&str>,
    ) -> Result<Option<SweepReport>, ApiError> {
        let mut lock = self.maintenance.begin().await?;
        let held = sqlx::query_scalar!(
            r#"SELECT pg_try_advisory_xact_lock(hashtextextended('closer.sweep', 0)) AS "held!""#,
        )
        .fetch_one(&mut *lock)
        .await?;
        if !held {
            return Ok(None);
        }
        let closed = self.passes.links().sweep_expired(test_now).await?;
        sweep_sizes().record(closed as u64, &[]);
        let due = store::due(&self.maintenance, now, RETRIES_PER_SWEEP).await?;
        let mut retried = 0;
        for pass in due {
            let call = PassCall {
                key: PassKey {
                    tenant_id: pass.tenant_id,
                    run_id: pass.session_run_id,
                    epoch: pass.activation_epoch,
                },
                now,
                test_now: test_now.map(str::to_string),
            };
            if self.passes.run(&call).await?.is_some() {
                retried += 1;
            }
        }
        lock.commit().await?;
        tracing::info!(closed, retried, "closer sweep");
        Ok(Some(SweepReport { closed, retried }))
    }

    /// Sweeps every `interval` until shutdown.
    pub async fn run(self, interval: Duration, clock: baton_kit::clock::Clock, shutdown: Shutdown) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = shutdown.clone().wait() => return,
            }
            // Each periodic sweep is a root span of the closer's (it serves no one request).
            let span = tracing::info_span!("closer.sweep", otel.kind = "internal");
            baton_kit::telemetry::detached::root(&span, Component::Closer, []);
            let swept = tracing::Instrument::instrument(self.sweep_once(clock.now(), None), span);
            if let Err(error) = swept.await {
                tracing::warn!(
                    error = error.code.as_str(),
                    "sweep failed; next tick retries"
                );
            }
        }
    }
}
