//! A write whose COMMIT succeeds while its answer is lost (issue 26, R13). A proxy in front of
//! Postgres carries one service's connections, lets the targeted transaction commit, throws the
//! server's answer away and closes the connection: the database holds the write, the service
//! never heard. The caller gets a retryable 503, and its retry of the same request must find
//! the write already made and answer as an idempotent repeat, counting nothing twice.

use serde_json::{Value, json};
use uuid::Uuid;

use baton_kit::testing::TestDatabase;
use baton_proto::messages::{SESSION_CLOSED, SessionClosed};
use baton_tests::pg_cut_proxy::PgCutProxy;
use baton_tests::{Answer, Baton, Client};

use crate::bus_messages::Messages;
use crate::usage_upload::{BATCHES, NOW, totals, tree_batch};
use crate::{key, startup};

const CLOSE: &str = "/api/v1/agent-sessions/close";

/// The answer a caller gets when the service's connection died at COMMIT: a lost connection
/// is retryable, so 503 `service_unavailable` with `Retry-After`, never a 500.
fn assert_retryable(answer: &Answer) {
    assert_eq!(answer.status, 503, "{:?}", answer.body);
    assert_eq!(answer.body["error"], "service_unavailable");
    assert!(
        answer.headers.contains_key("retry-after"),
        "a 503 says when to retry: {:?}",
        answer.headers
    );
}

/// Starts Baton with `service`'s runtime pool (role `role`) through a cut proxy.
async fn start_through_proxy(service_url_key: &str, role: &str) -> (Baton, PgCutProxy) {
    let database = TestDatabase::create().await;
    let proxy = PgCutProxy::start(database.url()).await;
    let baton =
        Baton::start_on_database(database, &[(service_url_key, proxy.url_as(role).as_str())]).await;
    (baton, proxy)
}

/// The usage read without what differs by tenant (its id, the read's instant).
async fn usage_figures(client: &Client) -> Value {
    let mut figures = totals(client).await;
    if let Some(object) = figures.as_object_mut() {
        object.retain(|key, _| key == "groups" || key == "total");
    }
    figures
}

/// An upload whose COMMIT lands but whose answer is lost answers 503 with `Retry-After`; its
/// rows are stored all the same. The client's retry of the same body then answers 200 as a
/// repeat (every usage row unchanged, the delivery a duplicate, no edge inserted) and leaves
/// exactly the figures one upload of that body leaves: the rollups count it once.
#[tokio::test]
async fn an_upload_whose_commit_answer_is_lost_is_stored_once_and_its_retry_answers_as_a_repeat() {
    let (baton, proxy) = start_through_proxy("BATON_USAGE__DATABASE_URL", "baton_usage").await;
    let tenant = baton.create_tenant("lost-upload").await;
    let client = baton.client(&tenant).at(NOW);
    let batch = tree_batch("lost-1", &Uuid::new_v4().to_string());

    proxy.arm("INSERT INTO usage.token_usage", 1);
    let cut = client.post(BATCHES, &batch).await;
    assert_eq!(proxy.cuts(), 1, "the upload's COMMIT answer was lost");
    assert_retryable(&cut);

    let admin = baton.admin().await;
    let tenant_id: Uuid = tenant.tenant_id.parse().expect("tenant id");
    let (usage_rows, deliveries): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM usage.token_usage WHERE tenant_id = $1), \
                (SELECT count(*) FROM usage.hook_deliveries WHERE tenant_id = $1)",
    )
    .bind(tenant_id)
    .fetch_one(&admin)
    .await
    .expect("stored rows");
    assert_eq!(
        (usage_rows, deliveries),
        (2, 1),
        "the upload committed although its caller saw a 503"
    );

    let retry = client.post(BATCHES, &batch).await;
    assert_eq!(retry.status, 200, "{:?}", retry.body);
    assert_eq!(
        (
            &retry.body["usageInserted"],
            &retry.body["usageUnchanged"],
            &retry.body["deliveriesDuplicate"],
            &retry.body["edgesInserted"]
        ),
        (&json!(0), &json!(2), &json!(1), &json!(0)),
        "the retry finds its own write: {:?}",
        retry.body
    );

    // The same body uploaded once, with no answer lost, by a tenant of its own.
    let control = baton
        .client(&baton.create_tenant("lost-upload-control").await)
        .at(NOW);
    let once = control.post(BATCHES, &batch).await;
    assert_eq!(once.status, 200, "{:?}", once.body);
    let figures = usage_figures(&client).await;
    assert_eq!(figures["total"]["tokens"]["output"], 50 + 70);
    assert_eq!(figures["total"]["requests"], 2);
    assert_eq!(
        figures,
        usage_figures(&control).await,
        "a lost answer and its retry count what one upload counts"
    );
    assert_eq!(proxy.cuts(), 1, "only the first COMMIT was cut");
}

/// A close whose COMMIT lands but whose answer is lost answers 503 with `Retry-After`; the
/// session is closed all the same. The client's retry answers 200 `alreadyClosed: true` with
/// the stored `closedAt`, and the bus carries one `registry.session.closed` for the run: the
/// retry closes nothing a second time.
#[tokio::test]
async fn a_close_whose_commit_answer_is_lost_closes_once_and_its_retry_answers_already_closed() {
    let (baton, proxy) =
        start_through_proxy("BATON_REGISTRY__DATABASE_URL", "baton_registry").await;
    let (_, client) = baton.tenant_client("lost-close").await;
    let mut closed_messages = Messages::bind(&baton, SESSION_CLOSED).await;
    let run_id = crate::open_session(&client, "lost-1").await;
    let sentinel = client
        .post("/api/v1/agent-sessions/open", &startup("sentinel"))
        .await;
    assert_eq!(sentinel.status, 200, "{:?}", sentinel.body);
    let sentinel_id: Uuid = sentinel.body["sessionRunId"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");

    // The close's message is written to the outbox in the close's transaction.
    proxy.arm("INSERT INTO registry.outbox", 1);
    let cut = client.post(CLOSE, &key("lost-1")).await;
    assert_eq!(proxy.cuts(), 1, "the close's COMMIT answer was lost");
    assert_retryable(&cut);

    let stored = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(stored.status, 200, "{:?}", stored.body);
    assert!(
        stored.body["closedAt"].is_string(),
        "the close committed although its caller saw a 503: {:?}",
        stored.body
    );

    let retry = client.post(CLOSE, &key("lost-1")).await;
    assert_eq!(retry.status, 200, "{:?}", retry.body);
    assert_eq!(retry.body["alreadyClosed"], true, "{:?}", retry.body);
    assert_eq!(retry.body["closedAt"], stored.body["closedAt"]);
    assert_eq!(retry.body["activationEpoch"], 1);

    // The outbox is published in commit order, so a second message for the run would arrive
    // before the sentinel's, which is written after the retry.
    let sentinel_close = client.post(CLOSE, &key("sentinel")).await;
    assert_eq!(sentinel_close.status, 200, "{:?}", sentinel_close.body);
    let mut closes_of_run = 0;
    loop {
        let envelope = closed_messages.next().await;
        let closed: SessionClosed = envelope.payload(SESSION_CLOSED).expect("payload");
        if closed.session_run_id == sentinel_id {
            break;
        }
        assert_eq!(closed.session_run_id.to_string(), run_id);
        closes_of_run += 1;
    }
    assert_eq!(closes_of_run, 1, "one session.closed for one close");
    assert_eq!(proxy.cuts(), 1, "only the first COMMIT was cut");
}
