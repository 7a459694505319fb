//! API keys and rate limiting.

use serde_json::json;

use baton_tests::Baton;

use crate::startup;

#[tokio::test]
async fn missing_malformed_and_unknown_keys_are_401_before_the_body_is_read() {
    let baton = Baton::start().await;
    let (tenant, real) = baton.tenant_client("auth").await;
    let anonymous = baton.anonymous();
    let unauthorized = json!({"error": "unauthorized"});
    for body in ["{}", "not json at all", ""] {
        let answer = anonymous
            .post_raw("/api/v1/agent-sessions/open", body.to_string())
            .await;
        assert_eq!(
            (answer.status, &answer.refusal()),
            (401, &unauthorized),
            "{body}"
        );
    }
    let row = anonymous
        .get("/api/v1/agent-sessions/0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a")
        .await;
    assert_eq!(row.status, 401);

    let (prefix, secret) = tenant.api_key.rsplit_once('_').expect("btn_prefix_secret");
    let wrong_secret = format!("{prefix}_{}", "x".repeat(secret.len()));
    let unknown_prefix = format!("btn_zzzzzzzzzzzz_{secret}");
    for bad in [
        "nonsense",
        wrong_secret.as_str(),
        unknown_prefix.as_str(),
        "btn_a_b",
    ] {
        let answer = real
            .with_key(bad)
            .post("/api/v1/agent-sessions/open", &startup("x"))
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (401, unauthorized.clone()),
            "{bad}"
        );
    }
    let good = real
        .post("/api/v1/agent-sessions/open", &startup("x"))
        .await;
    assert_eq!(good.status, 200);
}

#[tokio::test]
async fn keys_are_stored_as_prefix_and_hash_only() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("stored").await;
    let admin = sqlx::PgPool::connect(baton.database.url())
        .await
        .expect("admin");
    let rows: Vec<(String, Vec<u8>)> =
        sqlx::query_as("SELECT prefix, secret_sha256 FROM gateway.api_keys")
            .fetch_all(&admin)
            .await
            .expect("keys");
    assert_eq!(rows.len(), 1);
    let (prefix, digest) = &rows[0];
    let secret = tenant.api_key.rsplit('_').next().expect("secret");
    assert_eq!(tenant.api_key, format!("btn_{prefix}_{secret}"));
    assert_eq!(digest.len(), 32);
    let stored_text = String::from_utf8_lossy(digest);
    assert!(
        !stored_text.contains(secret),
        "the secret is never stored in clear"
    );
}

#[tokio::test]
async fn over_the_rate_limit_is_429_with_retry_after() {
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "3"),
        ("BATON_GATEWAY__RATE_LIMIT_WINDOW", "60s"),
    ])
    .await;
    let (_, client) = baton.tenant_client("limited").await;
    let other = baton.create_tenant("unlimited").await;
    for _ in 0..3 {
        assert_eq!(
            client
                .post("/api/v1/agent-sessions/open", &startup("r"))
                .await
                .status,
            200
        );
    }
    let limited = client
        .post("/api/v1/agent-sessions/open", &startup("r"))
        .await;
    assert_eq!(
        (limited.status, limited.refusal()),
        (429, json!({"error": "rate_limited"}))
    );
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry_after));
    let separate = baton
        .client(&other)
        .post("/api/v1/agent-sessions/open", &startup("r"))
        .await;
    assert_eq!(separate.status, 200, "buckets are per key");
}
