//! The Stop handshake and the debrief prompt over HTTP (CONTRACT sections 5, 6, 8, 9).

use serde_json::{Value, json};

use baton_tests::Baton;

use crate::startup;

fn begin(session_id: &str, extra: Value) -> Value {
    let mut body = json!({"agent": "claude-code", "sessionId": session_id});
    if let (Some(target), Some(more)) = (body.as_object_mut(), extra.as_object()) {
        target.extend(more.clone());
    }
    body
}

#[tokio::test]
async fn the_nudge_handshake_round_trip_over_http() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("nudge").await;
    let client = baton.client(&tenant).at("2026-08-01T10:00:00.000Z");
    let run = crate::open_session(&client, "h").await;

    let debounced = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &begin("h", json!({})),
        )
        .await;
    assert_eq!(
        debounced.body,
        json!({"sessionRunId": run, "armed": false, "triageStatus": "idle", "reason": "debounce"}),
        "declines omit attemptId"
    );
    let armed = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &begin("h", json!({"turnCount": 3})),
        )
        .await;
    assert_eq!(armed.status, 200);
    assert_eq!(armed.body["armed"], true);
    assert_eq!(armed.body["triageStatus"], "pending");
    assert!(
        armed.body.get("reason").is_none(),
        "armed answers carry no reason"
    );
    let attempt = armed.body["attemptId"]
        .as_str()
        .expect("attempt")
        .to_string();

    let row = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["triageStatus"], "pending");

    let later = baton.client(&tenant).at("2026-08-01T10:01:00.000Z");
    let pending = later
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &begin("h", json!({"stopHookActive": true})),
        )
        .await;
    assert_eq!(pending.body["reason"], "pending");
    assert_eq!(
        pending.body["attemptId"],
        attempt.as_str(),
        "the in-flight attempt is handed back"
    );

    later
        .post("/api/v1/memories", &json!({"memoryType": "decision", "topic": "db", "content": "postgres", "sessionRunId": run}))
        .await;
    let complete =
        |attempt: &str| json!({"agent": "claude-code", "sessionId": "h", "attemptId": attempt});
    let done = later
        .post(
            "/api/v1/agent-sessions/triage/complete",
            &complete(&attempt),
        )
        .await;
    assert_eq!(
        done.body,
        json!({"sessionRunId": run, "triageStatus": "completed", "eventCount": 1, "sinceBeginCount": 1, "truncated": false})
    );
    let repeat = later
        .post(
            "/api/v1/agent-sessions/triage/complete",
            &complete(&attempt),
        )
        .await;
    assert_eq!(
        (repeat.status, repeat.refusal()),
        (409, json!({"error": "conflict"}))
    );

    let attempts = later
        .get(&format!("/api/v1/agent-sessions/{run}/triage-attempts"))
        .await;
    assert_eq!(attempts.status, 200);
    assert_eq!(attempts.body["count"], 1);
    assert_eq!(attempts.body["truncated"], false);
    let item = &attempts.body["items"][0];
    assert_eq!(item["attemptId"], attempt.as_str());
    assert_eq!(item["armedAt"], "2026-08-01T10:00:00.000Z");
    assert_eq!(item["outcome"], "completed");
    assert_eq!(item["finalizedAt"], "2026-08-01T10:01:00.000Z");
}

#[tokio::test]
async fn handshake_bodies_are_strict() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("strict-triage").await;
    client
        .post("/api/v1/agent-sessions/open", &startup("s"))
        .await;
    for extra in [
        json!({"turnCount": "4"}),
        json!({"turnCount": null}),
        json!({"turnCount": -1}),
        json!({"turnCount": 1.5}),
        json!({"turnCount": 100001}),
        json!({"stopHookActive": "true"}),
        json!({"attemptId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}),
        json!({"triageStatus": "idle"}),
        json!({"armed": true}),
        json!({"turncount": 1}),
    ] {
        let answer = client
            .post(
                "/api/v1/agent-sessions/triage/begin",
                &begin("s", extra.clone()),
            )
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_input"})),
            "{extra}"
        );
    }
    let edge = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &begin("s", json!({"turnCount": 100000})),
        )
        .await;
    assert_eq!(edge.status, 200);
    for body in [
        json!({"agent": "claude-code", "sessionId": "s"}),
        json!({"agent": "claude-code", "sessionId": "s", "attemptId": null}),
        json!({"agent": "claude-code", "sessionId": "s", "attemptId": "nope"}),
        json!({"agent": "claude-code", "sessionId": "s", "attemptId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "turnCount": 1}),
        json!({"agent": "claude-code", "sessionId": "s", "attemptid": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}),
    ] {
        let answer = client
            .post("/api/v1/agent-sessions/triage/complete", &body)
            .await;
        assert_eq!(answer.status, 400, "{body}");
    }
    let unknown = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &begin("never", json!({})),
        )
        .await;
    assert_eq!(
        (unknown.status, unknown.refusal()),
        (404, json!({"error": "not_found"}))
    );
    let wrong = client
        .post("/api/v1/agent-sessions/triage/complete", &json!({"agent": "claude-code", "sessionId": "s", "attemptId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}))
        .await;
    assert_eq!(wrong.status, 409);
}

#[tokio::test]
async fn the_debrief_prompt_over_http() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("debrief").await;
    let other = baton.create_tenant("other").await;
    let mut body = startup("d");
    body["briefedMemories"] =
        json!([{"id": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "topic": "cert", "status": "open"}]);
    client.post("/api/v1/agent-sessions/open", &body).await;

    let prompt = client
        .get("/api/v1/prompts/debrief?agent=claude-code&sessionId=d")
        .await;
    assert_eq!(prompt.status, 200);
    let text = prompt.body["prompt"].as_str().expect("prompt");
    assert!(text.contains("remember") && text.contains("resolve"));
    assert!(text.contains(
        "```json\n{\n  \"scope\": \"work\",\n  \"project\": \"baton\",\n  \"briefedCommitments\": ["
    ));
    let bare = client
        .get("/api/v1/prompts/debrief?project=elsewhere")
        .await;
    assert_eq!(bare.status, 200, "{:?}", bare.body);
    assert!(
        bare.body["prompt"]
            .as_str()
            .expect("prompt")
            .contains("```json\n{\n  \"project\": \"elsewhere\"\n}\n```")
    );

    for query in [
        "scopes=work",
        "scope=Work%20Notes",
        "scope=work&scope=personal",
        "agent=claude-code",
        "sessionId=d",
        "project=",
    ] {
        let answer = client
            .get(&format!("/api/v1/prompts/debrief?{query}"))
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_input"})),
            "{query}"
        );
    }
    let foreign = baton
        .client(&other)
        .get("/api/v1/prompts/debrief?agent=claude-code&sessionId=d")
        .await;
    assert_eq!(
        (foreign.status, foreign.refusal()),
        (404, json!({"error": "not_found"}))
    );
}
