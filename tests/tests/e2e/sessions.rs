//! Open, heartbeat, close and resume flows through the gateway.

use serde_json::json;

use baton_tests::Baton;

use crate::{is_iso, key, startup};

#[tokio::test]
async fn open_heartbeat_close_and_resume_round_trip() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("flows").await;

    let opened = client
        .post("/api/v1/agent-sessions/open", &startup("s-1"))
        .await;
    assert_eq!(opened.status, 200, "{:?}", opened.body);
    let body = &opened.body;
    let run_id = body["sessionRunId"].as_str().expect("id").to_string();
    assert_eq!(run_id, run_id.to_lowercase());
    assert_eq!(body["activationEpoch"], 1);
    assert_eq!(body["created"], true);
    assert_eq!(body["reopened"], false);
    assert_eq!(body["source"], "startup");
    assert!(is_iso(&body["openedAt"]) && is_iso(&body["lastSeenAt"]));
    assert_eq!(body["briefingDeliveredAt"], json!(null));
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 8, "strict response shape: {keys:?}");

    let again = client
        .post("/api/v1/agent-sessions/open", &startup("s-1"))
        .await;
    assert_eq!((again.status, &again.body["created"]), (200, &json!(false)));
    assert_eq!(again.body["sessionRunId"], run_id.as_str());

    let beat = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "s-1", "lastMessageExcerpt": "done"}),
        )
        .await;
    assert_eq!(beat.status, 200);
    assert_eq!(beat.body["resurrected"], false);
    assert_eq!(beat.body["sessionRunId"], run_id.as_str());

    let closed = client
        .post("/api/v1/agent-sessions/close", &key("s-1"))
        .await;
    assert_eq!(closed.status, 200);
    assert_eq!(closed.body["alreadyClosed"], false);
    let first_close = closed.body["closedAt"].clone();
    let repeat = client
        .post("/api/v1/agent-sessions/close", &key("s-1"))
        .await;
    assert_eq!(repeat.body["alreadyClosed"], true);
    assert_eq!(repeat.body["closedAt"], first_close);

    let resumed = client
        .post(
            "/api/v1/agent-sessions/open",
            &json!({"agent": "claude-code", "sessionId": "s-1", "source": "resume"}),
        )
        .await;
    assert_eq!(resumed.status, 200);
    assert_eq!(resumed.body["reopened"], true);
    assert_eq!(resumed.body["source"], "resume");
    assert_eq!(resumed.body["activationEpoch"], 2);
    assert_eq!(resumed.body["sessionRunId"], run_id.as_str());

    let row = client
        .get(&format!("/api/v1/agent-sessions/{}", run_id.to_uppercase()))
        .await;
    assert_eq!(row.status, 200, "an upper-case run id is lower-cased");
    assert_eq!(row.body["sessionRunId"], run_id.as_str());
    assert_eq!(
        row.body["source"], "startup",
        "the row keeps its inserted source"
    );
    assert_eq!(row.body["closedAt"], json!(null));
    assert_eq!(row.body["triageStatus"], "idle");
    assert_eq!(
        row.body["selector"],
        json!({"kind": "scope", "scope": "work"})
    );
    assert!(
        row.body.get("lastMessageExcerpt").is_none(),
        "never the excerpt"
    );
    assert_eq!(row.body.as_object().expect("object").len(), 14);
}

#[tokio::test]
async fn startup_with_changed_facets_is_409_and_selector_key_order_is_ignored() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("facets").await;
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &startup("f"))
            .await
            .status,
        200
    );

    let reordered = json!({
        "selector": {"scope": "work", "kind": "scope"},
        "scope": "work", "project": "baton", "source": "startup",
        "sessionId": "f", "agent": "claude-code",
    });
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &reordered)
            .await
            .status,
        200
    );

    let mut changed = startup("f");
    changed["selector"] = json!({"kind": "scope", "scope": "personal"});
    let conflict = client.post("/api/v1/agent-sessions/open", &changed).await;
    assert_eq!(
        (conflict.status, conflict.refusal()),
        (409, json!({"error": "conflict"}))
    );

    let mut moved = startup("f");
    moved["project"] = json!("elsewhere");
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &moved)
            .await
            .status,
        409
    );
}

#[tokio::test]
async fn unknown_and_foreign_natural_keys_are_404_and_foreign_run_ids_are_400() {
    let baton = Baton::start().await;
    let (_, owner_client) = baton.tenant_client("owner").await;
    let (_, other_client) = baton.tenant_client("other").await;
    let run_id = owner_client.open(&startup("mine")).await;

    for path in [
        "/api/v1/agent-sessions/heartbeat",
        "/api/v1/agent-sessions/close",
    ] {
        let foreign = other_client.post(path, &key("mine")).await;
        assert_eq!(
            (foreign.status, foreign.refusal()),
            (404, json!({"error": "not_found"})),
            "{path}"
        );
        let unknown = owner_client.post(path, &key("never-opened")).await;
        assert_eq!(unknown.status, 404, "{path}");
    }

    let foreign_row = other_client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(
        (foreign_row.status, foreign_row.refusal()),
        (400, json!({"error": "invalid_input"}))
    );
    let unknown_row = owner_client
        .get(&format!("/api/v1/agent-sessions/{}", uuid::Uuid::now_v7()))
        .await;
    assert_eq!(unknown_row.status, 400);
    let malformed_row = owner_client.get("/api/v1/agent-sessions/not-a-uuid").await;
    assert_eq!(malformed_row.status, 400);

    // The owner's row is untouched by the other tenant's attempts.
    let row = owner_client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["closedAt"], json!(null));
}

#[tokio::test]
async fn briefing_key_stamps_delivery_and_is_echoed_on_the_row() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("briefing").await;
    let commitment = "0190B3A4-7D2E-7C41-9A3B-2F1E4D5C6B7A";
    let mut body = startup("b");
    body["briefedMemories"] = json!([{"id": commitment, "topic": " ship it ", "status": "open"}]);
    let opened = client.post("/api/v1/agent-sessions/open", &body).await;
    assert_eq!(opened.status, 200, "{:?}", opened.body);
    assert!(is_iso(&opened.body["briefingDeliveredAt"]));
    let run_id = opened.body["sessionRunId"].as_str().expect("id");
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(
        row.body["briefedMemories"],
        json!([{"id": commitment.to_lowercase(), "topic": "ship it", "status": "open"}])
    );
    assert_eq!(
        row.body["briefingDeliveredAt"],
        opened.body["briefingDeliveredAt"]
    );
}
