//! The additive liveness routes and `observedAt` fields reject bad input clearly and change
//! nothing when they do.

use serde_json::json;

use baton_tests::Baton;

#[tokio::test]
async fn pulses_and_replays_are_validated_at_the_boundary() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("liveness-input").await;
    let other = baton.create_tenant("liveness-other").await;
    let run_id = client
        .open(&json!({"agent": "codex", "sessionId": "v", "source": "startup"}))
        .await;
    let pulse = json!({"agent": "codex", "sessionId": "v", "episodeId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a",
        "client": "codex", "hostId": "h-abc", "pid": 4242, "clientVersion": "0.162.0-alpha.17.2"});
    let accepted = client.post("/api/v1/agent-sessions/pulse", &pulse).await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    assert_eq!(
        accepted.body,
        json!({"sessionRunId": run_id, "liveness": "live"})
    );

    let with = |key: &str, value: serde_json::Value| {
        let mut body = pulse.clone();
        body[key] = value;
        body
    };
    let bad = [
        ("episodeId", json!("not-a-uuid")),
        ("pid", json!(0)),
        ("pid", json!(-1)),
        ("client", json!("Codex CLI")),
        ("hostId", json!("")),
        ("clientVersion", json!("1.0 (beta)")),
        ("endReason", json!("crashed")),
        ("observedAt", json!("yesterday")),
        ("hostName", json!("laptop")),
    ];
    for (key, value) in bad {
        let answer = client
            .post("/api/v1/agent-sessions/pulse", &with(key, value.clone()))
            .await;
        assert_eq!(answer.status, 400, "{key}={value}: {:?}", answer.body);
        assert_eq!(answer.body["error"], "invalid_input");
    }
    let unknown = client
        .post(
            "/api/v1/agent-sessions/pulse",
            &with("sessionId", json!("nope")),
        )
        .await;
    assert_eq!(unknown.status, 404);
    let foreign = baton
        .client(&other)
        .post("/api/v1/agent-sessions/pulse", &pulse)
        .await;
    assert_eq!(
        foreign.status, 404,
        "another tenant's session does not exist for this key"
    );

    let read = client
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(
        read.body["episodes"].as_array().expect("episodes").len(),
        1,
        "rejected pulses wrote nothing"
    );
    assert_eq!(
        read.body["episodes"][0]["clientVersion"],
        "0.162.0-alpha.17.2"
    );
    assert_eq!(read.body["episodes"][0]["endedAt"], serde_json::Value::Null);
    let hidden = baton
        .client(&other)
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await;
    assert_eq!(
        hidden.status, 400,
        "a foreign run id reads like an unknown one"
    );
    let malformed = client
        .get("/api/v1/agent-sessions/not-a-uuid/liveness")
        .await;
    assert_eq!(malformed.status, 400);

    for path in [
        "/api/v1/agent-sessions/heartbeat",
        "/api/v1/agent-sessions/close",
    ] {
        let answer = client
            .post(
                path,
                &json!({"agent": "codex", "sessionId": "v", "observedAt": "2026-13-01T00:00:00Z"}),
            )
            .await;
        assert_eq!(answer.status, 400, "{path}");
    }
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(
        row.body["closedAt"],
        serde_json::Value::Null,
        "the rejected close changed nothing"
    );

    let follows_self = client
        .post("/api/v1/agent-sessions/open",
            &json!({"agent": "codex", "sessionId": "w", "source": "startup", "followsSessionId": "w"}))
        .await;
    assert_eq!(follows_self.status, 400);
}

#[tokio::test]
async fn a_replayed_close_is_stamped_at_its_clamped_observation_time() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("replay-close").await;
    let client = baton.client(&tenant).at("2026-09-01T10:00:00.000Z");
    let open = json!({"agent": "codex", "sessionId": "r", "source": "startup"});
    client.post("/api/v1/agent-sessions/open", &open).await;
    let later = baton.client(&tenant).at("2026-09-01T10:05:00.000Z");
    let heartbeat = later
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "codex", "sessionId": "r", "observedAt": "2026-09-01T10:02:00.000Z"}),
        )
        .await;
    assert_eq!(heartbeat.body["lastSeenAt"], "2026-09-01T10:02:00.000Z");
    // Observed before the last activity: clamped up to it.
    let closed = later
        .post(
            "/api/v1/agent-sessions/close",
            &json!({"agent": "codex", "sessionId": "r", "observedAt": "2026-09-01T09:00:00.000Z"}),
        )
        .await;
    assert_eq!(closed.body["closedAt"], "2026-09-01T10:02:00.000Z");
    // A replayed heartbeat observed before that close changes nothing.
    let stale = later
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "codex", "sessionId": "r", "observedAt": "2026-09-01T10:01:00.000Z"}),
        )
        .await;
    assert_eq!(stale.body["resurrected"], false);
    let row = later
        .get(&format!(
            "/api/v1/agent-sessions/{}",
            closed.body["sessionRunId"].as_str().expect("run")
        ))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["closedAt"], "2026-09-01T10:02:00.000Z");
    // One observed in the future is clamped to now.
    let future = later
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "codex", "sessionId": "r", "observedAt": "2030-01-01T00:00:00.000Z"}),
        )
        .await;
    assert_eq!(
        future.body["resurrected"], true,
        "observed after the close: the session is back"
    );
    assert_eq!(future.body["lastSeenAt"], "2026-09-01T10:05:00.000Z");
}
