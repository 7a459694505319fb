//! The usage reads through the real gateway: the tree's status words from their one source
//! each and the watchdog under the test clock, pricing imports through the real CLI, the
//! retention command, zoned days and paging.

use serde_json::{Value, json};
use uuid::Uuid;

use baton_tests::Baton;

use crate::usage_upload::{BATCHES, NOW, totals, tree_batch, usage_row};

fn statuses(tree: &Value) -> Vec<(String, String)> {
    tree["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|agent| {
            (
                agent["agentId"].as_str().unwrap_or("main").to_string(),
                agent["status"].as_str().expect("status").to_string(),
            )
        })
        .collect()
}

fn pair(agent: &str, status: &str) -> (String, String) {
    (agent.to_string(), status.to_string())
}

#[tokio::test]
async fn tree_status_words_come_from_their_evidence_and_the_watchdog_reads_unknown() {
    let baton = Baton::start().await;
    let client = baton
        .client(&baton.create_tenant("usage-status").await)
        .at(NOW);
    let run = client.open_startup("claude-code", "s-1").await;
    let path = format!("/api/v1/agent-sessions/{run}/tree");
    // Known run, nothing uploaded: its empty tree.
    let empty = client.get(&path).await;
    assert_eq!(empty.status, 200, "{:?}", empty.body);
    assert_eq!(empty.body["agents"], json!([]));
    assert_eq!(empty.body["delegationSavings"]["isEstimate"], true);

    let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
    batch["agents"][1]["ended"] = json!("completed");
    batch["agents"][1]["endedAt"] = json!("2026-03-01T10:10:00Z");
    batch["agents"].as_array_mut().expect("agents").push(json!({
        "agent": "claude-code", "sessionId": "s-1", "agentId": "a2", "kind": "subagent",
        "lastActivityAt": "2026-03-01T10:24:00Z"}));
    assert_eq!(client.post(BATCHES, &batch).await.status, 200);
    let tree = client.get(&path).await;
    assert_eq!(tree.status, 200, "{:?}", tree.body);
    assert_eq!(
        statuses(&tree.body),
        [
            pair("main", "working"),
            pair("a1", "completed"),
            pair("a2", "working")
        ]
    );
    assert_eq!(tree.body["agents"][0]["rolledUp"]["tokens"]["output"], 120);
    assert_eq!(tree.body["agents"][0]["own"]["tokens"]["output"], 50);
    assert_eq!(tree.body["edges"][0]["joinPath"], "tool_result");
    assert_eq!(tree.body["delegationSavings"]["isEstimate"], true);
    assert!(
        tree.body["delegationSavings"]["savingsUsd"]
            .as_f64()
            .expect("savings")
            > 0.0
    );

    // The main agent's Stop: waiting.
    let stop = json!({"hostId": "host-a", "deliveries": [{"deliveryId": Uuid::new_v4(),
        "agent": "claude-code", "sessionId": "s-1", "event": "Stop",
        "observedAt": "2026-03-01T10:25:00Z"}]});
    assert_eq!(client.post(BATCHES, &stop).await.status, 200);
    let waiting = client.get(&path).await;
    assert_eq!(statuses(&waiting.body)[0], pair("main", "waiting"));

    // Twenty minutes later, nothing new: the non-terminal agents read unknown, the terminal
    // one stays completed.
    let later = client.at("2026-03-01T10:50:00.000Z");
    let quiet = later.get(&path).await;
    assert_eq!(
        statuses(&quiet.body),
        [
            pair("main", "unknown"),
            pair("a1", "completed"),
            pair("a2", "unknown")
        ]
    );
    // Activity that does not advance changes nothing; activity past the anchor reverts it,
    // and the completed subagent's later activity never reopens it.
    let mut same = tree_batch("s-1", &Uuid::new_v4().to_string());
    same["agents"] = json!([{"agent": "claude-code", "sessionId": "s-1", "agentId": "a2",
        "kind": "subagent", "lastActivityAt": "2026-03-01T10:24:00Z"}]);
    assert_eq!(later.post(BATCHES, &same).await.status, 200);
    assert_eq!(
        statuses(&later.get(&path).await.body)[2],
        pair("a2", "unknown")
    );
    let mut advanced = same.clone();
    advanced["agents"] = json!([
        {"agent": "claude-code", "sessionId": "s-1", "agentId": "a2", "kind": "subagent",
         "lastActivityAt": "2026-03-01T10:49:00Z"},
        {"agent": "claude-code", "sessionId": "s-1", "agentId": "a1", "kind": "subagent",
         "lastActivityAt": "2026-03-01T10:49:00Z"}]);
    assert_eq!(later.post(BATCHES, &advanced).await.status, 200);
    let revived = later.get(&path).await;
    assert_eq!(
        statuses(&revived.body),
        [
            pair("main", "unknown"),
            pair("a1", "completed"),
            pair("a2", "working")
        ]
    );
}

#[tokio::test]
async fn an_unpriced_model_is_priced_by_baton_pricing_import_and_totals_follow() {
    let baton = Baton::start().await;
    let client = baton
        .client(&baton.create_tenant("usage-price").await)
        .at(NOW);
    let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
    let mut row = usage_row("s-1", None, "msg_9:req_9", 100, false);
    row["model"] = json!("claude-zephyr-1");
    batch["usage"] = json!([row]);
    assert_eq!(client.post(BATCHES, &batch).await.status, 200);
    let before = totals(&client).await;
    assert_eq!(before["total"]["costUsd"], 0.0);
    assert_eq!(before["total"]["unpricedTokens"], 1334);
    assert_eq!(
        before["total"]["unpriced"],
        json!([{"model": "claude-zephyr-1", "tokens": 1334}])
    );

    let file = std::env::temp_dir().join(format!("prices-{}.json", Uuid::new_v4()));
    std::fs::write(
        &file,
        r#"{"schema": 1, "rows": [{"model": "claude-zephyr-1", "provider": "anthropic",
          "effectiveFrom": "2026-02-01", "input": 1, "output": 5, "cacheRead": 0.1,
          "cacheWrite5m": 1.25, "cacheWrite1h": 2, "longContext": null, "fast": null,
          "geo": {}, "source": "test", "sourceDate": "2026-03-01", "note": ""}]}"#,
    )
    .expect("write prices");
    let output = baton
        .cli(&["pricing", "import", file.to_str().expect("path")], &[])
        .await;
    assert!(output.status.success(), "{output:?}");
    let imported: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(imported, json!({"rowsChanged": 1, "usageRepriced": 1}));
    let after = totals(&client).await;
    assert_eq!(after["total"]["unpricedTokens"], 0);
    let expected = (1000.0 + 100.0 * 5.0 + 200.0 * 0.1 + 30.0 * 1.25 + 4.0 * 2.0) / 1e6;
    let cost = after["total"]["costUsd"].as_f64().expect("cost");
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    let bad = std::env::temp_dir().join(format!("prices-{}.json", Uuid::new_v4()));
    std::fs::write(&bad, r#"{"schema": 1, "rows": [{"model": "x"}]}"#).expect("write");
    let refused = baton
        .cli(&["pricing", "import", bad.to_str().expect("path")], &[])
        .await;
    assert!(!refused.status.success());
}

#[tokio::test]
async fn baton_usage_retention_deletes_only_deliveries_past_the_window() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("usage-retention").await;
    // Deliveries received 200 days ago and now (the test clock sets "received").
    let old = baton.client(&tenant).at("2026-05-01T10:30:00.000Z");
    let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
    batch["sessions"][0]["firstActivityAt"] = json!("2026-05-01T10:00:00Z");
    batch["sessions"][0]["lastActivityAt"] = json!("2026-05-01T10:20:00Z");
    batch["agents"] = json!([]);
    batch["edges"] = json!([]);
    batch["usage"] = json!([]);
    batch["deliveries"] =
        json!((0..3)
        .map(|_| json!({"deliveryId": Uuid::new_v4(), "agent": "claude-code", "sessionId": "s-1",
                        "event": "Stop", "observedAt": "2026-05-01T10:00:00Z"}))
        .collect::<Vec<_>>());
    assert_eq!(old.post(BATCHES, &batch).await.status, 200);
    let recent = baton.client(&tenant);
    let now = chrono::Utc::now().to_rfc3339();
    let fresh = json!({"hostId": "h", "deliveries": [{"deliveryId": Uuid::new_v4(),
        "agent": "claude-code", "sessionId": "s-1", "event": "Stop", "observedAt": now}]});
    let answer = recent.post(BATCHES, &fresh).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let output = baton
        .cli(
            &["usage", "retention"],
            &[
                ("BATON_USAGE__RETENTION_DAYS", "90"),
                ("BATON_USAGE__RETENTION_BATCH", "2"),
            ],
        )
        .await;
    assert!(output.status.success(), "{output:?}");
    let journal: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(journal["deliveriesDeleted"], 3, "{journal}");
    assert_eq!(journal["statements"], 2, "{journal}");
    assert_eq!(journal["sessionsStraddling"], 1, "{journal}");
    let admin = baton.admin().await;
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM usage.hook_deliveries")
        .fetch_one(&admin)
        .await
        .expect("count");
    assert_eq!(left, 1);
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM usage.sessions")
        .fetch_one(&admin)
        .await
        .expect("count");
    assert_eq!(sessions, 1, "the tree is never touched");
}

#[tokio::test]
async fn days_follow_the_zone_and_the_listing_pages_with_an_opaque_cursor() {
    let baton = Baton::start().await;
    let client = baton
        .client(&baton.create_tenant("usage-days").await)
        .at(NOW);
    let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
    let mut late = usage_row("s-1", None, "m-late", 7, false);
    late["at"] = json!("2026-03-01T04:30:00Z");
    let mut tokyo_night = usage_row("s-1", None, "m-night", 3, false);
    tokyo_night["at"] = json!("2026-03-01T16:00:00Z");
    batch["usage"]
        .as_array_mut()
        .expect("usage")
        .extend([late, tokyo_night]);
    assert_eq!(client.post(BATCHES, &batch).await.status, 200);
    for id in ["s-2", "s-3"] {
        let mut other = tree_batch(id, &Uuid::new_v4().to_string());
        other["usage"] = json!([]);
        other["edges"] = json!([]);
        other["agents"] = json!([]);
        assert_eq!(client.post(BATCHES, &other).await.status, 200);
    }
    let days_in = |zone: &'static str| {
        let client = client.clone();
        async move {
            let answer = client
                .get(&format!(
                    "/api/v1/usage?from=2026-02-28T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy=day&timezone={zone}"
                ))
                .await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
            assert_eq!(answer.body["timezone"], zone);
            answer.body["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .map(|g| {
                    (
                        g["key"].as_str().expect("key").to_string(),
                        g["figures"]["tokens"]["output"].as_u64().expect("output"),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let day = |key: &str, output: u64| (key.to_string(), output);
    assert_eq!(
        days_in("America/New_York").await,
        [day("2026-02-28", 7), day("2026-03-01", 123)]
    );
    assert_eq!(
        days_in("Asia/Tokyo").await,
        [day("2026-03-01", 127), day("2026-03-02", 3)]
    );
    assert_eq!(days_in("UTC").await, [day("2026-03-01", 130)]);
    for bad in [
        "groupBy=fortnight",
        "timezone=Mars/Base",
        "from=yesterday",
        "extra=1",
    ] {
        let refused = client.get(&format!("/api/v1/usage?{bad}")).await;
        assert_eq!(refused.status, 400, "{bad}");
    }
    let page = client
        .get("/api/v1/usage/sessions?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&limit=2")
        .await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(page.body["sessions"].as_array().map(Vec::len), Some(2));
    let cursor = page.body["nextCursor"]
        .as_str()
        .expect("cursor")
        .to_string();
    let rest = client
        .get(&format!("/api/v1/usage/sessions?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&limit=2&cursor={cursor}"))
        .await;
    assert_eq!(rest.body["sessions"].as_array().map(Vec::len), Some(1));
    assert!(rest.body.get("nextCursor").is_none());
    let malformed = client.get("/api/v1/usage/sessions?cursor=bm9wZQ").await;
    assert_eq!(
        (malformed.status, &malformed.body["error"]),
        (400, &json!("invalid_input"))
    );
    let limit = client.get("/api/v1/usage/sessions?limit=201").await;
    assert_eq!(limit.status, 400);
}
