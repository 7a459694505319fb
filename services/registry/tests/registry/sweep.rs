//! The lease-expiry sweep against real Postgres: grace, batch, concurrency, explicit rows.

use std::time::Duration;

use futures::future::join_all;
use uuid::Uuid;

use baton_registry::session::Liveness;
use baton_registry::sweep::Sweeper;

use crate::{Harness, LEASE, startup, t};

const GRACE: Duration = Duration::from_secs(3600);

async fn sweeper(harness: &Harness) -> Sweeper {
    let maintenance =
        baton_kit::db::connect_maintenance(harness.database.url(), None, &baton_registry::DB, 4)
            .await
            .expect("maintenance pool");
    Sweeper::new(maintenance, harness.registry.lease(), GRACE)
}

async fn outbox_closes(harness: &Harness) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM registry.outbox WHERE routing_key = 'registry.session.closed'",
    )
    .fetch_one(&harness.admin().await)
    .await
    .expect("outbox")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inside_the_grace_nothing_closes_past_it_stale_rows_close_once_even_with_two_sweepers() {
    let (harness, tenant) = Harness::with_tenant().await;
    let registry = &harness.registry;
    for index in 0..5 {
        registry
            .open(tenant, &startup(&format!("stale-{index}")), t(0))
            .await
            .expect("open");
    }
    registry
        .open(tenant, &startup("fresh"), t(20))
        .await
        .expect("open");
    registry
        .open(tenant, &startup("explicit"), t(0))
        .await
        .expect("open");
    registry
        .close(tenant, "claude-code", "explicit", t(1))
        .await
        .expect("close");
    let explicit_before = registry
        .get_by_key(tenant, "claude-code", "explicit")
        .await
        .expect("row");
    let sweep = sweeper(&harness).await;
    let lease_hours = LEASE.as_secs() as i64 / 3600;

    // Exactly at lease + grace the rows are not yet strictly older: nothing closes.
    let edge = t(lease_hours + 1);
    assert!(
        sweep
            .sweep(edge, 100)
            .await
            .expect("sweep")
            .closed
            .is_empty()
    );
    // Inside the grace nothing closes.
    assert!(
        sweep
            .sweep(t(lease_hours) + chrono::Duration::minutes(30), 100)
            .await
            .expect("sweep")
            .closed
            .is_empty()
    );

    // Past it, two sweepers at once close each stale row exactly once.
    let past = edge + chrono::Duration::milliseconds(1);
    let reports = join_all((0..2).map(|_| {
        let sweep = sweep.clone();
        async move { sweep.sweep(past, 100).await.expect("sweep") }
    }))
    .await;
    let closed: usize = reports.iter().map(|report| report.closed.len()).sum();
    assert_eq!(closed, 5, "each stale row once");
    assert_eq!(
        outbox_closes(&harness).await,
        5 + 1,
        "one message per close (and the explicit close)"
    );
    for index in 0..5 {
        let row = registry
            .get_by_key(tenant, "claude-code", &format!("stale-{index}"))
            .await
            .expect("row");
        assert_eq!(row.closed_at, Some(past));
        assert_eq!(registry.lease().of(&row, past), Liveness::ClosedImplicitly);
    }
    let fresh = registry
        .get_by_key(tenant, "claude-code", "fresh")
        .await
        .expect("row");
    assert_eq!(fresh.closed_at, None, "a row inside its lease stays open");
    let explicit_after = registry
        .get_by_key(tenant, "claude-code", "explicit")
        .await
        .expect("row");
    assert_eq!(
        explicit_after.closed_at, explicit_before.closed_at,
        "an explicit close is never restamped"
    );
}

#[tokio::test]
async fn a_pass_closes_at_most_the_batch_per_tenant() {
    let harness = Harness::new().await;
    let (busy, quiet) = (Uuid::now_v7(), Uuid::now_v7());
    for index in 0..7 {
        harness
            .open(busy, &startup(&format!("b-{index}")), t(0))
            .await;
    }
    harness.open(quiet, &startup("q"), t(0)).await;
    let sweep = sweeper(&harness).await;
    let report = sweep.sweep(t(30), 3).await.expect("sweep");
    let busy_closed = report
        .closed
        .iter()
        .filter(|row| row.tenant_id == busy)
        .count();
    let quiet_closed = report
        .closed
        .iter()
        .filter(|row| row.tenant_id == quiet)
        .count();
    assert_eq!(
        (busy_closed, quiet_closed),
        (3, 1),
        "the batch bounds each tenant separately"
    );
    assert_eq!(sweep.sweep(t(30), 3).await.expect("sweep").closed.len(), 3);
}

#[tokio::test]
async fn excerpts_of_rows_closed_and_unseen_for_seven_days_are_cleared() {
    let (harness, tenant) = Harness::with_tenant().await;
    let opened = harness.open(tenant, &startup("old"), t(0)).await;
    harness
        .registry
        .heartbeat(
            tenant,
            "claude-code",
            "old",
            Some("secret-free words"),
            t(1),
        )
        .await
        .expect("beat");
    harness.close(tenant, "old", t(2)).await;
    let sweep = sweeper(&harness).await;
    let report = sweep.sweep(t(1 + 24 * 7), 100).await.expect("sweep");
    assert_eq!(report.excerpts_cleared, 0, "exactly seven days: not yet");
    assert_eq!(
        harness.excerpt(opened.session.id).await.as_deref(),
        Some("secret-free words")
    );
    let report = sweep.sweep(t(2 + 24 * 7), 100).await.expect("sweep");
    assert_eq!(report.excerpts_cleared, 1);
    assert_eq!(harness.excerpt(opened.session.id).await, None);
}

#[tokio::test]
async fn the_excerpt_is_consumed_only_at_the_closed_epoch() {
    let (harness, tenant) = Harness::with_tenant().await;
    let opened = harness.open(tenant, &startup("x"), t(0)).await;
    let id = opened.session.id;
    harness
        .registry
        .heartbeat(tenant, "claude-code", "x", Some("words"), t(1))
        .await
        .expect("beat");
    assert!(
        !harness
            .registry
            .consume_excerpt(tenant, id, 1)
            .await
            .expect("consume"),
        "open: fenced"
    );
    harness.close(tenant, "x", t(2)).await;
    assert!(
        !harness
            .registry
            .consume_excerpt(tenant, id, 2)
            .await
            .expect("consume"),
        "wrong epoch: fenced"
    );
    assert!(
        harness
            .registry
            .consume_excerpt(tenant, id, 1)
            .await
            .expect("consume")
    );
    assert_eq!(harness.excerpt(id).await, None);
}
