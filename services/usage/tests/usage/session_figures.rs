//! `SessionFigures`: summaries by natural key, equal to `ListSessions`' for the same sessions,
//! in the order asked, once; unknown and foreign sessions left out; the ref list bounded.

use std::collections::HashMap;

use tonic::Code;
use uuid::Uuid;

use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

const CODEX: &str = "codex";

fn under(agent: &str, mut fact: proto::SessionFact) -> proto::SessionFact {
    fact.agent = agent.to_string();
    fact
}

fn usage_under(agent: &str, mut fact: proto::UsageFact) -> proto::UsageFact {
    fact.agent = agent.to_string();
    fact
}

/// One tenant's sessions: `s-1` with a subagent and an unpriced model, `s-2` with no usage rows,
/// `codex/s-3`, and `codex/s-2`, which the lookup matches when both agents and `s-2` are asked
/// for but is never asked for itself.
fn tenant_batch() -> proto::UploadBatchRequest {
    let mut request = batch("h");
    request.sessions = vec![
        session("s-1"),
        session("s-2"),
        under(CODEX, session("s-3")),
        under(CODEX, session("s-2")),
    ];
    request.agents = vec![subagent("s-1", "a1", "claude-haiku-4-5")];
    request.usage = vec![
        lead("k1", "claude-opus-4-5", "2026-03-01T10:01:00Z", 10),
        sidechain("a1", "k2", "claude-haiku-4-5", "2026-03-01T10:06:00Z", 20),
        lead("k3", "mystery-model", "2026-03-01T10:07:00Z", 5),
        usage_under(
            CODEX,
            row("s-3", None, "k4", "gpt-5", "2026-03-01T10:08:00Z", 40),
        ),
    ];
    request
}

fn keys(summaries: &[proto::SessionSummary]) -> Vec<(String, String)> {
    summaries
        .iter()
        .map(|summary| (summary.agent.clone(), summary.session_id.clone()))
        .collect()
}

#[tokio::test]
async fn figures_equal_the_listings_in_the_order_asked_leaving_out_unknown_and_foreign() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, tenant_batch()).await;
    let other = Uuid::new_v4();
    let mut theirs = batch("h");
    theirs.sessions = vec![session("s-foreign")];
    theirs.usage = vec![row(
        "s-foreign",
        None,
        "k9",
        "claude-opus-4-5",
        "2026-03-01T10:01:00Z",
        1,
    )];
    harness.upload(other, NOW, theirs).await;

    let answer = harness
        .figures(
            tenant,
            vec![
                reference(CODEX, "s-3"),
                reference(AGENT, "s-unknown"),
                reference(AGENT, "s-2"),
                // Stored under the other agent only.
                reference(CODEX, "s-1"),
                reference(AGENT, "s-foreign"),
                reference(AGENT, "s-1"),
                reference(CODEX, "s-3"),
            ],
        )
        .await
        .expect("figures");
    assert_eq!(
        keys(&answer),
        [
            (CODEX.to_string(), "s-3".to_string()),
            (AGENT.to_string(), "s-2".to_string()),
            (AGENT.to_string(), "s-1".to_string()),
        ]
    );

    let listed = harness
        .grpc
        .list_sessions(call(
            tenant,
            NOW,
            proto::ListSessionsRequest {
                from: ts("2026-03-01T00:00:00Z"),
                to: ts("2026-03-02T00:00:00Z"),
                limit: Some(200),
                ..proto::ListSessionsRequest::default()
            },
        ))
        .await
        .expect("list")
        .into_inner();
    let by_key: HashMap<(String, String), proto::SessionSummary> = listed
        .sessions
        .into_iter()
        // A listed row also carries its position in the listing; the figures are what match.
        .map(|mut summary| {
            summary.position.clear();
            ((summary.agent.clone(), summary.session_id.clone()), summary)
        })
        .collect();
    for summary in &answer {
        let key = (summary.agent.clone(), summary.session_id.clone());
        assert_eq!(Some(summary), by_key.get(&key), "{key:?}");
    }

    // The figures themselves, so equality is not two empty answers agreeing.
    let s1 = answer[2].figures.clone().expect("figures");
    assert_eq!(
        (
            s1.requests,
            s1.tokens.map(|t| t.output),
            answer[2].agent_count
        ),
        (3, Some(35), 2)
    );
    assert!(s1.cost_usd > 0.0);
    let unpriced: Vec<(&str, u64)> = s1
        .unpriced
        .iter()
        .map(|model| (model.model.as_str(), model.tokens))
        .collect();
    assert_eq!(unpriced, [("mystery-model", 1239)]);
    let s2 = answer[1].figures.clone().expect("figures");
    assert_eq!(
        (s2.requests, s2.cost_usd, answer[1].agent_count),
        (0, 0.0, 1)
    );

    // The other tenant sees only its own session.
    let foreign = harness
        .figures(
            other,
            vec![reference(AGENT, "s-foreign"), reference(AGENT, "s-1")],
        )
        .await
        .expect("foreign figures");
    assert_eq!(
        keys(&foreign),
        [(AGENT.to_string(), "s-foreign".to_string())]
    );
}

#[tokio::test]
async fn the_ref_list_is_bounded_and_each_ref_is_a_session_key() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, tenant_batch()).await;

    let full = harness
        .figures(tenant, vec![reference(AGENT, "s-1"); 200])
        .await
        .expect("200 refs, all one session");
    assert_eq!(keys(&full), [(AGENT.to_string(), "s-1".to_string())]);
    let none = harness
        .figures(tenant, vec![reference(AGENT, "s-unknown")])
        .await
        .expect("an unknown session alone");
    assert!(none.is_empty());

    for (name, refs) in [
        ("empty", Vec::new()),
        ("201 refs", vec![reference(AGENT, "s-1"); 201]),
        ("bad agent", vec![reference("Claude Code", "s-1")]),
        (
            "blank session",
            vec![reference(AGENT, "s-1"), reference(AGENT, "")],
        ),
        ("long session", vec![reference(AGENT, &"s".repeat(257))]),
    ] {
        let status = harness.figures(tenant, refs).await.expect_err(name);
        assert_eq!(status.code(), Code::InvalidArgument, "{name}");
    }
}
