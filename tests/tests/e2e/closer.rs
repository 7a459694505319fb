//! The closer end to end: real processes, Postgres and RabbitMQ (CONTRACT Part 2 table H).

use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use baton_tests::judge::FakeJudge;
use baton_tests::{Baton, Client};

const ENABLED: (&str, &str) = ("BATON_CLOSER__ENABLED", "true");

/// A commitment the evidence judge can recognise as done from [`DONE`].
pub async fn commitment(client: &Client, topic: &str, content: &str) -> String {
    let answer = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "commitment", "topic": topic, "content": content, "project": "baton"}),
        )
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    answer.body["memory"]["id"]
        .as_str()
        .expect("id")
        .to_string()
}

/// Opens a session briefed on `briefed` (memory id, topic) and returns its run id.
pub async fn open_briefed(client: &Client, session_id: &str, briefed: &[(&str, &str)]) -> String {
    let rows: Vec<Value> = briefed
        .iter()
        .map(|(id, topic)| json!({"id": id, "topic": topic, "status": "open"}))
        .collect();
    let body = json!({"agent": "claude-code", "sessionId": session_id, "source": "startup",
                      "project": "baton", "briefedMemories": rows});
    let answer = client.post("/api/v1/agent-sessions/open", &body).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string()
}

/// Opens `session_id` briefed on one commitment the judge can see done; (run id, memory id).
pub async fn open_briefed_on_done(client: &Client, session_id: &str) -> (String, String) {
    let done = commitment(
        client,
        "orders-uuid",
        "Migrate the orders table to uuid keys",
    )
    .await;
    let run = open_briefed(client, session_id, &[(&done, "orders-uuid")]).await;
    (run, done)
}

/// Opens `session_id` briefed on a commitment the judge can see done and one it cannot;
/// (run id, done memory id, open memory id).
pub async fn open_briefed_on_two(client: &Client, session_id: &str) -> (String, String, String) {
    let done = commitment(
        client,
        "orders-uuid",
        "Migrate the orders table to uuid keys",
    )
    .await;
    let open = commitment(
        client,
        "billing-retries",
        "Add retries to the billing webhook",
    )
    .await;
    let briefed = [
        (done.as_str(), "orders-uuid"),
        (open.as_str(), "billing-retries"),
    ];
    let run = open_briefed(client, session_id, &briefed).await;
    (run, done, open)
}

/// The session reports [`DONE`] as its last words, then closes.
pub async fn finish(client: &Client, session_id: &str) {
    heartbeat(client, session_id, DONE).await;
    close(client, session_id).await;
}

pub async fn heartbeat(client: &Client, session_id: &str, excerpt: &str) -> Value {
    let body =
        json!({"agent": "claude-code", "sessionId": session_id, "lastMessageExcerpt": excerpt});
    let answer = client.post("/api/v1/agent-sessions/heartbeat", &body).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

pub async fn close(client: &Client, session_id: &str) {
    let answer = client
        .post(
            "/api/v1/agent-sessions/close",
            &json!({"agent": "claude-code", "sessionId": session_id}),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
}

/// Waits for the pass of (run, epoch) to settle; returns (state, outcome, resolved).
pub async fn settled_pass(
    admin: &sqlx::PgPool,
    run: &str,
    epoch: i64,
    timeout: Duration,
) -> (String, String, i32) {
    let run: Uuid = run.parse().expect("uuid");
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let row: Option<(String, Option<String>, i32)> = sqlx::query_as(
            "SELECT state, outcome, resolved FROM closer.passes WHERE session_run_id = $1 AND activation_epoch = $2",
        )
        .bind(run)
        .bind(epoch)
        .fetch_optional(admin)
        .await
        .expect("passes");
        if let Some((state, Some(outcome), resolved)) = row {
            return (state, outcome, resolved);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no settled pass for {run} epoch {epoch}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn commitment_status(client: &Client, memory_id: &str) -> String {
    let answer = client.get(&format!("/api/v1/memories/{memory_id}")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["commitment"]["status"]
        .as_str()
        .expect("commitment")
        .to_string()
}

async fn excerpt(admin: &sqlx::PgPool, run: &str) -> Option<String> {
    let run: Uuid = run.parse().expect("uuid");
    sqlx::query_scalar("SELECT last_message_excerpt FROM registry.agent_sessions WHERE id = $1")
        .bind(run)
        .fetch_one(admin)
        .await
        .expect("row")
}

/// Waits until the registry's outbox has published everything and the closer's inbox holds
/// `messages` processed message ids: past this point no message is on its way that could start
/// another pass, so a pass count read now is final (a wait on the event, not a pause).
async fn every_close_consumed(admin: &sqlx::PgPool, messages: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (unpublished, processed): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM registry.outbox), (SELECT count(*) FROM closer.inbox)",
        )
        .fetch_one(admin)
        .await
        .expect("outbox and inbox");
        if unpublished == 0 && processed >= messages {
            assert_eq!(processed, messages, "one processed message per close");
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{unpublished} unpublished, {processed} of {messages} processed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn passes_of(admin: &sqlx::PgPool, run: &str) -> i64 {
    let run: Uuid = run.parse().expect("uuid");
    sqlx::query_scalar("SELECT count(*) FROM closer.passes WHERE session_run_id = $1")
        .bind(run)
        .fetch_one(admin)
        .await
        .expect("count")
}

const DONE: &str = "Done: migrated the orders table to uuid keys and the suite passes.";

#[tokio::test]
async fn an_explicit_close_resolves_what_the_session_completed_in_one_pass() {
    let baton = Baton::start_with(&[ENABLED]).await;
    let (_, client) = baton.tenant_client("closer").await;
    let admin = baton.admin().await;
    let (run, done, other) = open_briefed_on_two(&client, "c-1").await;
    finish(&client, "c-1").await;

    let (state, outcome, resolved) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(
        (state.as_str(), outcome.as_str(), resolved),
        ("finished", "completed", 1)
    );
    assert_eq!(commitment_status(&client, &done).await, "resolved");
    assert_eq!(
        commitment_status(&client, &other).await,
        "open",
        "not evidenced, not resolved"
    );
    let events = client
        .get(&format!("/api/v1/agent-sessions/{run}/events"))
        .await;
    assert_eq!(events.status, 200, "{:?}", events.body);
    let resolve = events.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|item| item["eventKind"] == "resolve")
        .cloned()
        .expect("the closer's resolve is in the run");
    assert_eq!(resolve["actorKind"], "worker");
    assert_eq!(resolve["memoryId"], done.as_str());
    let row = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["triageStatus"], "completed");
    assert!(
        row.body["closedAt"].is_string(),
        "the closer never resurrects"
    );
    assert_eq!(
        excerpt(&admin, &run).await,
        None,
        "cleared once the verdict is durable"
    );
    every_close_consumed(&admin, 1).await;
    assert_eq!(passes_of(&admin, &run).await, 1, "exactly one pass");

    // Undo is a plain unresolve.
    let undo = client
        .post(
            &format!("/api/v1/memories/{done}/resolve"),
            &json!({"status": "open"}),
        )
        .await;
    assert_eq!(undo.body["status"], "open");

    // Resurrected and closed again with nothing new: completed, no new events → not eligible.
    heartbeat(&client, "c-1", "back").await;
    close(&client, "c-1").await;
    let (_, outcome, _) = settled_pass(&admin, &run, 2, Duration::from_secs(30)).await;
    assert_eq!(outcome, "not-eligible");
}

#[tokio::test]
async fn an_implicit_close_by_the_sweep_leads_to_exactly_one_pass_and_grace_holds() {
    let baton = Baton::start_with(&[ENABLED]).await;
    let (_, client) = baton.tenant_client("sweep").await;
    let admin = baton.admin().await;
    let start = client.at("2026-09-01T08:00:00.000Z");
    let (run, _) = open_briefed_on_done(&start, "s-1").await;
    heartbeat(&start, "s-1", DONE).await;

    // Past the lease but inside the grace: nothing closes.
    let inside = client.at("2026-09-02T08:30:00.000Z");
    let sweep = inside.post("/api/v1/_test/sweep", &json!({})).await;
    assert_eq!(
        (sweep.status, sweep.body["closed"].clone()),
        (200, json!(0)),
        "{:?}",
        sweep.body
    );
    // Past lease and grace: it closes, implicitly, and the closer runs once.
    let past = client.at("2026-09-02T09:00:00.001Z");
    let sweep = past.post("/api/v1/_test/sweep", &json!({})).await;
    assert_eq!(sweep.body["closed"], 1);
    let (_, outcome, resolved) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!((outcome.as_str(), resolved), ("completed", 1));
    let again = past.post("/api/v1/_test/sweep", &json!({})).await;
    assert_eq!(again.body["closed"], 0, "each row closes once");
    every_close_consumed(&admin, 1).await;
    assert_eq!(passes_of(&admin, &run).await, 1, "exactly one pass");

    // Implicitly closed, so a later heartbeat resurrects it.
    let back = heartbeat(&client.at("2026-09-03T09:00:00.000Z"), "s-1", "back").await;
    assert_eq!(back["resurrected"], true);
}

#[tokio::test]
async fn nothing_briefed_and_overflowed_settle_without_a_generation_and_keep_the_excerpt() {
    let baton = Baton::start_with(&[ENABLED]).await;
    let (tenant, client) = baton.tenant_client("settle").await;
    let admin = baton.admin().await;
    let run = open_briefed(&client, "n-1", &[]).await;
    heartbeat(&client, "n-1", "Nothing to hand on.").await;
    close(&client, "n-1").await;
    let (_, outcome, _) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(outcome, "nothing-briefed");
    assert_eq!(
        excerpt(&admin, &run).await.as_deref(),
        Some("Nothing to hand on.")
    );

    let (flooded, done) = open_briefed_on_done(&client, "o-1").await;
    heartbeat(&client, "o-1", DONE).await;
    flood(&admin, &tenant.tenant_id, &flooded, 501).await;
    close(&client, "o-1").await;
    let (_, outcome, resolved) = settled_pass(&admin, &flooded, 1, Duration::from_secs(30)).await;
    assert_eq!((outcome.as_str(), resolved), ("overflowed", 0));
    assert_eq!(commitment_status(&client, &done).await, "open");
    assert!(
        excerpt(&admin, &flooded).await.is_some(),
        "kept on overflow"
    );
    let row = client
        .get(&format!("/api/v1/agent-sessions/{flooded}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["triageStatus"], "overflowed");
}

/// Inserts `count` attributed events for a run (real rows, as the admin).
pub async fn flood(admin: &sqlx::PgPool, tenant: &str, run: &str, count: usize) {
    let tenant: Uuid = tenant.parse().expect("uuid");
    let run: Uuid = run.parse().expect("uuid");
    baton_provenance::testing::seed_events(admin, tenant, run, count).await;
}

#[tokio::test]
async fn a_resurrection_while_the_judge_decides_fences_the_pass() {
    let judge = FakeJudge::start(Duration::ZERO, true).await;
    let baton = Baton::start_with(&[
        ENABLED,
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
    ])
    .await;
    let (_, client) = baton.tenant_client("fence").await;
    let admin = baton.admin().await;
    let (run, first, second) = open_briefed_on_two(&client, "f-1").await;
    finish(&client, "f-1").await;

    assert!(
        judge.wait_for_requests(1, Duration::from_secs(30)).await,
        "the judge was asked"
    );
    let back = heartbeat(&client, "f-1", "I'm back").await;
    assert_eq!(back["resurrected"], true);
    assert_eq!(back["activationEpoch"], 2);
    judge.release();

    let (_, outcome, resolved) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(
        (outcome.as_str(), resolved),
        ("fenced", 0),
        "stops before its next resolve"
    );
    assert_eq!(commitment_status(&client, &first).await, "open");
    assert_eq!(commitment_status(&client, &second).await, "open");
    assert_eq!(
        excerpt(&admin, &run).await.as_deref(),
        Some("I'm back"),
        "no bookkeeping under the old epoch"
    );
    let row = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["closedAt"], json!(null));
    assert_ne!(row.body["triageStatus"], "completed", "no verdict written");
    let usage: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(tokens), 0)::bigint FROM closer.usage WHERE kind = 'usage'",
    )
    .fetch_one(&admin)
    .await
    .expect("usage");
    assert_eq!(usage, 321, "the generation itself was metered");
}

#[tokio::test]
async fn over_budget_the_pass_is_refused_and_nothing_is_billed() {
    let judge = FakeJudge::start(Duration::ZERO, false).await;
    let baton = Baton::start_with(&[
        ENABLED,
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
        ("BATON_CLOSER__MONTHLY_TOKEN_BUDGET", "10"),
    ])
    .await;
    let (_, client) = baton.tenant_client("budget").await;
    let admin = baton.admin().await;
    let (run, _) = open_briefed_on_done(&client, "b-1").await;
    close(&client, "b-1").await;
    let (state, outcome, _) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(
        (state.as_str(), outcome.as_str()),
        ("failed", "refused"),
        "recorded, retried later"
    );
    assert_eq!(judge.requests(), 0, "no generation ran");
    let billed: i64 = sqlx::query_scalar("SELECT count(*) FROM closer.usage")
        .fetch_one(&admin)
        .await
        .expect("usage");
    assert_eq!(billed, 0);
    let next: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT next_attempt_at FROM closer.passes WHERE session_run_id = $1")
            .bind(run.parse::<Uuid>().expect("uuid"))
            .fetch_one(&admin)
            .await
            .expect("pass");
    assert!(next.is_some(), "backoff scheduled");
}
