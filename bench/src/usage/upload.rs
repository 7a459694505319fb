//! Upload throughput: `BATCHES` batches of `BATCH_ROWS` usage rows (one session and its main
//! agent per batch, as `baton-hook ingest` sends them), `CLIENTS` at a time, through
//! `POST /api/v1/usage/batches` — validation, pricing, the collision rule and the rollups
//! included. The baseline inserts the same rows (a session row, then the usage rows with one
//! `INSERT ... SELECT FROM UNNEST` per batch) straight into the same tables with sqlx at the
//! same concurrency, under another tenant, with no rollup and no pricing: the floor any upload
//! path has to pay. Two more runs show what concurrency costs (issue 25): the same batches from
//! 4 different tenants at once, and from one tenant's 4 machines at once (the shape a
//! per-tenant lock serialised).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::postgres::PgPoolOptions;
use tokio::sync::Mutex;

use baton_tests::Baton;

use crate::stats::RunStats;

const BATCH_ROWS: usize = 1000;
const BATCHES: usize = 120;
const CLIENTS: usize = 4;
const MODELS: [&str; 3] = ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"];

/// One batch's rows, the same on both sides.
struct Row {
    dedup_key: String,
    model: &'static str,
    at: chrono::DateTime<chrono::Utc>,
    tokens: [i64; 5],
}

fn rows(batch: usize) -> Vec<Row> {
    rows_of("main", batch)
}

/// A run's rows: `run` keeps each run's keys its own, so every run inserts new rows.
fn rows_of(run: &str, batch: usize) -> Vec<Row> {
    let start = chrono::Utc::now() - chrono::Duration::days(2);
    (0..BATCH_ROWS)
        .map(|index| {
            let n = (batch * BATCH_ROWS + index) as i64;
            Row {
                dedup_key: format!("msg_bench_{run}_{batch}_{index}:req_{n}"),
                model: MODELS[index % MODELS.len()],
                at: start + chrono::Duration::milliseconds(n * 150),
                tokens: [3 + n % 7, 100 + n % 900, 20_000 + n % 5000, n % 300, 0],
            }
        })
        .collect()
}

fn session_id(batch: usize) -> String {
    format!("bench-upload-{batch}")
}

fn batch_body(batch: usize, rows: &[Row]) -> Value {
    body_from("bench-host", &session_id(batch), rows)
}

fn body_from(host: &str, session: &str, rows: &[Row]) -> Value {
    let first = rows.first().map(|row| row.at).unwrap_or_default();
    let last = rows.last().map(|row| row.at).unwrap_or_default();
    let usage: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "agent": "claude-code", "sessionId": session, "dedupKey": row.dedup_key,
                "model": row.model, "at": row.at.to_rfc3339(),
                "input": row.tokens[0], "output": row.tokens[1], "cacheRead": row.tokens[2],
                "cacheWrite5m": row.tokens[3], "cacheWrite1h": row.tokens[4], "sidechain": false,
            })
        })
        .collect();
    json!({
        "hostId": host,
        "sessions": [{"agent": "claude-code", "sessionId": session, "projectSlug": "bench",
            "firstActivityAt": first.to_rfc3339(), "lastActivityAt": last.to_rfc3339()}],
        "agents": [{"agent": "claude-code", "sessionId": session, "kind": "main",
            "model": MODELS[0], "firstActivityAt": first.to_rfc3339(),
            "lastActivityAt": last.to_rfc3339()}],
        "usage": usage,
    })
}

async fn direct_batch(pool: &sqlx::PgPool, tenant: uuid::Uuid, batch: usize, rows: &[Row]) {
    let session = session_id(batch);
    let mut transaction = pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO usage.sessions (tenant_id, agent, session_id, project_slug, host_ids, \
         first_activity_at, last_activity_at) VALUES ($1, 'claude-code', $2, 'bench', \
         ARRAY['bench-host'], $3, $4)",
    )
    .bind(tenant)
    .bind(&session)
    .bind(rows.first().map(|row| row.at))
    .bind(rows.last().map(|row| row.at))
    .execute(&mut *transaction)
    .await
    .expect("session");
    let column = |kind: usize| {
        rows.iter()
            .map(|row| row.tokens[kind])
            .collect::<Vec<i64>>()
    };
    sqlx::query(
        "INSERT INTO usage.token_usage (tenant_id, agent, dedup_key, session_id, agent_id, \
         agent_kind, project_slug, host_id, model, model_key, at, input, output, cache_read, \
         cache_write_5m, cache_write_1h, sidechain, cost, priced) \
         SELECT $1, 'claude-code', k, $2, '', 'main', 'bench', 'bench-host', m, m, t, i, o, cr, \
         c5, c1, false, 0, true \
         FROM UNNEST($3::text[], $4::text[], $5::timestamptz[], $6::bigint[], $7::bigint[], \
         $8::bigint[], $9::bigint[], $10::bigint[]) AS u(k, m, t, i, o, cr, c5, c1)",
    )
    .bind(tenant)
    .bind(&session)
    .bind(
        rows.iter()
            .map(|row| row.dedup_key.clone())
            .collect::<Vec<_>>(),
    )
    .bind(
        rows.iter()
            .map(|row| row.model.to_string())
            .collect::<Vec<_>>(),
    )
    .bind(rows.iter().map(|row| row.at).collect::<Vec<_>>())
    .bind(column(0))
    .bind(column(1))
    .bind(column(2))
    .bind(column(3))
    .bind(column(4))
    .execute(&mut *transaction)
    .await
    .expect("usage rows");
    transaction.commit().await.expect("commit");
}

/// Runs every batch `CLIENTS` at a time; latencies per batch.
async fn drive<F, Fut>(label: &str, send: F) -> RunStats
where
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let next = Arc::new(Mutex::new(0usize));
    let started = Instant::now();
    let workers = (0..CLIENTS).map(|_| {
        let (next, send) = (next.clone(), send.clone());
        tokio::spawn(async move {
            let mut latencies: Vec<Duration> = Vec::new();
            loop {
                let batch = {
                    let mut next = next.lock().await;
                    let batch = *next;
                    *next += 1;
                    batch
                };
                if batch >= BATCHES {
                    break;
                }
                let begun = Instant::now();
                send(batch).await;
                latencies.push(begun.elapsed());
            }
            latencies
        })
    });
    let latencies: Vec<Duration> = join_all(workers)
        .await
        .into_iter()
        .flat_map(|joined| joined.unwrap_or_default())
        .collect();
    RunStats::from_latencies(label, latencies, started.elapsed())
}

pub async fn run(baton: &Baton) -> anyhow::Result<()> {
    println!(
        "usage upload: {BATCHES} batches of {BATCH_ROWS} rows, {CLIENTS} at a time (rows/s = batches/s × {BATCH_ROWS})"
    );
    let tenant = baton.create_tenant("bench-upload").await;
    let client = baton.client(&tenant);
    let bodies: Arc<Vec<String>> = Arc::new(
        (0..BATCHES)
            .map(|batch| batch_body(batch, &rows(batch)).to_string())
            .collect(),
    );
    // Warm the path (pricing cache, pools) with one batch outside the measured run.
    let warm = client
        .post_raw(
            "/api/v1/usage/batches",
            batch_body(BATCHES, &rows(BATCHES)).to_string(),
        )
        .await;
    anyhow::ensure!(warm.status == 200, "warm-up upload failed: {:?}", warm.body);
    let gateway = drive("gateway POST /api/v1/usage/batches", move |batch| {
        let (client, bodies) = (client.clone(), bodies.clone());
        async move {
            let begun = Instant::now();
            let answer = client
                .post_raw("/api/v1/usage/batches", bodies[batch].clone())
                .await;
            if answer.status != 200 {
                eprintln!(
                    "batch {batch}: {} {:?} after {:?}",
                    answer.status,
                    answer.body,
                    begun.elapsed()
                );
            }
        }
    })
    .await;

    let pool = PgPoolOptions::new()
        .max_connections(CLIENTS as u32)
        .connect(baton.database.url())
        .await
        .context("direct pool")?;
    let direct_tenant = uuid::Uuid::new_v4();
    let prepared: Arc<Vec<Vec<Row>>> = Arc::new((0..BATCHES).map(rows).collect());
    let direct = drive("direct sqlx INSERT ... UNNEST (same rows)", move |batch| {
        let (pool, prepared) = (pool.clone(), prepared.clone());
        async move { direct_batch(&pool, direct_tenant, batch, &prepared[batch]).await }
    })
    .await;

    let rows_per_second = |stats: &RunStats| stats.rate() * BATCH_ROWS as f64;
    gateway.print();
    direct.print();
    println!(
        "  rows/s gateway {:.0}, direct {:.0}; ratio gateway/direct: {:.1}%   (bar: >= 50%)",
        rows_per_second(&gateway),
        rows_per_second(&direct),
        100.0 * gateway.rate() / direct.rate()
    );

    let mut tenants = Vec::new();
    for index in 0..CLIENTS {
        let tenant = baton.create_tenant(&format!("bench-upload-{index}")).await;
        tenants.push(baton.client(&tenant));
    }
    let four_tenants = variant("4 tenants at once", move |batch| {
        let body = body_from(
            "bench-host",
            &format!("bench-tenants-{batch}"),
            &rows_of("tenants", batch),
        );
        (tenants[batch % CLIENTS].clone(), body.to_string())
    })
    .await?;
    let one_tenant = baton.client(&tenant);
    let four_machines = variant("1 tenant, 4 machines at once", move |batch| {
        let host = format!("bench-host-{}", batch % CLIENTS);
        let body = body_from(
            &host,
            &format!("bench-machines-{batch}"),
            &rows_of("machines", batch),
        );
        (one_tenant.clone(), body.to_string())
    })
    .await?;
    for (stats, label) in [
        (&four_tenants, "4 tenants"),
        (&four_machines, "1 tenant x 4 machines"),
    ] {
        stats.print();
        println!(
            "  rows/s {label} {:.0}; ratio to direct: {:.1}%",
            rows_per_second(stats),
            100.0 * stats.rate() / direct.rate()
        );
    }
    Ok(())
}

/// Every batch through the gateway, `CLIENTS` at a time, each sent by the client `body` names.
async fn variant<F>(label: &'static str, body: F) -> anyhow::Result<RunStats>
where
    F: Fn(usize) -> (baton_tests::Client, String),
{
    let prepared: Arc<Vec<(baton_tests::Client, String)>> =
        Arc::new((0..BATCHES).map(body).collect());
    let stats = drive(label, move |batch| {
        let prepared = prepared.clone();
        async move {
            let (client, body) = &prepared[batch];
            let answer = client.post_raw("/api/v1/usage/batches", body.clone()).await;
            if answer.status != 200 {
                eprintln!("{label} batch {batch}: {} {:?}", answer.status, answer.body);
            }
        }
    })
    .await;
    Ok(stats)
}
