//! Read latency: `TENANTS` tenants each holding `ROWS / TENANTS` usage rows over 90 days (10M
//! rows in all by default; `BATON_BENCH_USAGE_ROWS` to change it), then one tenant's 30-day
//! `groupBy=day` read in Europe/Berlin through the gateway, `READS` times in a row. The rows
//! are written straight into `token_usage`, and the rollups aggregated from them by SQL,
//! because uploading 10M rows through the gateway would measure the upload again (the other
//! figure) for an hour. The baseline is the same day totals computed straight from
//! `token_usage` with sqlx, the read a system without the rollups would make; the two must
//! agree.

use std::time::Instant;

use anyhow::Context;
use chrono::SecondsFormat;

use baton_tests::Baton;

use crate::stats::{RunStats, millis};

const TENANTS: usize = 100;
const DEFAULT_ROWS: usize = 10_000_000;
const READS: usize = 300;
const WARMUP: usize = 20;
const ZONE: &str = "Europe/Berlin";

const SEED_SESSIONS: &str = "INSERT INTO usage.sessions (tenant_id, agent, session_id, project_slug, host_ids, \
     first_activity_at, last_activity_at) \
     SELECT $1, 'claude-code', 's-' || s, 'project-' || (s % 5), ARRAY['host-' || (s % 4)], \
     $2 - interval '90 days', $2 FROM generate_series(0, 999) s";

const SEED_ROWS: &str = "INSERT INTO usage.token_usage (tenant_id, agent, dedup_key, session_id, agent_id, \
     agent_kind, project_slug, host_id, model, model_key, at, input, output, cache_read, \
     cache_write_5m, cache_write_1h, sidechain, cost, priced) \
     SELECT $1, 'claude-code', 'msg_' || i, 's-' || (i % 1000), '', 'main', \
     'project-' || (i % 1000 % 5), 'host-' || (i % 1000 % 4), m, m, \
     $2 - (i * (interval '90 days' / $3)), 3 + i % 7, 100 + i % 900, 20000 + i % 5000, i % 300, \
     0, false, (100 + i % 900) * 15000000000, true \
     FROM generate_series(0, $3 - 1) i, \
     LATERAL (SELECT (ARRAY['claude-opus-4-6', 'claude-sonnet-4-6', 'claude-haiku-4-5'])[1 + i % 3] AS m) pick";

const SEED_ROLLUPS: &str = "INSERT INTO usage.rollups (tenant_id, bucket, model, project_slug, host_id, agent_kind, \
     input, output, cache_read, cache_write_5m, cache_write_1h, requests, cost, unpriced_tokens) \
     SELECT tenant_id, date_bin('15 minutes', at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), \
     coalesce(model, ''), project_slug, host_id, agent_kind, sum(input), sum(output), \
     sum(cache_read), sum(cache_write_5m), sum(cache_write_1h), count(*), sum(cost), \
     sum(CASE WHEN priced THEN 0 ELSE input + output + cache_read + cache_write_5m + cache_write_1h END) \
     FROM usage.token_usage WHERE tenant_id = $1 GROUP BY 1, 2, 3, 4, 5, 6";

/// What a system without rollups reads for the same answer.
const DIRECT_DAYS: &str = "SELECT (at AT TIME ZONE $2)::date AS day, \
     sum(input + output + cache_read + cache_write_5m + cache_write_1h)::bigint, sum(cost)::text \
     FROM usage.token_usage WHERE tenant_id = $1 AND at >= $3 AND at < $4 GROUP BY 1 ORDER BY 1";

fn rows_wanted() -> usize {
    std::env::var("BATON_BENCH_USAGE_ROWS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(DEFAULT_ROWS)
}

async fn seed(admin: &sqlx::PgPool, tenants: &[uuid::Uuid], per_tenant: i64) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let started = Instant::now();
    for (index, tenant) in tenants.iter().enumerate() {
        let mut transaction = admin.begin().await?;
        sqlx::query(SEED_SESSIONS)
            .bind(tenant)
            .bind(now)
            .execute(&mut *transaction)
            .await
            .context("seed sessions")?;
        sqlx::query(SEED_ROWS)
            .bind(tenant)
            .bind(now)
            .bind(per_tenant)
            .execute(&mut *transaction)
            .await
            .context("seed usage rows")?;
        sqlx::query(SEED_ROLLUPS)
            .bind(tenant)
            .execute(&mut *transaction)
            .await
            .context("seed rollups")?;
        transaction.commit().await?;
        if (index + 1) % 10 == 0 {
            println!(
                "  seeded {} of {} tenants ({:.0} s)",
                index + 1,
                tenants.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    sqlx::query("ANALYZE usage.token_usage")
        .execute(admin)
        .await?;
    sqlx::query("ANALYZE usage.rollups").execute(admin).await?;
    Ok(())
}

pub async fn run(baton: &Baton) -> anyhow::Result<()> {
    let rows = rows_wanted();
    let per_tenant = (rows / TENANTS) as i64;
    println!(
        "usage read: {TENANTS} tenants x {per_tenant} rows over 90 days; one tenant's 30-day groupBy=day in {ZONE}, {READS} reads"
    );
    let tenant = baton.create_tenant("bench-read").await;
    let measured: uuid::Uuid = tenant.tenant_id.parse()?;
    let mut tenants = vec![measured];
    tenants.extend((1..TENANTS).map(|_| uuid::Uuid::new_v4()));
    let admin = baton.admin().await;
    seed(&admin, &tenants, per_tenant).await?;
    let (rollups,): (i64,) = sqlx::query_as("SELECT count(*) FROM usage.rollups")
        .fetch_one(&admin)
        .await?;
    println!("  rollup rows in all: {rollups}");

    let to = chrono::Utc::now();
    let from = to - chrono::Duration::days(30);
    let path = format!(
        "/api/v1/usage?from={}&to={}&groupBy=day&timezone={ZONE}",
        from.to_rfc3339_opts(SecondsFormat::Secs, true),
        to.to_rfc3339_opts(SecondsFormat::Secs, true)
    );
    let client = baton.client(&tenant);
    let mut latencies = Vec::with_capacity(READS);
    let mut gateway_total = 0u64;
    let started = Instant::now();
    for index in 0..WARMUP + READS {
        let begun = Instant::now();
        let answer = client.get(&path).await;
        anyhow::ensure!(answer.status == 200, "usage read failed: {:?}", answer.body);
        if index >= WARMUP {
            latencies.push(begun.elapsed());
        }
        gateway_total = answer.body["total"]["tokens"]["total"]
            .as_u64()
            .unwrap_or(0);
    }
    let gateway = RunStats::from_latencies(
        "gateway GET /api/v1/usage?groupBy=day",
        latencies,
        started.elapsed(),
    );

    let mut latencies = Vec::with_capacity(READS);
    let mut direct_total = 0i64;
    let started = Instant::now();
    for index in 0..WARMUP + READS {
        let begun = Instant::now();
        let days: Vec<(chrono::NaiveDate, i64, String)> = sqlx::query_as(DIRECT_DAYS)
            .bind(measured)
            .bind(ZONE)
            .bind(from)
            .bind(to)
            .fetch_all(&admin)
            .await?;
        if index >= WARMUP {
            latencies.push(begun.elapsed());
        }
        direct_total = days.iter().map(|(_, tokens, _)| tokens).sum();
    }
    let direct = RunStats::from_latencies(
        "direct sqlx GROUP BY day over token_usage",
        latencies,
        started.elapsed(),
    );
    gateway.print();
    direct.print();
    println!(
        "  gateway p99 {:.2} ms (bar: <= 50 ms); direct p99 {:.2} ms; ratio of p99 gateway/direct {:.2}; totals gateway {gateway_total} direct {direct_total} ({})",
        millis(gateway.p99),
        millis(direct.p99),
        gateway.p99.as_secs_f64() / direct.p99.as_secs_f64().max(f64::EPSILON),
        if gateway_total as i64 == direct_total {
            "equal"
        } else {
            "DIFFER"
        }
    );
    Ok(())
}
