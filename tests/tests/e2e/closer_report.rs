//! The closer's evidence served and its report, end to end: a pass's verdicts with their
//! quoted evidence at `GET /agent-sessions/{id}/closer`; a user's undo through
//! `POST /memories/{id}/resolve` (status `open`) shows there and in `baton report closer`,
//! whose figures the closer gathers from registry, provenance and triage over gRPC.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use uuid::Uuid;

use baton_tests::{Baton, Client, SERVICE_TOKEN, binary};

use crate::closer::{close, heartbeat, open_briefed, open_briefed_on_two, settled_pass};

const ENABLED: (&str, &str) = ("BATON_CLOSER__ENABLED", "true");
const DONE: &str = "Done: migrated the orders table to uuid keys and the suite passes.";

/// `baton report closer --json` for one tenant (or all, with `None`).
async fn report(baton: &Baton, tenant: Option<&str>) -> Value {
    let mut command = Command::new(binary("baton"));
    command
        .args([
            "report",
            "closer",
            "--since",
            "2000-01-01T00:00:00Z",
            "--json",
        ])
        .env("BATON_DATABASE_URL", baton.database.url())
        .env("BATON_SERVICE_TOKEN", SERVICE_TOKEN)
        .env("BATON_CLOSER__ADDR", &baton.addresses["closer"]);
    if let Some(tenant) = tenant {
        command.args(["--tenant", tenant]);
    }
    let output = command.output().await.expect("run baton report closer");
    assert!(output.status.success(), "report failed: {output:?}");
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

async fn listing(client: &Client, run: &str) -> Value {
    let answer = client
        .get(&format!("/api/v1/agent-sessions/{run}/closer"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

fn verdict_of<'a>(listing: &'a Value, memory: &str) -> &'a Value {
    listing["passes"][0]["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .find(|verdict| verdict["memoryId"] == memory)
        .unwrap_or_else(|| panic!("a verdict for {memory}: {listing}"))
}

#[tokio::test]
async fn the_evidence_is_served_and_a_users_undo_shows_in_the_listing_and_the_report() {
    let baton = Baton::start_with(&[ENABLED]).await;
    let (tenant, client) = baton.tenant_client("closer-report").await;
    let other_tenant = baton.create_tenant("closer-report-b").await;
    let admin = baton.admin().await;
    let (run, done, open) = open_briefed_on_two(&client, "report-1").await;
    let pulse = json!({"agent": "claude-code", "sessionId": "report-1", "episodeId": Uuid::now_v7(),
        "client": "claude-code", "hostId": "h-report", "pid": 4242});
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/pulse", &pulse)
            .await
            .status,
        200
    );
    let armed = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &json!({"agent": "claude-code", "sessionId": "report-1", "turnCount": 3}),
        )
        .await;
    assert_eq!(armed.body["armed"], true, "{:?}", armed.body);
    heartbeat(&client, "report-1", DONE).await;
    close(&client, "report-1").await;
    let (state, outcome, resolved) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(
        (state.as_str(), outcome.as_str(), resolved),
        ("finished", "completed", 1)
    );

    let before = listing(&client, &run).await;
    assert_eq!(before["sessionRunId"], run.as_str());
    let resolved_verdict = verdict_of(&before, &done);
    assert_eq!(resolved_verdict["verdict"], "resolved", "{before}");
    assert_eq!(resolved_verdict["reason"], "completed");
    assert_eq!(resolved_verdict["judge"], "evidence");
    let evidence = &resolved_verdict["evidence"][0];
    assert_eq!(evidence["source"], "excerpt", "{before}");
    let quote = evidence["quote"].as_str().expect("quote");
    assert!(
        DONE.contains(quote) && quote.contains("migrated the orders table"),
        "the quote is a verbatim slice of the excerpt: {quote:?}"
    );
    assert_eq!(resolved_verdict["undone"], false);
    assert!(resolved_verdict["resolvedAt"].is_string());
    assert!(resolved_verdict["undoneAt"].is_null());
    let left_open = verdict_of(&before, &open);
    assert_eq!(left_open["verdict"], "not-done", "{before}");
    assert_eq!(left_open["undone"], false);

    let counted = report(&baton, Some(&tenant.tenant_id)).await;
    assert_eq!(counted["closerResolves"], 1, "{counted}");
    assert_eq!(counted["closerResolvesUndone"], 0, "{counted}");
    assert_eq!(counted["briefed"], 2, "{counted}");
    assert_eq!(counted["briefedResolvedByCloser"], 1, "{counted}");
    assert_eq!(counted["briefedStillOpen"], 1, "{counted}");
    assert_eq!(counted["briefedResolvedByAgent"], 0, "{counted}");
    assert_eq!(counted["nudgesArmed"], 1, "{counted}");
    assert_eq!(counted["nudgeExtraTurns"], 1, "{counted}");
    assert_eq!(counted["nudgedRuns"], 1, "{counted}");
    assert_eq!(counted["sessionsOpened"], 1, "{counted}");
    assert_eq!(counted["memoriesCreated"], 2, "{counted}");
    assert_eq!(counted["rates"]["spurious"], 0.0, "{counted}");

    // The user disagrees: reopens the commitment through the memory resolve route.
    let undo = client
        .post(
            &format!("/api/v1/memories/{done}/resolve"),
            &json!({"status": "open"}),
        )
        .await;
    assert_eq!(undo.status, 200, "{:?}", undo.body);
    let after = listing(&client, &run).await;
    let undone = verdict_of(&after, &done);
    assert_eq!(undone["undone"], true, "{after}");
    assert!(undone["undoneAt"].is_string(), "{after}");
    assert_eq!(verdict_of(&after, &open)["undone"], false);

    let counted = report(&baton, Some(&tenant.tenant_id)).await;
    assert_eq!(counted["closerResolves"], 1, "{counted}");
    assert_eq!(counted["closerResolvesUndone"], 1, "{counted}");
    assert_eq!(counted["rates"]["spurious"], 1.0, "{counted}");
    assert_eq!(
        counted["briefedResolvedByCloser"], 1,
        "still the closer's resolve, now undone: {counted}"
    );

    // Another tenant's report holds none of it; without --tenant, every tenant adds up.
    let foreign = report(&baton, Some(&other_tenant.tenant_id)).await;
    assert_eq!(foreign["closerResolves"], 0, "{foreign}");
    assert_eq!(foreign["briefed"], 0, "{foreign}");
    assert_eq!(foreign["memoriesCreated"], 0, "{foreign}");
    let all = report(&baton, None).await;
    assert_eq!(all["tenants"], 2, "{all}");
    assert_eq!(all["closerResolvesUndone"], 1, "{all}");
}

#[tokio::test]
async fn the_listing_refuses_unknown_runs_and_lists_no_pass_for_a_run_never_closed() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("closer-listing").await;
    let unknown = client
        .get(&format!("/api/v1/agent-sessions/{}/closer", Uuid::now_v7()))
        .await;
    assert_eq!(unknown.status, 400, "{:?}", unknown.body);
    let run = open_briefed(&client, "listing-1", &[]).await;
    let listed = listing(&client, &run).await;
    assert_eq!(listed["passes"], json!([]), "{listed}");
    let foreign = baton.client(&baton.create_tenant("closer-listing-b").await);
    let refused = foreign
        .get(&format!("/api/v1/agent-sessions/{run}/closer"))
        .await;
    assert_eq!(
        refused.status, 400,
        "another tenant's run: {:?}",
        refused.body
    );
}
