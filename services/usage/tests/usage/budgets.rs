//! Budget crossings as concurrent uploads land.

use baton_kit::testing::WritesHeld;
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

/// One host's upload of one lead row in its own session (own host, session and bucket: two of
/// them share no row of the usage tables).
fn upload_of(host: &str, session_id: &str, when: &str) -> proto::UploadBatchRequest {
    let mut request = batch(host);
    request.sessions = vec![session(session_id)];
    request.usage = vec![row(session_id, None, host, "claude-opus-4-5", when, 100)];
    request
}

/// Two uploads that reach a threshold only together, lined up at the crossing ledger (writes
/// to it held until both wait). Evaluation takes the tenant's budget lock before it reads the
/// spend, so the second reads after the first committed: one records 50%, the other 100%.
/// Without the lock each would read its own spend alone, both would record 50%, and the 100%
/// crossing would never be raised.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_uploads_crossing_a_threshold_only_together_record_it() {
    let (harness, tenant) = Harness::with_tenant().await;
    let first = upload_of("h1", "s-a", "2026-03-01T10:01:00Z");
    let second = upload_of("h2", "s-b", "2026-03-01T10:16:00Z");
    // What one upload costs, from the same upload in another tenant.
    let scratch = uuid::Uuid::new_v4();
    let scratch = {
        harness.upload(scratch, NOW, first.clone()).await;
        let query = usage_query("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z", "model");
        harness.query(scratch, query).await.expect("query")
    };
    let cost = scratch.total.expect("total").cost_usd;
    assert!(cost > 0.0);
    // Each upload alone is two thirds of the limit; both are four thirds.
    harness
        .grpc
        .create_budget(call(
            tenant,
            NOW,
            proto::CreateBudgetRequest {
                scope: "tenant".to_string(),
                subject: None,
                period: "month".to_string(),
                limit_usd: cost * 1.5,
                thresholds: vec![50, 100],
                timezone: None,
            },
        ))
        .await
        .expect("budget");

    let held = WritesHeld::on(&harness.admin, "usage.budget_crossings").await;
    let (_, _, ()) = tokio::join!(
        harness.upload(tenant, NOW, first),
        harness.upload(tenant, NOW, second),
        held.release_once_waiting(&harness.admin, 2)
    );
    let mut crossed: Vec<i32> =
        sqlx::query_scalar("SELECT threshold FROM usage.budget_crossings WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&harness.admin)
            .await
            .expect("crossings");
    crossed.sort_unstable();
    assert_eq!(crossed, [50, 100]);
    let messages: i64 = sqlx::query_scalar("SELECT count(*) FROM usage.outbox")
        .fetch_one(&harness.admin)
        .await
        .expect("outbox");
    assert_eq!(messages, 2, "one message per threshold");
}
