//! On the system clock, with no test clock and no manual trigger: the periodic sweep closes a
//! session whose lease ran out, and a refused pass is tried again once its backoff ran out.
//!
//! Every other end-to-end test runs with `BATON_TEST_CLOCK`, which turns the periodic sweep off
//! (a sweep on the real clock would close sessions those tests placed in the past). This one
//! runs the sweep for real, with the shortest lease the registry accepts (60 s), a 1 s grace, a
//! 1 s sweep interval and a 2 s retry backoff.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_tests::Baton;
use baton_tests::judge::FakeJudge;

use crate::closer::{close, commitment, commitment_status, heartbeat, open_briefed, settled_pass};

/// The registry's shortest accepted lease.
const LEASE: Duration = Duration::from_secs(60);

async fn pass_row(admin: &sqlx::PgPool, run: &str) -> Option<(String, String, i32, DateTime<Utc>)> {
    sqlx::query_as(
        "SELECT state, coalesce(outcome, ''), failures, updated_at FROM closer.passes \
         WHERE session_run_id = $1 AND activation_epoch = 1",
    )
    .bind(run.parse::<Uuid>().expect("uuid"))
    .fetch_optional(admin)
    .await
    .expect("pass")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_closes_a_stale_session_and_retries_a_refused_pass_after_its_backoff() {
    let judge = FakeJudge::start(Duration::ZERO, false).await;
    let baton = Baton::start_with(&[
        ("BATON_TEST_CLOCK", "0"),
        ("BATON_CLOSER__ENABLED", "true"),
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
        // Nothing may be spent until the operator raises the budget below.
        ("BATON_CLOSER__MONTHLY_TOKEN_BUDGET", "0"),
        ("BATON_CLOSER__BACKOFF_BASE", "2s"),
        ("BATON_CLOSER__SWEEP_INTERVAL", "1s"),
        ("BATON_REGISTRY__SESSION_LEASE", "60s"),
        ("BATON_REGISTRY__SESSION_GRACE", "1s"),
    ])
    .await;
    let (tenant, client) = baton.tenant_client("system-clock").await;
    let admin = baton.admin().await;
    let started = tokio::time::Instant::now();

    // A session that goes quiet: never heartbeated, never closed.
    let stale_memory = commitment(&client, "stale", "Migrate the orders table to uuid keys").await;
    let stale = open_briefed(&client, "quiet", &[(&stale_memory, "stale")]).await;

    // A session closed at once, whose pass the empty budget refuses.
    let memory = commitment(&client, "billing", "Add retries to the billing webhook").await;
    let run = open_briefed(&client, "refused", &[(&memory, "billing")]).await;
    heartbeat(&client, "refused", "Done: the billing webhook retries now.").await;
    close(&client, "refused").await;
    let refused_at = loop {
        if let Some((state, outcome, failures, updated)) = pass_row(&admin, &run).await
            && state == "failed"
        {
            assert_eq!((outcome.as_str(), failures), ("refused", 1));
            break updated;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no refused pass"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(judge.requests(), 0, "refused before any generation");
    let next_attempt: DateTime<Utc> =
        sqlx::query_scalar("SELECT next_attempt_at FROM closer.passes WHERE session_run_id = $1")
            .bind(run.parse::<Uuid>().expect("uuid"))
            .fetch_one(&admin)
            .await
            .expect("backoff");
    assert_eq!(
        (next_attempt - refused_at).num_seconds(),
        2,
        "scheduled after the configured backoff"
    );

    // The operator raises the budget; nobody triggers anything.
    sqlx::query("INSERT INTO closer.budgets (tenant_id, monthly_token_limit) VALUES ($1, 1000000)")
        .bind(tenant.tenant_id.parse::<Uuid>().expect("tenant"))
        .execute(&admin)
        .await
        .expect("budget");
    let raised = tokio::time::Instant::now();
    let retried = loop {
        let row = pass_row(&admin, &run).await.expect("pass");
        if row.0 == "finished" {
            break row;
        }
        assert!(
            raised.elapsed() < Duration::from_secs(30),
            "the refused pass was never retried: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        (retried.0.as_str(), retried.1.as_str()),
        ("finished", "completed")
    );
    assert!(
        retried.3 >= next_attempt,
        "retried no earlier than its backoff allowed"
    );
    assert_eq!(commitment_status(&client, &memory).await, "resolved");
    assert_eq!(judge.requests(), 1, "one generation, on the retry");

    // The quiet session: still open before its lease runs out, closed by the sweep after.
    let row = client.get(&format!("/api/v1/agent-sessions/{stale}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    if started.elapsed() < LEASE {
        assert_eq!(
            row.body["closedAt"],
            serde_json::Value::Null,
            "within its lease"
        );
    }
    let deadline = started + LEASE + Duration::from_secs(45);
    let closed = loop {
        let row = client.get(&format!("/api/v1/agent-sessions/{stale}")).await;
        assert_eq!(row.status, 200, "{:?}", row.body);
        if !row.body["closedAt"].is_null() {
            break row.body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sweep never closed the stale session: {}",
            row.body
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(
        started.elapsed() >= LEASE,
        "closed only after its lease ran out: {closed}"
    );
    let (state, outcome, _) = settled_pass(&admin, &stale, 1, Duration::from_secs(30)).await;
    assert_eq!(
        (state.as_str(), outcome.as_str()),
        ("finished", "completed"),
        "the implicit close reached the closer"
    );
}
