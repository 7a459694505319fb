//! The debrief prompt rendered from a run's row: facets, overrides, briefed rows.

use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_registry::session::BriefedMemory;

use crate::{AGENT, Harness, call, t};

fn block(prompt: &str) -> serde_json::Value {
    let start = prompt.find("json\n").expect("opening fence") + 5;
    let fence_start = prompt[..start - 5].rfind('\n').map_or(0, |index| index + 1);
    let fence = &prompt[fence_start..start - 5];
    let end = prompt[start..]
        .find(&format!("\n{fence}\n"))
        .expect("closing fence")
        + start;
    serde_json::from_str(&prompt[start..end]).expect("json")
}

#[tokio::test]
async fn the_prompt_carries_the_row_facets_unless_overridden_and_the_briefed_rows() {
    let (harness, tenant) = Harness::with_tenant().await;
    let commitment = Uuid::now_v7();
    let briefed = vec![BriefedMemory {
        id: commitment,
        topic: "renew the cert".to_string(),
        status: "open".to_string(),
    }];
    let run = harness
        .open(
            tenant,
            "debrief",
            Some("repo ```` name"),
            Some(briefed),
            t(0),
        )
        .await;
    let before = harness.row(tenant, run).await;

    let key = Some((AGENT.to_string(), "debrief".to_string()));
    let prompt = harness
        .triage
        .debrief(&call(tenant, t(5)), None, None, key.clone())
        .await
        .expect("prompt");
    assert_eq!(
        block(&prompt),
        serde_json::json!({
            "scope": "work",
            "project": "repo ```` name",
            "briefedCommitments": [{"id": commitment.to_string(), "topic": "renew the cert", "status": "open"}],
        })
    );
    assert!(
        prompt.contains("`````json"),
        "the fence outgrows the project's backticks"
    );

    let overridden = harness
        .triage
        .debrief(
            &call(tenant, t(5)),
            Some("personal".to_string()),
            Some("other".to_string()),
            key,
        )
        .await
        .expect("prompt");
    let data = block(&overridden);
    assert_eq!(
        (data["scope"].as_str(), data["project"].as_str()),
        (Some("personal"), Some("other"))
    );

    let bare = harness
        .triage
        .debrief(&call(tenant, t(5)), None, None, None)
        .await
        .expect("prompt");
    assert_eq!(
        block(&bare),
        serde_json::json!({}),
        "no facets, no briefed rows without a run"
    );

    let missing = harness
        .triage
        .debrief(
            &call(tenant, t(5)),
            None,
            None,
            Some((AGENT.to_string(), "nope".to_string())),
        )
        .await
        .expect_err("404");
    assert_eq!(missing.code, ErrorCode::NotFound);
    let after = harness.row(tenant, run).await;
    assert_eq!(
        after.last_seen_at, before.last_seen_at,
        "a read never refreshes the lease"
    );
}
