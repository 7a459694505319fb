//! Time bounds (issue 9): a pulse's `observedAt` cannot backdate an episode before its
//! session opened, and the test clock stays within 2000..2100.

use serde_json::json;

use baton_tests::Baton;

use crate::startup;

#[tokio::test]
async fn pulses_cannot_predate_their_session_and_the_test_clock_is_bounded() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("time").await;
    let client = baton.client(&tenant).at("2026-09-01T10:00:00.000Z");
    let opened = client
        .post("/api/v1/agent-sessions/open", &startup("t"))
        .await;
    assert_eq!(opened.status, 200);
    let run_id = opened.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string();
    let pulse = json!({"agent": "claude-code", "sessionId": "t",
        "episodeId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "client": "claude-code",
        "hostId": "host", "pid": 7, "observedAt": "0001-01-01T00:00:00Z"});
    let pulsed = client.post("/api/v1/agent-sessions/pulse", &pulse).await;
    assert_eq!(pulsed.status, 200, "{}", pulsed.body);
    let liveness = client
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await;
    assert_eq!(liveness.status, 200, "{:?}", liveness.body);
    assert_eq!(
        liveness.body["episodes"][0]["startedAt"], opened.body["openedAt"],
        "the episode starts no earlier than the session"
    );
    for (instant, status) in [
        ("9999-12-31T00:00:00Z", 400),
        ("1999-12-31T23:59:59Z", 400),
        ("2099-12-31T00:00:00Z", 200),
    ] {
        let answer = baton
            .client(&tenant)
            .at(instant)
            .get(&format!("/api/v1/agent-sessions/{run_id}"))
            .await;
        assert_eq!(answer.status, status, "{instant}");
    }
}
