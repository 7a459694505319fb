//! CONTRACT section 7 and table I: the typed read of a run's events.

use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_provenance::link::Provenance as WriteProvenance;
use baton_provenance::memory::MemoryType;
use baton_provenance::testing::seed_events;

use crate::{Harness, call, memory, t};

#[tokio::test]
async fn five_events_walk_in_pages_of_two_and_unattributed_writes_never_appear() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "walk", Some("baton"), t(0)).await;
    let at = call(tenant, t(1));
    for index in 0..5 {
        let content = format!("event {index}");
        harness
            .remember(
                &at,
                &memory(MemoryType::Note, "walk", &content, Some("baton")),
                WriteProvenance::Given(run),
            )
            .await
            .expect("attributed");
        harness
            .remember(
                &at,
                &memory(MemoryType::Note, "other", &content, None),
                WriteProvenance::Default,
            )
            .await
            .expect("unattributed");
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = harness
            .provenance
            .run_events(&at, run, cursor, 2)
            .await
            .expect("page");
        pages += 1;
        assert!(!page.truncated);
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|item| item.id));
        match page.next_cursor {
            Some(next) => {
                assert_eq!(Some(next), page.items.last().map(|item| item.id));
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 5);
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "id order");
}

#[tokio::test]
async fn a_run_with_501_events_shows_500_truncated_on_every_page() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "flood", Some("baton"), t(0)).await;
    seed_events(&harness.admin, tenant, run, 501).await;
    let at = call(tenant, t(1));
    let (mut seen, mut cursor, mut last_page) = (0, None, false);
    while !last_page {
        let page = harness
            .provenance
            .run_events(&at, run, cursor, 100)
            .await
            .expect("page");
        assert!(page.truncated, "truncated on every page");
        seen += page.items.len();
        cursor = page.next_cursor;
        last_page = cursor.is_none();
    }
    assert_eq!(seen, 500);
    let (ids, truncated) = harness
        .provenance
        .run_event_ids(&at, run, 500)
        .await
        .expect("ids");
    assert_eq!((ids.len(), truncated), (500, true));
}

#[tokio::test]
async fn an_empty_run_reads_empty_and_a_foreign_run_is_not_found() {
    let harness = Harness::new().await;
    let (tenant, other) = (Uuid::now_v7(), Uuid::now_v7());
    let run = harness.open(tenant, "empty", None, t(0)).await;
    let foreign = harness.open(other, "theirs", None, t(0)).await;
    let page = harness
        .provenance
        .run_events(&call(tenant, t(1)), run, None, 50)
        .await
        .expect("page");
    assert!(page.items.is_empty() && page.next_cursor.is_none() && !page.truncated);
    for unknown in [foreign, Uuid::now_v7()] {
        let error = harness
            .provenance
            .run_events(&call(tenant, t(1)), unknown, None, 50)
            .await
            .expect_err("not the tenant's");
        assert_eq!(error.code, ErrorCode::NotFound);
    }
}

#[tokio::test]
async fn the_session_index_serves_the_read_for_the_runtime_role_under_rls() {
    let (harness, tenant) = Harness::with_tenant().await;
    let mut runs = Vec::new();
    for index in 0..40 {
        let run = harness
            .open(tenant, &format!("plan-{index}"), None, t(0))
            .await;
        seed_events(&harness.admin, tenant, run, 50).await;
        runs.push(run);
    }
    sqlx::query("VACUUM ANALYZE provenance.memory_events")
        .execute(&harness.admin)
        .await
        .expect("analyze");
    // As the runtime role, with the tenant set: row-level security in force, as in production.
    let mut transaction = baton_kit::db::begin_tenant(&harness.runtime_pool, tenant)
        .await
        .expect("begin");
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT id FROM provenance.memory_events \
         WHERE tenant_id = $1 AND session_run_id = $2 ORDER BY id LIMIT 501",
    )
    .bind(tenant)
    .bind(runs[7].to_string())
    .fetch_all(&mut *transaction)
    .await
    .expect("plan");
    let plan = plan.join("\n");
    assert!(plan.contains("memory_events_session_idx"), "{plan}");
    assert!(
        plan.contains("session_run_id = "),
        "the run condition is an index condition, not a filter: {plan}"
    );
}
