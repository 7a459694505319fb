//! Strict bodies and bounds (CONTRACT section 0 and 2–4).

use serde_json::json;

use baton_tests::Baton;

use crate::startup;

#[tokio::test]
async fn unknown_keys_wrong_types_and_bad_values_are_invalid_input() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("strict").await;
    let cases = [
        (
            "open",
            json!({"agent": "claude-code", "sessionid": "x", "source": "startup"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "compact"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "clear"}),
        ),
        (
            "open",
            json!({"agent": "Claude", "sessionId": "x", "source": "startup"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "  ", "source": "startup"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "project": null}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "scope": "Work"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "activationEpoch": 1}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "sessionRunId": "x"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "briefingDeliveredAt": "x"}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "selector": {"kind": "all", "scope": "w"}}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "briefedMemories": [{"id": "nope", "topic": "t", "status": "open"}]}),
        ),
        (
            "open",
            json!({"agent": "claude-code", "sessionId": "x", "source": "startup", "briefedMemories": [{"id": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "topic": "t", "status": "open", "extra": 1}]}),
        ),
        (
            "heartbeat",
            json!({"agent": "claude-code", "sessionId": "x", "lastMessageExcerpt": ""}),
        ),
        (
            "heartbeat",
            json!({"agent": "claude-code", "sessionId": "x", "turnCount": 1}),
        ),
        (
            "close",
            json!({"agent": "claude-code", "sessionId": "x", "activationEpoch": 1}),
        ),
        (
            "close",
            json!({"agent": "claude-code", "sessionId": "x", "sessionRunId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}),
        ),
        ("close", json!({"agent": "claude-code"})),
    ];
    for (route, body) in cases {
        let answer = client
            .post(&format!("/api/v1/agent-sessions/{route}"), &body)
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_input"})),
            "{route} {body}"
        );
    }
    let too_many: Vec<_> = (0..101)
        .map(|_| json!({"id": uuid::Uuid::now_v7().to_string(), "topic": "t", "status": "open"}))
        .collect();
    let mut body = startup("many");
    body["briefedMemories"] = json!(too_many);
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &body)
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn malformed_json_is_invalid_request() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("json").await;
    for raw in ["{\"agent\":", "not json", ""] {
        let answer = client
            .post_raw("/api/v1/agent-sessions/open", raw.to_string())
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_request"})),
            "{raw}"
        );
    }
}

#[tokio::test]
async fn excerpt_of_exactly_4000_utf16_units_is_accepted_and_4001_rejected() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("excerpt").await;
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &startup("e"))
            .await
            .status,
        200
    );
    let beat = |excerpt: String| json!({"agent": "claude-code", "sessionId": "e", "lastMessageExcerpt": excerpt});
    // 2000 astral characters are 4000 UTF-16 units (and 8000 bytes).
    let exact = "😀".repeat(2000);
    let accepted = client
        .post("/api/v1/agent-sessions/heartbeat", &beat(exact.clone()))
        .await;
    assert_eq!(accepted.status, 200);
    let over = format!("{exact}a");
    let rejected = client
        .post("/api/v1/agent-sessions/heartbeat", &beat(over))
        .await;
    assert_eq!(rejected.status, 400);
    let ascii = client
        .post("/api/v1/agent-sessions/heartbeat", &beat("a".repeat(4000)))
        .await;
    assert_eq!(ascii.status, 200);
    let ascii_over = client
        .post("/api/v1/agent-sessions/heartbeat", &beat("a".repeat(4001)))
        .await;
    assert_eq!(ascii_over.status, 400);
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let baton = Baton::start_with(&[("BATON_GATEWAY__BODY_LIMIT", "2048")]).await;
    let (_, client) = baton.tenant_client("big").await;
    let body =
        json!({"agent": "claude-code", "sessionId": "x", "lastMessageExcerpt": "a".repeat(3000)});
    let answer = client.post("/api/v1/agent-sessions/heartbeat", &body).await;
    assert_eq!(
        (answer.status, answer.refusal()),
        (413, json!({"error": "payload_too_large"}))
    );
}
