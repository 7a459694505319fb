use uuid::Uuid;

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
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    request.usage = vec![
        lead("k1", "claude-quantum-9", "2026-03-01T10:01:00Z", 100),
        lead("k2", "claude-opus-4-5", "2026-03-01T10:02:00Z", 100),
    ];
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
