use baton_kit::db;
use baton_usage::config::RetentionConfig;

use crate::*;

#[tokio::test]
async fn only_deliveries_past_the_window_go_in_bounded_batches_and_the_run_is_journalled() {
    let (harness, tenant) = Harness::with_tenant().await;
    // Old deliveries, received 100 days before "now"; one session straddles the cutoff.
    let old_now = "2026-01-01T10:30:00Z";
    let mut request = batch("h");
    request.sessions = ["s-old", "s-both"]
        .map(|id| {
            let mut fact = session(id);
            fact.first_activity_at = ts("2026-01-01T10:00:00Z");
            fact.last_activity_at = ts("2026-01-01T10:20:00Z");
            fact
        })
        .to_vec();
    request.usage = vec![row(
        "s-old",
        None,
        "k",
        "claude-opus-4-5",
        "2026-01-01T10:00:00Z",
        5,
    )];
    request.deliveries = (0..5)
        .map(|_| delivery("s-old", "Stop", "2026-01-01T10:00:00Z"))
        .chain([delivery("s-both", "Stop", "2026-01-01T10:00:00Z")])
        .collect();
    harness.upload(tenant, old_now, request).await;
    let mut recent = batch("h");
    recent.deliveries = vec![delivery("s-both", "Stop", "2026-04-10T10:00:00Z")];
    harness.upload(tenant, "2026-04-10T10:30:00Z", recent).await;
    let before = snapshot(&harness.admin, tenant).await;
    let maintenance = db::connect_maintenance(harness.database.url(), None, &baton_usage::DB, 2)
        .await
        .expect("maintenance pool");
    let config = RetentionConfig {
        days: 90,
        batch: 2,
        ..RetentionConfig::default()
    };
    let journal =
        baton_usage::retention::run_once(&maintenance, &config, at("2026-04-11T00:00:00Z"))
            .await
            .expect("run")
            .expect("journalled");
    assert_eq!(journal.deliveries_deleted, 6);
    assert_eq!(
        journal.statements, 4,
        "windows of 2: 2 + 2 + 2 + an empty last"
    );
    assert_eq!(journal.sessions_straddling, 1);
    let left: Vec<String> =
        sqlx::query_scalar("SELECT session_id FROM usage.hook_deliveries WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&harness.admin)
            .await
            .expect("left");
    assert_eq!(left, ["s-both"]);
    // Everything but the deleted deliveries is as it was.
    let after = snapshot(&harness.admin, tenant).await;
    assert_eq!(before.len() - after.len(), 6);
    assert!(after.iter().all(|line| before.contains(line)));
    let journalled: (i64, i64) =
        sqlx::query_as("SELECT deliveries_deleted, sessions_straddling FROM usage.retention_runs")
            .fetch_one(&harness.admin)
            .await
            .expect("journal");
    assert_eq!(journalled, (6, 1));
    // Zero days keeps everything and journals nothing.
    let keep = RetentionConfig { days: 0, ..config };
    assert!(
        baton_usage::retention::run_once(&maintenance, &keep, at("2030-01-01T00:00:00Z"))
            .await
            .expect("keep")
            .is_none()
    );
}
