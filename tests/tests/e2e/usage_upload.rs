//! `POST /api/v1/usage/batches` through the real gateway and usage service: idempotence, the
//! collision rule, strict and bounded bodies, compressed uploads and tenant isolation.

use std::io::Write;

use serde_json::{Value, json};
use uuid::Uuid;

use baton_tests::{Baton, Client};

pub const NOW: &str = "2026-03-01T10:30:00.000Z";
pub const BATCHES: &str = "/api/v1/usage/batches";

/// A session with a main agent and one subagent, an edge, two usage rows and a delivery.
pub fn tree_batch(session_id: &str, delivery_id: &str) -> Value {
    json!({
        "hostId": "host-a",
        "clientVersion": "0.1.0",
        "sessions": [{
            "agent": "claude-code", "sessionId": session_id, "projectSlug": "-home-me-repo",
            "clientVersions": ["2.1.100"], "firstActivityAt": "2026-03-01T10:00:00Z",
            "lastActivityAt": "2026-03-01T10:20:00Z"
        }],
        "agents": [
            {"agent": "claude-code", "sessionId": session_id, "kind": "main",
             "model": "claude-opus-4-5", "lastActivityAt": "2026-03-01T10:20:00Z"},
            {"agent": "claude-code", "sessionId": session_id, "agentId": "a1", "kind": "subagent",
             "subagentType": "Explore", "spawnTool": "Task", "model": "claude-haiku-4-5",
             "firstActivityAt": "2026-03-01T10:05:00Z", "lastActivityAt": "2026-03-01T10:10:00Z"}
        ],
        "edges": [{"agent": "claude-code", "sessionId": session_id, "childAgentId": "a1",
                   "joinPath": "tool_result"}],
        "usage": [
            usage_row(session_id, None, "msg_1:req_1", 50, false),
            usage_row(session_id, Some("a1"), "msg_2:req_2", 70, true),
        ],
        "deliveries": [{"deliveryId": delivery_id, "agent": "claude-code", "sessionId": session_id,
                        "event": "UserPromptSubmit", "observedAt": "2026-03-01T10:00:00Z"}]
    })
}

pub fn usage_row(
    session_id: &str,
    agent_id: Option<&str>,
    key: &str,
    output: u64,
    sidechain: bool,
) -> Value {
    let mut row = json!({
        "agent": "claude-code", "sessionId": session_id, "dedupKey": key,
        "model": if agent_id.is_some() { "claude-haiku-4-5" } else { "claude-opus-4-5" },
        "at": "2026-03-01T10:06:00Z", "input": 1000, "output": output, "cacheRead": 200,
        "cacheWrite5m": 30, "cacheWrite1h": 4, "sidechain": sidechain
    });
    if let Some(agent_id) = agent_id {
        row["agentId"] = json!(agent_id);
    }
    row
}

pub async fn totals(client: &Client) -> Value {
    let answer = client
        .get("/api/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy=model")
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("write");
    encoder.finish().expect("gzip")
}

#[tokio::test]
async fn a_batch_twice_changes_nothing_and_a_larger_copy_replaces_under_the_collision_rule() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("usage-idem").await;
    let client = baton.client(&tenant).at(NOW);
    let batch = tree_batch("s-1", &Uuid::new_v4().to_string());
    let first = client.post(BATCHES, &batch).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(first.body["usageInserted"], 2);
    let before = totals(&client).await;
    let second = client.post(BATCHES, &batch).await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    assert_eq!(
        (
            &second.body["usageUnchanged"],
            &second.body["deliveriesDuplicate"],
            &second.body["edgesInserted"]
        ),
        (&json!(2), &json!(1), &json!(0))
    );
    assert_eq!(
        totals(&client).await,
        before,
        "identical totals after a resend"
    );

    let resend = |output: u64, sidechain: bool| json!({"hostId": "host-b", "usage": [usage_row("s-1", None, "msg_1:req_1", output, sidechain)]});
    let larger = client.post(BATCHES, &resend(90, false)).await;
    assert_eq!(larger.body["usageReplaced"], 1, "{:?}", larger.body);
    let smaller = client.post(BATCHES, &resend(10, false)).await;
    assert_eq!(smaller.body["usageUnchanged"], 1, "{:?}", smaller.body);
    let sidechain = client.post(BATCHES, &resend(5000, true)).await;
    assert_eq!(sidechain.body["usageUnchanged"], 1, "{:?}", sidechain.body);
    let after = totals(&client).await;
    assert_eq!(after["total"]["tokens"]["output"], 90 + 70);
    assert_eq!(after["total"]["requests"], 2);
}

#[tokio::test]
async fn bodies_are_strict_bounded_and_may_be_gzip_or_zstd() {
    let baton = Baton::start().await;
    let tenant = baton.create_tenant("usage-strict").await;
    let client = baton.client(&tenant).at(NOW);
    for field in ["prompt", "message", "content"] {
        let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
        batch["usage"][0][field] = json!("secret words");
        let refused = client.post(BATCHES, &batch).await;
        assert_eq!(refused.status, 400, "{field}: {:?}", refused.body);
        assert_eq!(refused.body["error"], "invalid_input");
        let mut batch = tree_batch("s-1", &Uuid::new_v4().to_string());
        batch[field] = json!("secret words");
        assert_eq!(
            client.post(BATCHES, &batch).await.status,
            400,
            "top-level {field}"
        );
    }
    let empty = client.post(BATCHES, &json!({"hostId": "h"})).await;
    assert_eq!(empty.status, 400, "a batch of no facts");
    let not_json = client.post_raw(BATCHES, "{\"hostId\":".to_string()).await;
    assert_eq!(
        (not_json.status, &not_json.body["error"]),
        (400, &json!("invalid_request"))
    );
    // 2001 deliveries: over the bound, under the byte limit.
    let deliveries: Vec<Value> = (0..2001)
        .map(|_| {
            json!({"deliveryId": Uuid::new_v4(), "agent": "claude-code", "sessionId": "s-1",
                        "event": "Stop", "observedAt": "2026-03-01T10:00:00Z"})
        })
        .collect();
    let mut over = tree_batch("s-1", &Uuid::new_v4().to_string());
    over["deliveries"] = json!(deliveries);
    assert_eq!(client.post(BATCHES, &over).await.status, 400);
    // Larger than 8 MiB as sent: 413, and nothing is stored.
    let padding = "x".repeat(9 << 20);
    let oversize = client
        .post_raw(BATCHES, format!("{{\"hostId\":\"{padding}\"}}"))
        .await;
    assert_eq!(oversize.status, 413);
    // Compressed: accepted, and the limit applies to the decoded bytes.
    let batch = tree_batch("s-gz", &Uuid::new_v4().to_string()).to_string();
    let gz = client
        .post_encoded(BATCHES, gzip(batch.as_bytes()), "gzip")
        .await;
    assert_eq!(gz.status, 200, "{:?}", gz.body);
    let batch = tree_batch("s-zstd", &Uuid::new_v4().to_string()).to_string();
    let zst = client
        .post_encoded(
            BATCHES,
            zstd::encode_all(batch.as_bytes(), 3).expect("zstd"),
            "zstd",
        )
        .await;
    assert_eq!(zst.status, 200, "{:?}", zst.body);
    let bomb = gzip(format!("{{\"hostId\":\"{}\"}}", "a".repeat(64 << 20)).as_bytes());
    assert!(bomb.len() < 1 << 20, "the bomb is small on the wire");
    let exploded = client.post_encoded(BATCHES, bomb, "gzip").await;
    assert_eq!(
        (exploded.status, &exploded.body["error"]),
        (413, &json!("payload_too_large"))
    );
    let brotli = client.post_encoded(BATCHES, batch.into_bytes(), "br").await;
    assert_eq!(
        (brotli.status, &brotli.body["error"]),
        (415, &json!("unsupported_media_type"))
    );
    let garbage = client
        .post_encoded(BATCHES, b"definitely not zstd".to_vec(), "zstd")
        .await;
    assert_eq!(garbage.status, 400);
    let unauthenticated = baton.anonymous().post(BATCHES, &tree_batch("s", "x")).await;
    assert_eq!(unauthenticated.status, 401);
    // Only the two compressed batches were stored.
    let listed = client
        .get("/api/v1/usage/sessions?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z")
        .await;
    let ids: Vec<&str> = listed.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
}

#[tokio::test]
async fn another_tenant_can_neither_write_into_nor_read_a_session() {
    let baton = Baton::start().await;
    let alice = baton.client(&baton.create_tenant("usage-a").await).at(NOW);
    let bob = baton.client(&baton.create_tenant("usage-b").await).at(NOW);
    let uploaded = alice
        .post(
            BATCHES,
            &tree_batch("shared-id", &Uuid::new_v4().to_string()),
        )
        .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    let opened = alice
        .post(
            "/api/v1/agent-sessions/open",
            &json!({"agent": "claude-code", "sessionId": "shared-id", "source": "startup"}),
        )
        .await;
    assert_eq!(opened.status, 200, "{:?}", opened.body);
    let run = opened.body["sessionRunId"]
        .as_str()
        .expect("run id")
        .to_string();

    // Bob names Alice's session and agent ids without carrying the session: not found.
    let foreign =
        json!({"hostId": "h", "usage": [usage_row("shared-id", Some("a1"), "k", 1, true)]});
    let refused = bob.post(BATCHES, &foreign).await;
    assert_eq!(
        (refused.status, &refused.body["error"]),
        (404, &json!("not_found"))
    );
    assert_eq!(totals(&bob).await["total"]["requests"], 0);
    let tree = bob.get(&format!("/api/v1/agent-sessions/{run}/tree")).await;
    assert_eq!(
        (tree.status, &tree.body["error"]),
        (404, &json!("not_found"))
    );
    let unknown = alice
        .get(&format!("/api/v1/agent-sessions/{}/tree", Uuid::now_v7()))
        .await;
    assert_eq!(unknown.status, 404);
    let listed = bob
        .get("/api/v1/usage/sessions?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z")
        .await;
    assert_eq!(listed.body["sessions"], json!([]));
    // Alice still reads her own tree.
    let own = alice
        .get(&format!("/api/v1/agent-sessions/{run}/tree"))
        .await;
    assert_eq!(own.status, 200, "{:?}", own.body);
    assert_eq!(own.body["agents"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn the_grpc_server_accepts_gzip_and_zstd_compressed_uploads() {
    use baton_kit::config::Secret;
    use baton_kit::grpc::{Outbound, OutboundCall};
    use baton_proto::usage::v1 as proto;
    use baton_proto::usage::v1::usage_client::UsageClient;
    use tonic::codec::CompressionEncoding;

    let baton = Baton::start().await;
    let tenant = baton.create_tenant("usage-grpc").await;
    let call = OutboundCall {
        tenant_id: tenant.tenant_id.parse().expect("tenant"),
        test_now: Some(NOW.to_string()),
    };
    let outbound = Outbound::new(Secret::new(baton_tests::SERVICE_TOKEN.to_string()));
    let channel = baton_kit::grpc::channel(&baton.addresses["usage"]).expect("channel");
    for (encoding, session) in [
        (CompressionEncoding::Gzip, "grpc-gzip"),
        (CompressionEncoding::Zstd, "grpc-zstd"),
    ] {
        let mut client = UsageClient::new(channel.clone()).send_compressed(encoding);
        let request = proto::UploadBatchRequest {
            host_id: "host-grpc".to_string(),
            sessions: vec![proto::SessionFact {
                agent: "claude-code".to_string(),
                session_id: session.to_string(),
                project_slug: "-repo".to_string(),
                ..proto::SessionFact::default()
            }],
            ..proto::UploadBatchRequest::default()
        };
        let answer = client
            .upload_batch(outbound.request(&call, request))
            .await
            .unwrap_or_else(|status| panic!("{encoding:?}: {status:?}"))
            .into_inner();
        assert_eq!(answer.sessions, 1, "{encoding:?}");
    }
    let listed = baton
        .client(&tenant)
        .at(NOW)
        .get("/api/v1/usage/sessions?from=2026-01-01T00:00:00Z&to=2026-12-31T00:00:00Z")
        .await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
}
