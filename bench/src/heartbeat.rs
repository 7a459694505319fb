//! Heartbeat throughput through the gateway at 32 concurrent clients, against the same
//! single-row lease UPDATE issued directly to Postgres with sqlx at 32 concurrency.
//!
//! Both sides update one row per client (32 rows), so neither measures row-lock contention.
//! The gateway side runs the real release binary (`baton serve all`) on loopback.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::future::join_all;
use serde_json::json;
use sqlx::postgres::PgPoolOptions;

use baton_tests::Baton;

use crate::stats::RunStats;

const CLIENTS: usize = 32;
const WARMUP: Duration = Duration::from_secs(2);
const MEASURE: Duration = Duration::from_secs(10);

pub async fn run() -> anyhow::Result<()> {
    println!(
        "heartbeat: {CLIENTS} concurrent clients, {}s measured after {}s warm-up",
        MEASURE.as_secs(),
        WARMUP.as_secs()
    );
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "10000000"),
        ("BATON_LOG", "warn,baton=info"),
        ("BATON_TEST_CLOCK", "0"),
    ])
    .await;
    let tenant = baton.create_tenant("bench").await;
    let client = baton.client(&tenant);
    for index in 0..CLIENTS {
        let body =
            json!({"agent": "bench", "sessionId": format!("s-{index}"), "source": "startup"});
        let answer = client.post("/api/v1/agent-sessions/open", &body).await;
        anyhow::ensure!(answer.status == 200, "open failed: {:?}", answer.body);
    }

    let gateway = measure("gateway POST /agent-sessions/heartbeat", move |index| {
        let client = client.clone();
        async move {
            let body = json!({"agent": "bench", "sessionId": format!("s-{index}")});
            let answer = client.post("/api/v1/agent-sessions/heartbeat", &body).await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
        }
    })
    .await;

    let pool = PgPoolOptions::new()
        .max_connections(CLIENTS as u32)
        .connect(baton.database.url())
        .await
        .context("direct pool")?;
    let tenant_id: uuid::Uuid = tenant.tenant_id.parse()?;
    let direct = measure("direct sqlx UPDATE (same lease floor)", move |index| {
        let pool = pool.clone();
        async move {
            sqlx::query(
                "UPDATE registry.agent_sessions SET last_seen_at = greatest(last_seen_at, now()) \
                 WHERE tenant_id = $1 AND agent = 'bench' AND session_id = $2",
            )
            .bind(tenant_id)
            .bind(format!("s-{index}"))
            .execute(&pool)
            .await
            .expect("direct update");
        }
    })
    .await;

    gateway.print();
    direct.print();
    println!(
        "  ratio gateway/direct: {:.1}%   (bar: >= 75% with gateway p99 <= 25 ms)",
        100.0 * gateway.rate() / direct.rate()
    );
    baton.stop().await;
    Ok(())
}

/// Runs `operation(client_index)` in a loop on `CLIENTS` tasks: a warm-up, then a measured
/// window whose per-operation latencies are collected.
async fn measure<F, Fut>(label: &str, operation: F) -> RunStats
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let warm_until = started + WARMUP;
    let stop_at = warm_until + MEASURE;
    let workers = (0..CLIENTS).map(|index| {
        let operation = operation.clone();
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let begun = Instant::now();
                if begun >= stop_at {
                    break;
                }
                operation(index).await;
                if begun >= warm_until {
                    latencies.push(begun.elapsed());
                }
            }
            latencies
        })
    });
    let latencies: Vec<Duration> = join_all(workers)
        .await
        .into_iter()
        .flat_map(|joined| joined.unwrap_or_default())
        .collect();
    RunStats::from_latencies(label, latencies, MEASURE)
}
