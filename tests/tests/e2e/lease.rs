//! Lease expiry and resurrection, driven by the test clock (no sleeping for a lease).

use serde_json::json;

use baton_tests::Baton;

use crate::{key, startup};

#[tokio::test]
async fn expired_lease_resurrects_on_heartbeat_and_reads_back_live() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("lease").await;
    let day_one = client.at("2026-05-01T09:00:00.000Z");
    let opened = day_one
        .post("/api/v1/agent-sessions/open", &startup("l"))
        .await;
    assert_eq!(opened.body["openedAt"], "2026-05-01T09:00:00.000Z");
    let run_id = opened.body["sessionRunId"]
        .as_str()
        .expect("id")
        .to_string();

    // Just inside the lease: an ordinary refresh.
    let inside = client.at("2026-05-02T08:59:59.999Z");
    let beat = inside
        .post("/api/v1/agent-sessions/heartbeat", &key("l"))
        .await;
    assert_eq!(
        (
            beat.body["resurrected"].clone(),
            beat.body["activationEpoch"].clone()
        ),
        (json!(false), json!(1))
    );

    // Two days later the lease has run out: the heartbeat resurrects, epoch + 1.
    let later = client.at("2026-05-04T12:00:00.000Z");
    let revived = later
        .post("/api/v1/agent-sessions/heartbeat", &key("l"))
        .await;
    assert_eq!(revived.body["resurrected"], true);
    assert_eq!(revived.body["activationEpoch"], 2);
    assert_eq!(revived.body["lastSeenAt"], "2026-05-04T12:00:00.000Z");
    let again = later
        .post("/api/v1/agent-sessions/heartbeat", &key("l"))
        .await;
    assert_eq!(again.body["resurrected"], false);

    // Explicit close then a startup reopen a week later.
    let closed = later.post("/api/v1/agent-sessions/close", &key("l")).await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    assert_eq!(closed.body["closedAt"], "2026-05-04T12:00:00.000Z");
    let week = client.at("2026-05-11T12:00:00.000Z");
    let reopened = week
        .post("/api/v1/agent-sessions/open", &startup("l"))
        .await;
    assert_eq!(reopened.status, 200, "{:?}", reopened.body);
    assert_eq!(reopened.body["reopened"], true);
    assert_eq!(reopened.body["activationEpoch"], 3);
    assert_eq!(reopened.body["openedAt"], "2026-05-01T09:00:00.000Z");
    let row = week.get(&format!("/api/v1/agent-sessions/{run_id}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["lastSeenAt"], "2026-05-11T12:00:00.000Z");
    assert_eq!(row.body["closedAt"], json!(null));
}

#[tokio::test]
async fn the_row_read_never_refreshes_the_lease() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("read").await;
    let start = client.at("2026-05-01T09:00:00.000Z");
    let opened = start
        .post("/api/v1/agent-sessions/open", &startup("r"))
        .await;
    let run_id = opened.body["sessionRunId"].as_str().expect("id");
    let later = client.at("2026-05-01T20:00:00.000Z");
    let row = later.get(&format!("/api/v1/agent-sessions/{run_id}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["lastSeenAt"], "2026-05-01T09:00:00.000Z");
}

#[tokio::test]
async fn a_malformed_test_instant_is_rejected() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("clock").await;
    let answer = baton
        .client(&tenant)
        .at("tomorrow")
        .post("/api/v1/agent-sessions/open", &startup("c"))
        .await;
    assert_eq!(answer.status, 400);
}
