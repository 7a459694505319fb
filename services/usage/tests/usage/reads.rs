use tonic::Code;
use uuid::Uuid;

use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

fn tree_batch() -> proto::UploadBatchRequest {
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    let mut main = subagent("s-1", "x", "claude-opus-4-5");
    main.agent_id = None;
    main.kind = "main".to_string();
    main.subagent_type = None;
    main.spawn_tool = None;
    main.last_activity_at = ts("2026-03-01T10:20:00Z");
    let mut done = subagent("s-1", "a1", "claude-haiku-4-5");
    done.ended = Some("completed".to_string());
    done.ended_at = ts("2026-03-01T10:10:00Z");
    let mut nested = subagent("s-1", "a2", "claude-haiku-4-5");
    nested.parent_agent_id = Some("a1".to_string());
    nested.last_activity_at = ts("2026-03-01T10:19:00Z");
    request.agents = vec![main, done, nested];
    request.edges = vec![edge("s-1", "a1", "tool_result")];
    request.usage = vec![
        lead("m1", "claude-opus-4-5", "2026-03-01T10:01:00Z", 10),
        sidechain("a1", "m2", "claude-haiku-4-5", "2026-03-01T10:06:00Z", 20),
        sidechain("a2", "m3", "claude-haiku-4-5", "2026-03-01T10:07:00Z", 30),
    ];
    request.deliveries = vec![delivery("s-1", "Stop", "2026-03-01T10:21:00Z")];
    request
}

fn status_of(tree: &proto::GetTreeResponse) -> Vec<(Option<String>, String)> {
    tree.agents
        .iter()
        .map(|agent| (agent.agent_id.clone(), agent.status.clone()))
        .collect()
}

#[tokio::test]
async fn the_tree_rolls_figures_up_and_reads_each_status_from_its_evidence() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, tree_batch()).await;
    let answer = harness
        .tree(tenant, "2026-03-01T10:25:00Z")
        .await
        .expect("tree");
    assert_eq!(
        status_of(&answer),
        [
            (None, "waiting".to_string()),
            (Some("a1".to_string()), "completed".to_string()),
            (Some("a2".to_string()), "working".to_string()),
        ]
    );
    let output = |figures: &Option<proto::Figures>| {
        figures
            .as_ref()
            .and_then(|f| f.tokens)
            .map(|t| t.output)
            .unwrap_or(0)
    };
    let outputs: Vec<(u64, u64)> = answer
        .agents
        .iter()
        .map(|agent| (output(&agent.own), output(&agent.rolled_up)))
        .collect();
    assert_eq!(outputs, [(10, 60), (20, 50), (30, 30)]);
    assert_eq!(answer.agents[2].parent_agent_id.as_deref(), Some("a1"));
    assert_eq!(answer.edges.len(), 1);
    let savings = answer.delegation_savings.clone().expect("savings");
    assert!(savings.is_estimate);
    assert_eq!(
        savings.counterfactual_model.as_deref(),
        Some("claude-opus-4-5")
    );
    assert!(savings.savings_usd > 0.0, "{savings:?}");
    let session = answer.session.expect("summary");
    assert_eq!(
        (session.agent_count, session.figures.expect("f").requests),
        (3, 3)
    );

    // Past the watchdog window every non-terminal agent reads unknown; the terminal stays.
    let quiet = harness
        .tree(tenant, "2026-03-01T10:40:00Z")
        .await
        .expect("tree");
    assert_eq!(
        status_of(&quiet),
        [
            (None, "unknown".to_string()),
            (Some("a1".to_string()), "completed".to_string()),
            (Some("a2".to_string()), "unknown".to_string()),
        ]
    );
    // A prompt strictly after the Stop: the main agent works again.
    let mut prompt = batch("h");
    prompt.deliveries = vec![delivery("s-1", "UserPromptSubmit", "2026-03-01T10:39:00Z")];
    harness.upload(tenant, "2026-03-01T10:40:00Z", prompt).await;
    let again = harness
        .tree(tenant, "2026-03-01T10:40:00Z")
        .await
        .expect("tree");
    assert_eq!(again.agents[0].status, "working");
    // Another tenant cannot see the session.
    let status = harness
        .tree(Uuid::new_v4(), NOW)
        .await
        .expect_err("foreign");
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn days_are_cut_in_the_requested_zone_over_an_unaligned_range() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = session_usage(vec![
        // 23:30 on 28 Feb in Los Angeles.
        lead("k1", "claude-opus-4-5", "2026-03-01T07:30:00Z", 1),
        // 00:30 on 1 March there.
        lead("k2", "claude-opus-4-5", "2026-03-01T08:30:00Z", 2),
        // Inside a partial bucket at the range's end.
        lead("k3", "claude-opus-4-5", "2026-03-01T09:00:01Z", 4),
        // Just past the end: not counted.
        lead("k4", "claude-opus-4-5", "2026-03-01T09:00:06Z", 8),
    ]);
    harness.upload(tenant, NOW, request).await;
    let query = |zone: Option<&str>| proto::QueryUsageRequest {
        from: ts("2026-03-01T07:20:10Z"),
        to: ts("2026-03-01T09:00:05Z"),
        group_by: "day".to_string(),
        timezone: zone.map(str::to_string),
        split_by_model: false,
    };
    let days = |answer: proto::QueryUsageResponse| -> Vec<(String, u64)> {
        answer
            .groups
            .into_iter()
            .map(|group| {
                (
                    group.key,
                    group.figures.and_then(|f| f.tokens).map_or(0, |t| t.output),
                )
            })
            .collect()
    };
    let la = harness
        .query(tenant, query(Some("America/Los_Angeles")))
        .await
        .expect("la");
    assert_eq!(la.timezone, "America/Los_Angeles");
    assert_eq!(
        days(la),
        [("2026-02-28".to_string(), 1), ("2026-03-01".to_string(), 6)]
    );
    let utc = harness.query(tenant, query(None)).await.expect("utc");
    assert_eq!(days(utc), [("2026-03-01".to_string(), 7)]);
    // Split by model, each day's models add up to the day (here one model), and unsplit reads
    // carry no split.
    let split = harness
        .query(
            tenant,
            proto::QueryUsageRequest {
                split_by_model: true,
                ..query(Some("America/Los_Angeles"))
            },
        )
        .await
        .expect("split");
    for group in &split.groups {
        let models: Vec<&str> = group.by_model.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(models, ["claude-opus-4-5"], "{}", group.key);
        assert_eq!(group.by_model[0].figures, group.figures, "{}", group.key);
    }
    let unsplit = harness.query(tenant, query(None)).await.expect("unsplit");
    assert!(unsplit.groups.iter().all(|group| group.by_model.is_empty()));
    for (name, bad) in [
        (
            "zone",
            proto::QueryUsageRequest {
                timezone: Some("Nowhere/City".to_string()),
                ..query(None)
            },
        ),
        (
            "group",
            proto::QueryUsageRequest {
                group_by: "fortnight".to_string(),
                ..query(None)
            },
        ),
        (
            "range",
            proto::QueryUsageRequest {
                from: ts("2025-01-01T00:00:00Z"),
                ..query(None)
            },
        ),
    ] {
        let status = harness.query(tenant, bad).await.expect_err(name);
        assert_eq!(status.code(), Code::InvalidArgument, "{name}");
    }
}

#[tokio::test]
async fn sessions_list_newest_first_in_keyset_pages() {
    let (harness, tenant) = Harness::with_tenant().await;
    let mut request = batch("h");
    request.sessions = ["s-a", "s-b", "s-c"]
        .iter()
        .enumerate()
        .map(|(index, id)| {
            let mut fact = session(id);
            fact.last_activity_at = ts(&format!("2026-03-01T10:2{index}:00Z"));
            fact
        })
        .collect();
    request.usage = vec![row(
        "s-b",
        None,
        "k",
        "claude-opus-4-5",
        "2026-03-01T10:01:00Z",
        3,
    )];
    harness.upload(tenant, NOW, request).await;
    let page = |cursor: Option<String>| proto::ListSessionsRequest {
        from: ts("2026-03-01T00:00:00Z"),
        to: ts("2026-03-02T00:00:00Z"),
        limit: Some(2),
        cursor,
        ..proto::ListSessionsRequest::default()
    };
    let first = harness
        .grpc
        .list_sessions(call(tenant, NOW, page(None)))
        .await
        .expect("first")
        .into_inner();
    let ids: Vec<&str> = first
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, ["s-c", "s-b"]);
    assert_eq!(
        first.sessions[1].figures.as_ref().map(|f| f.requests),
        Some(1)
    );
    let second = harness
        .grpc
        .list_sessions(call(tenant, NOW, page(first.next_cursor.clone())))
        .await
        .expect("second")
        .into_inner();
    let ids: Vec<&str> = second
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, ["s-a"]);
    assert!(second.next_cursor.is_none());
    let status = harness
        .grpc
        .list_sessions(call(tenant, NOW, page(Some("not-a-cursor".to_string()))))
        .await
        .expect_err("malformed cursor");
    assert_eq!(status.code(), Code::InvalidArgument);
}
