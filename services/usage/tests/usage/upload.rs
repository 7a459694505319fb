use tonic::Code;
use uuid::Uuid;

use baton_kit::testing::WritesHeld;
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

fn full_batch() -> proto::UploadBatchRequest {
    let mut request = batch("host-a");
    request.sessions = vec![session("s-1")];
    request.agents = vec![subagent("s-1", "a1", "claude-haiku-4-5")];
    request.edges = vec![edge("s-1", "a1", "tool_result")];
    request.usage = vec![
        lead("msg_1:req_1", "claude-opus-4-5", "2026-03-01T10:01:00Z", 50),
        sidechain(
            "a1",
            "msg_2:req_2",
            "claude-haiku-4-5",
            "2026-03-01T10:06:00Z",
            70,
        ),
    ];
    request.deliveries = vec![delivery("s-1", "UserPromptSubmit", "2026-03-01T10:00:00Z")];
    request
}

#[tokio::test]
async fn the_same_batch_twice_changes_nothing() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = full_batch();
    let first = harness.upload(tenant, NOW, request.clone()).await;
    assert_eq!(
        (
            first.usage_inserted,
            first.edges_inserted,
            first.deliveries_inserted
        ),
        (2, 1, 1)
    );
    let before = snapshot(&harness.admin, tenant).await;
    let second = harness
        .upload(tenant, "2026-03-01T10:31:00Z", request)
        .await;
    assert_eq!(
        (
            second.usage_inserted,
            second.usage_replaced,
            second.usage_unchanged,
            second.edges_inserted,
            second.deliveries_inserted,
            second.deliveries_duplicate
        ),
        (0, 0, 2, 0, 0, 1)
    );
    assert_eq!(snapshot(&harness.admin, tenant).await, before);
    assert_rollups_consistent(&harness.admin, tenant).await;
}

#[tokio::test]
async fn a_larger_output_replaces_a_smaller_does_not_and_a_sidechain_yields() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, full_batch()).await;
    let output_of = |key: &'static str| {
        let admin = harness.admin.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT output FROM usage.token_usage WHERE tenant_id = $1 AND dedup_key = $2",
            )
            .bind(tenant)
            .bind(key)
            .fetch_one(&admin)
            .await
            .expect("row")
        }
    };
    let cases = [
        ("larger output replaces", 80, false, (0, 1, 0), 80),
        ("smaller output does not", 60, false, (0, 0, 1), 80),
        (
            "a sidechain copy yields, however large",
            900,
            true,
            (0, 0, 1),
            80,
        ),
    ];
    for (name, output, sidechain, counts, expected) in cases {
        let mut request = batch("host-b");
        let mut copy = lead(
            "msg_1:req_1",
            "claude-opus-4-5",
            "2026-03-01T10:01:00Z",
            output,
        );
        copy.sidechain = sidechain;
        request.usage = vec![copy];
        let answer = harness
            .grpc
            .upload_batch(call(tenant, NOW, request))
            .await
            .expect(name)
            .into_inner();
        assert_eq!(
            (
                answer.usage_inserted,
                answer.usage_replaced,
                answer.usage_unchanged
            ),
            counts,
            "{name}"
        );
        assert_eq!(output_of("msg_1:req_1").await, expected, "{name}");
        assert_rollups_consistent(&harness.admin, tenant).await;
    }
    // The replacement moved the row to the host that sent it; hosts accumulate on the session.
    let hosts: Vec<String> =
        sqlx::query_scalar("SELECT unnest(host_ids) FROM usage.sessions WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&harness.admin)
            .await
            .expect("hosts");
    assert_eq!(hosts, ["host-a", "host-b"]);
}

/// A batch of new keys is written by one plain insert; one held key anywhere in it fails that
/// insert as a whole, and the batch is then written key by key under the collision rule: the
/// new rows inserted, the held one decided, nothing counted twice.
#[tokio::test]
async fn a_batch_of_new_keys_with_one_held_key_inserts_the_new_and_decides_the_held() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, full_batch()).await;
    let mut request = batch("host-a");
    request.usage = vec![
        lead("msg_0:req_0", "claude-opus-4-5", "2026-03-01T10:00:30Z", 10),
        lead("msg_1:req_1", "claude-opus-4-5", "2026-03-01T10:01:00Z", 90),
        lead("msg_9:req_9", "claude-opus-4-5", "2026-03-01T10:09:00Z", 30),
    ];
    let answer = harness.upload(tenant, NOW, request.clone()).await;
    assert_eq!(
        (
            answer.usage_inserted,
            answer.usage_replaced,
            answer.usage_unchanged
        ),
        (2, 1, 0)
    );
    let outputs: Vec<(String, i64)> = sqlx::query_as(
        "SELECT dedup_key, output FROM usage.token_usage WHERE tenant_id = $1 ORDER BY dedup_key",
    )
    .bind(tenant)
    .fetch_all(&harness.admin)
    .await
    .expect("rows");
    let expected = [
        ("msg_0:req_0", 10),
        ("msg_1:req_1", 90),
        ("msg_2:req_2", 70),
        ("msg_9:req_9", 30),
    ]
    .map(|(key, output)| (key.to_string(), output));
    assert_eq!(outputs, expected);
    assert_rollups_consistent(&harness.admin, tenant).await;
    // Sent again, every key is held: nothing moves.
    let again = harness.upload(tenant, NOW, request).await;
    assert_eq!(
        (
            again.usage_inserted,
            again.usage_replaced,
            again.usage_unchanged
        ),
        (0, 0, 3)
    );
    assert_rollups_consistent(&harness.admin, tenant).await;
}

#[tokio::test]
async fn unknown_references_are_not_found_and_nothing_is_written() {
    let (harness, tenant) = Harness::with_tenant().await;
    let other = Uuid::new_v4();
    harness.upload(other, NOW, full_batch()).await;
    let cases: Vec<(&str, proto::UploadBatchRequest)> = vec![
        ("another tenant's session", {
            let mut request = batch("h");
            request.usage = vec![lead("k", "claude-opus-4-5", "2026-03-01T10:01:00Z", 1)];
            request
        }),
        ("an agent that is nowhere", {
            let mut request = batch("h");
            request.sessions = vec![session("s-2")];
            request.usage = vec![row(
                "s-2",
                Some("ghost"),
                "k",
                "claude-opus-4-5",
                "2026-03-01T10:01:00Z",
                1,
            )];
            request
        }),
        ("an edge to an unknown child", {
            let mut request = batch("h");
            request.sessions = vec![session("s-3")];
            request.edges = vec![edge("s-3", "ghost", "meta_file")];
            request
        }),
    ];
    for (name, request) in cases {
        let status = harness
            .grpc
            .upload_batch(call(tenant, NOW, request))
            .await
            .expect_err(name);
        assert_eq!(status.code(), Code::NotFound, "{name}");
        assert!(snapshot(&harness.admin, tenant).await.is_empty(), "{name}");
    }
}

#[tokio::test]
async fn a_stored_end_is_sticky_and_deliveries_only_raise_the_status_instants() {
    let (harness, tenant) = Harness::with_tenant().await;
    let mut request = full_batch();
    request.agents[0].ended = Some("completed".to_string());
    request.agents[0].ended_at = ts("2026-03-01T10:10:00Z");
    harness.upload(tenant, NOW, request).await;
    // Later activity with no end evidence, and an earlier prompt delivery.
    let mut later = batch("host-a");
    let mut agent = subagent("s-1", "a1", "claude-haiku-4-5");
    agent.last_activity_at = ts("2026-03-01T10:25:00Z");
    later.agents = vec![agent];
    later.deliveries = vec![delivery("s-1", "UserPromptSubmit", "2026-03-01T09:00:00Z")];
    harness.upload(tenant, NOW, later).await;
    let (ended, prompt): (Option<String>, Option<chrono::DateTime<chrono::Utc>>) = sqlx::query_as(
        "SELECT a.ended, s.last_prompt_at FROM usage.agents a JOIN usage.sessions s \
           USING (tenant_id, agent, session_id) WHERE a.tenant_id = $1 AND a.agent_id = 'a1'",
    )
    .bind(tenant)
    .fetch_one(&harness.admin)
    .await
    .expect("row");
    assert_eq!(ended.as_deref(), Some("completed"));
    assert_eq!(prompt, Some(at("2026-03-01T10:00:00Z")));
}

#[tokio::test]
async fn a_delivery_needs_no_stored_session_and_its_stop_reaches_the_session_stored_later() {
    let (harness, tenant) = Harness::with_tenant().await;
    // SessionStart and a Stop, recorded before any transcript of the session was uploaded
    // (a Codex session without a transcript path, or the first seconds of any session).
    let mut first = batch("host-a");
    first.deliveries = ["SessionStart", "Stop"]
        .iter()
        .zip(["2026-03-01T10:00:00Z", "2026-03-01T10:20:00Z"])
        .map(|(event, when)| delivery("s-late", event, when))
        .collect();
    let answer = harness.upload(tenant, NOW, first).await;
    assert_eq!(answer.deliveries_inserted, 2);
    let mut later = batch("host-a");
    let mut fact = session("s-late");
    fact.last_activity_at = ts("2026-03-01T10:15:00Z");
    later.sessions = vec![fact];
    harness.upload(tenant, NOW, later).await;
    let (stop,): (Option<chrono::DateTime<chrono::Utc>>,) = sqlx::query_as(
        "SELECT last_stop_at FROM usage.sessions WHERE tenant_id = $1 AND session_id = 's-late'",
    )
    .bind(tenant)
    .fetch_one(&harness.admin)
    .await
    .expect("session row");
    assert_eq!(
        stop,
        Some(at("2026-03-01T10:20:00Z")),
        "the Stop recorded first is the session's evidence once it is stored"
    );
}

/// What `baton.usage.ingest.delay` is measured from: the newest row an upload inserted or
/// replaced (the rollups move in the same transaction), never a row it left unchanged.
#[tokio::test]
async fn an_upload_reports_the_newest_row_it_stored_and_none_when_it_stored_none() {
    let (harness, tenant) = Harness::with_tenant().await;
    let now = at(NOW);
    let table = baton_usage::pricing::PriceCache::default()
        .table(&harness.runtime)
        .await
        .expect("prices");
    let store = |request: proto::UploadBatchRequest| {
        let pool = harness.runtime.clone();
        let table = table.clone();
        async move {
            let batch = baton_usage::validate::batch(&request, None, now).expect("valid");
            baton_usage::upload::upload(&pool, &table, tenant, now, &batch)
                .await
                .expect("stored")
        }
    };
    let first = store(full_batch()).await;
    assert_eq!(first.newest_usage_at, Some(at("2026-03-01T10:06:00Z")));
    let again = store(full_batch()).await;
    assert_eq!((again.usage_unchanged, again.newest_usage_at), (2, None));
    let mut larger = batch("host-a");
    larger.usage = vec![lead(
        "msg_1:req_1",
        "claude-opus-4-5",
        "2026-03-01T10:01:00Z",
        80,
    )];
    let replaced = store(larger).await;
    assert_eq!(
        (replaced.usage_replaced, replaced.newest_usage_at),
        (1, Some(at("2026-03-01T10:01:00Z")))
    );
}

/// Eight copies of one stored request at once, each larger than the stored copy, lined up at
/// their first write to the usage rows. Each upload decides against the stored copy it holds
/// locked, so each sees the copy the one before it left: the largest copy stays, and the
/// rollups move from each replaced copy once. Deciding from a copy read without the lock,
/// several would replace the same stored copy and take its tokens out of the rollups twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_larger_copies_at_once_leave_the_largest_and_the_rollups_whole() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, full_batch()).await;
    let copies = (1..=8).map(|n| {
        // The first upload's host, so the session row is not touched before the usage rows.
        let mut request = batch("host-a");
        request.usage = vec![lead(
            "msg_1:req_1",
            "claude-opus-4-5",
            "2026-03-01T10:01:00Z",
            100 * n,
        )];
        harness.upload(tenant, NOW, request)
    });
    let held = WritesHeld::on(&harness.admin, "usage.token_usage").await;
    let (answers, ()) = tokio::join!(
        futures::future::join_all(copies),
        held.release_once_waiting(&harness.admin, 2)
    );
    let replaced: u32 = answers.iter().map(|answer| answer.usage_replaced).sum();
    assert!(replaced >= 1, "{answers:?}");
    let output: i64 = sqlx::query_scalar(
        "SELECT output FROM usage.token_usage WHERE tenant_id = $1 AND dedup_key = 'msg_1:req_1'",
    )
    .bind(tenant)
    .fetch_one(&harness.admin)
    .await
    .expect("row");
    assert_eq!(output, 800, "the largest copy stays");
    assert_rollups_consistent(&harness.admin, tenant).await;
}
