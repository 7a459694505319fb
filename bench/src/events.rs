//! The typed events read at scale: 1,000,000 events across 1,000 tenants and 20,000 runs
//! (generated here, never committed). One 50-event page of a random run, measured through the
//! gateway (HTTP), through provenance's gRPC, and as the same keyset query run directly on
//! Postgres; plus the query plan, which must use the session expression index.

use std::time::{Duration, Instant};

use anyhow::Context;
use rand::seq::IndexedRandom;
use sqlx::PgPool;
use sqlx::types::chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::config::Secret;
use baton_kit::db;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::provenance::v1 as proto;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_tests::{Baton, SERVICE_TOKEN, Tenant};

use crate::stats::RunStats;

const TENANTS: usize = 1_000;
const RUNS_PER_TENANT: i32 = 20;
const EVENTS_PER_RUN: i32 = 50;
const SAMPLES: usize = 2_000;

/// One run of one tenant.
#[derive(Debug, Clone)]
struct Run {
    tenant: Tenant,
    tenant_id: Uuid,
    run_id: Uuid,
}

pub async fn run() -> anyhow::Result<()> {
    println!(
        "events: {} events across {TENANTS} tenants and {} runs; {SAMPLES} first pages of 50, one request at a time",
        TENANTS as i64 * i64::from(RUNS_PER_TENANT * EVENTS_PER_RUN),
        TENANTS as i64 * i64::from(RUNS_PER_TENANT)
    );
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "10000000"),
        ("BATON_LOG", "warn,baton=info"),
        ("BATON_TEST_CLOCK", "0"),
    ])
    .await;
    let admin = PgPool::connect(baton.database.url())
        .await
        .context("admin pool")?;
    let started = Instant::now();
    let runs = generate(&baton, &admin).await?;
    println!("  generated in {:.1} s", started.elapsed().as_secs_f64());

    let sample: Vec<Run> = (0..SAMPLES)
        .map(|_| runs.choose(&mut rand::rng()).cloned().expect("runs"))
        .collect();
    let direct = measure_direct(&admin, &sample).await?;
    let grpc = measure_grpc(&baton, &sample).await?;
    let gateway = measure_gateway(&baton, &sample).await;
    direct.print();
    grpc.print();
    gateway.print();
    println!(
        "  p99 gRPC {:.3} ms (bar: <= 5 ms); gRPC/direct p50 ratio {:.1}x",
        crate::stats::millis(grpc.p99),
        grpc.p50.as_secs_f64() / direct.p50.as_secs_f64().max(f64::EPSILON)
    );
    print_plan(&admin, &sample[0]).await?;
    baton.stop().await;
    Ok(())
}

async fn generate(baton: &Baton, admin: &PgPool) -> anyhow::Result<Vec<Run>> {
    let gateway_pool =
        db::connect_runtime(baton.database.url(), None, &baton_gateway::DB, 4).await?;
    let mut tenants = Vec::with_capacity(TENANTS);
    for index in 0..TENANTS {
        let created =
            baton_gateway::tenants::create_tenant(&gateway_pool, &format!("bench-{index}")).await?;
        tenants.push(Tenant {
            tenant_id: created.tenant_id.to_string(),
            api_key: created.api_key,
        });
    }
    let tenant_ids: Vec<Uuid> = tenants
        .iter()
        .map(|tenant| tenant.tenant_id.parse())
        .collect::<Result<_, _>>()?;
    sqlx::query(
        "INSERT INTO registry.agent_sessions (tenant_id, id, agent, session_id, source, project, selector, \
           opened_at, last_seen_at, activation_epoch) \
         SELECT t.tenant_id, gen_random_uuid(), 'bench', 's-' || g, 'startup', 'bench', '{\"kind\":\"all\"}', \
           now(), now(), 1 \
         FROM unnest($1::uuid[]) AS t(tenant_id), generate_series(1, $2) AS g",
    )
    .bind(&tenant_ids)
    .bind(RUNS_PER_TENANT)
    .execute(admin)
    .await?;
    sqlx::query(
        "INSERT INTO provenance.memories (tenant_id, id, memory_type, topic, content, content_sha256, \
           status, created_at, updated_at) \
         SELECT tenant_id, id, 'note', 'bench', 'bench', sha256(id::text::bytea), 'open', now(), now() \
         FROM registry.agent_sessions",
    )
    .execute(admin)
    .await?;
    // Runs interleave, as concurrent sessions' writes do.
    sqlx::query(
        "INSERT INTO provenance.memory_events (tenant_id, id, memory_id, event_kind, actor_kind, payload, created_at) \
         SELECT s.tenant_id, gen_random_uuid(), s.id, 'create', 'user_api', \
                jsonb_build_object('sessionRunId', s.id::text), now() \
         FROM generate_series(1, $1) AS e, registry.agent_sessions s",
    )
    .bind(EVENTS_PER_RUN)
    .execute(admin)
    .await?;
    sqlx::query("VACUUM ANALYZE provenance.memory_events")
        .execute(admin)
        .await?;
    let rows: Vec<(Uuid, Uuid)> =
        sqlx::query_as("SELECT tenant_id, id FROM registry.agent_sessions")
            .fetch_all(admin)
            .await?;
    let by_id: std::collections::HashMap<Uuid, Tenant> =
        tenant_ids.iter().copied().zip(tenants).collect();
    Ok(rows
        .into_iter()
        .map(|(tenant_id, run_id)| Run {
            tenant: by_id[&tenant_id].clone(),
            tenant_id,
            run_id,
        })
        .collect())
}

const KEYSET: &str = "SELECT id, memory_id, event_kind, actor_kind, created_at FROM provenance.memory_events \
     WHERE tenant_id = $1 AND session_run_id = $2 ORDER BY id LIMIT 50";

async fn measure_direct(admin: &PgPool, sample: &[Run]) -> anyhow::Result<RunStats> {
    let mut latencies = Vec::with_capacity(sample.len());
    let started = Instant::now();
    for run in sample {
        let begun = Instant::now();
        let rows: Vec<(Uuid, Uuid, String, String, DateTime<Utc>)> = sqlx::query_as(KEYSET)
            .bind(run.tenant_id)
            .bind(run.run_id.to_string())
            .fetch_all(admin)
            .await?;
        anyhow::ensure!(rows.len() == EVENTS_PER_RUN as usize, "direct page short");
        latencies.push(begun.elapsed());
    }
    Ok(RunStats::from_latencies(
        "direct keyset query (sqlx)",
        latencies,
        started.elapsed(),
    ))
}

async fn measure_grpc(baton: &Baton, sample: &[Run]) -> anyhow::Result<RunStats> {
    let channel = baton_kit::grpc::channel(&baton.addresses["provenance"])?;
    let mut client = ProvenanceClient::new(channel);
    let outbound = Outbound::new(Secret::new(SERVICE_TOKEN.to_string()));
    let mut latencies = Vec::with_capacity(sample.len());
    let started = Instant::now();
    for run in sample {
        let call = OutboundCall {
            tenant_id: run.tenant_id,
            test_now: None,
        };
        let request = proto::ListRunEventsRequest {
            session_run_id: run.run_id.to_string(),
            cursor: None,
            limit: Some(50),
        };
        let begun = Instant::now();
        let page = client
            .list_run_events(outbound.request(&call, request))
            .await?
            .into_inner();
        anyhow::ensure!(
            page.items.len() == EVENTS_PER_RUN as usize,
            "gRPC page short"
        );
        latencies.push(begun.elapsed());
    }
    Ok(RunStats::from_latencies(
        "provenance gRPC ListRunEvents",
        latencies,
        started.elapsed(),
    ))
}

async fn measure_gateway(baton: &Baton, sample: &[Run]) -> RunStats {
    let mut latencies: Vec<Duration> = Vec::with_capacity(sample.len());
    let started = Instant::now();
    // One connection pool for every tenant, as a client behind one address would hold: a pool
    // per tenant keeps hundreds of idle connections open from 127.0.0.1, past the gateway's
    // per-address cap (BATON_GATEWAY__MAX_CONNECTIONS_PER_CLIENT), which refuses the rest.
    let shared = baton.anonymous();
    for run in sample {
        let client = shared.with_key(&run.tenant.api_key);
        let path = format!("/api/v1/agent-sessions/{}/events?limit=50", run.run_id);
        let begun = Instant::now();
        let answer = client.get(&path).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        latencies.push(begun.elapsed());
    }
    RunStats::from_latencies(
        "gateway GET /agent-sessions/{id}/events",
        latencies,
        started.elapsed(),
    )
}

/// The plan of the run's id listing as the runtime role sees it: row-level security in force.
async fn print_plan(admin: &PgPool, run: &Run) -> anyhow::Result<()> {
    let mut transaction = admin.begin().await?;
    sqlx::query("SET LOCAL ROLE baton_provenance")
        .execute(&mut *transaction)
        .await?;
    sqlx::query("SELECT set_config('baton.tenant_id', $1, true)")
        .bind(run.tenant_id.to_string())
        .execute(&mut *transaction)
        .await?;
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM provenance.memory_events \
         WHERE tenant_id = $1 AND session_run_id = $2 ORDER BY id LIMIT 501",
    )
    .bind(run.tenant_id)
    .bind(run.run_id.to_string())
    .fetch_all(&mut *transaction)
    .await?;
    transaction.rollback().await?;
    println!("  plan of the run's id listing (runtime role, RLS in force):");
    for line in &plan {
        println!("    {line}");
    }
    let uses_index = plan
        .iter()
        .any(|line| line.contains("memory_events_session_idx"));
    println!("  uses memory_events_session_idx: {uses_index}");
    Ok(())
}
