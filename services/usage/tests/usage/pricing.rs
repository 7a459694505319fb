use uuid::Uuid;

use baton_kit::testing::WritesHeld;
use baton_proto::usage::v1 as proto;

use crate::*;

const NEW_MODEL_FILE: &str = r#"{"schema": 1, "rows": [{
  "model": "claude-quantum-9", "provider": "anthropic", "effectiveFrom": "2026-01-01",
  "input": 2, "output": 10, "cacheRead": 0.2, "cacheWrite5m": 2.5, "cacheWrite1h": 4,
  "longContext": null, "fast": null, "geo": {},
  "source": "test", "sourceDate": "2026-03-01", "note": ""}]}"#;

async fn by_model(harness: &Harness, tenant: Uuid) -> proto::QueryUsageResponse {
    harness
        .query(
            tenant,
            usage_query("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z", "model"),
        )
        .await
        .expect("query")
}

#[tokio::test]
async fn a_model_without_a_row_is_unpriced_until_a_row_is_imported_and_then_totals_are_repriced() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = session_usage(vec![
        lead("k1", "claude-quantum-9", "2026-03-01T10:01:00Z", 100),
        lead("k2", "claude-opus-4-5", "2026-03-01T10:02:00Z", 100),
    ]);
    harness.upload(tenant, NOW, request).await;
    let before = by_model(&harness, tenant).await;
    let total = before.total.clone().expect("total");
    assert_eq!(total.unpriced_tokens, 1334);
    assert_eq!(total.unpriced[0].model, "claude-quantum-9");
    let quantum = before
        .groups
        .iter()
        .find(|group| group.key == "claude-quantum-9")
        .and_then(|group| group.figures.clone())
        .expect("group");
    assert_eq!(quantum.cost_usd, 0.0);
    assert_eq!(
        quantum.unpriced_tokens, 1334,
        "tokens shown unpriced, not as $0"
    );
    let opus_cost = total.cost_usd;
    assert!(opus_cost > 0.0);

    let imported = baton_usage::pricing::import(&harness.admin, NEW_MODEL_FILE)
        .await
        .expect("import");
    assert_eq!((imported.rows_changed, imported.usage_repriced), (1, 1));
    assert_rollups_consistent(&harness.admin, tenant).await;
    let after = by_model(&harness, tenant).await.total.expect("total");
    assert_eq!(after.unpriced_tokens, 0);
    // 1000 × $2 + 100 × $10 + 200 × $0.2 + 30 × $2.5 + 4 × $4, per million tokens.
    let expected = (1000.0 * 2.0 + 100.0 * 10.0 + 200.0 * 0.2 + 30.0 * 2.5 + 4.0 * 4.0) / 1e6;
    assert!(
        (after.cost_usd - opus_cost - expected).abs() < 1e-12,
        "{after:?}"
    );
    // The same file again changes nothing.
    let again = baton_usage::pricing::import(&harness.admin, NEW_MODEL_FILE)
        .await
        .expect("import again");
    assert_eq!((again.rows_changed, again.usage_repriced), (0, 0));
    // The service's cache sees the new table: a new row of the model is priced at upload.
    let mut request = batch("h");
    request.usage = vec![lead("k3", "claude-quantum-9", "2026-03-01T10:03:00Z", 1)];
    harness.upload(tenant, NOW, request).await;
    assert_eq!(
        by_model(&harness, tenant)
            .await
            .total
            .expect("t")
            .unpriced_tokens,
        0
    );
}

#[tokio::test]
async fn bundled_prices_load_idempotently() {
    let harness = Harness::new().await;
    let again = baton_usage::pricing::import(&harness.admin, baton_usage_model::pricing::BUNDLED)
        .await
        .expect("again");
    assert_eq!(again.rows_changed, 0);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM usage.model_pricing")
        .fetch_one(&harness.admin)
        .await
        .expect("count");
    assert!(rows > 40, "{rows}");
    assert!(
        baton_usage::pricing::import(&harness.admin, r#"{"schema": 2, "rows": []}"#)
            .await
            .is_err()
    );
}

/// A price file of two rows for two unpriced models: `early` in force from January,
/// `late` from February, each at `(input, output)` dollars per million tokens (cache rates
/// follow input).
fn two_model_file(early: (&str, f64, f64), late: (&str, f64, f64)) -> String {
    let row = |(model, input, output): (&str, f64, f64), from: &str| {
        serde_json::json!({
            "model": model, "provider": "anthropic", "effectiveFrom": from,
            "input": input, "output": output, "cacheRead": input / 10.0,
            "cacheWrite5m": input * 1.25, "cacheWrite1h": input * 2.0,
            "longContext": null, "fast": null, "geo": {},
            "source": "test", "sourceDate": "2026-03-01", "note": ""})
    };
    serde_json::json!({"schema": 1, "rows": [row(early, "2026-01-01"), row(late, "2026-02-01")]})
        .to_string()
}

/// Two imports at once, lined up at their first write (the second waits for the import lock
/// while the first is held at its insert). Each file brings the row in force on the usage's
/// date for one model and an older row for the other, so only an import that sees both files'
/// rows prices both models right. Taken one after the other, the second prices from the whole
/// table and moves the rollups from the first's prices; without the lock each would price
/// from its own file alone, the later commit would leave one model at the wrong price, and
/// both would move the rollups from the same unpriced start, counting the change twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_imports_at_once_price_from_both_files_and_keep_the_rollups_whole() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = session_usage(vec![
        lead("k1", "claude-quantum-9", "2026-03-01T10:01:00Z", 100),
        lead("k2", "claude-quantum-7", "2026-03-01T10:02:00Z", 100),
    ]);
    harness.upload(tenant, NOW, request).await;
    let first = two_model_file(
        ("claude-quantum-9", 2.0, 10.0),
        ("claude-quantum-7", 3.0, 15.0),
    );
    let second = two_model_file(
        ("claude-quantum-7", 1.0, 5.0),
        ("claude-quantum-9", 4.0, 20.0),
    );
    let held = WritesHeld::on(&harness.admin, "usage.model_pricing").await;
    let (first, second, ()) = tokio::join!(
        baton_usage::pricing::import(&harness.admin, &first),
        baton_usage::pricing::import(&harness.admin, &second),
        held.release_once_waiting(&harness.admin, 2)
    );
    first.expect("first import");
    second.expect("second import");
    assert_rollups_consistent(&harness.admin, tenant).await;
    // Each lead row is 1000 input, 100 output, 200 cache read, 30 + 4 cache writes: priced by
    // the February rows, quantum-9 at $4/$20 and quantum-7 at $3/$15.
    let cost = |input: f64, output: f64| {
        (1000.0 * input
            + 100.0 * output
            + 200.0 * input / 10.0
            + 30.0 * input * 1.25
            + 4.0 * input * 2.0)
            / 1e6
    };
    let total = by_model(&harness, tenant).await.total.expect("total");
    assert_eq!(total.unpriced_tokens, 0);
    assert!(
        (total.cost_usd - cost(4.0, 20.0) - cost(3.0, 15.0)).abs() < 1e-12,
        "{total:?}"
    );
}
