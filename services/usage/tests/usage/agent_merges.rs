//! How a stored agent and edge take what later uploads say of them: one test per merge rule of
//! `store::agents` and `store::edges`, each through `UploadBatch` and read back from the table.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use baton_proto::usage::v1 as proto;

use crate::session_merges::upload;
use crate::*;

/// A request carrying the session `s-1` and `agents`.
fn carrying(agents: Vec<proto::AgentFact>) -> proto::UploadBatchRequest {
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    request.agents = agents;
    request
}

/// One column of the stored agent `agent_id` of `s-1`.
async fn stored<T>(harness: &Harness, tenant: Uuid, agent_id: &str, column: &str) -> T
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + Unpin,
{
    let statement = format!(
        "SELECT {column} FROM usage.agents \
         WHERE tenant_id = $1 AND session_id = 's-1' AND agent_id = $2"
    );
    sqlx::query_scalar(AssertSqlSafe(statement))
        .bind(tenant)
        .bind(agent_id)
        .fetch_one(&harness.admin)
        .await
        .expect("stored agent")
}

#[tokio::test]
async fn an_agent_keeps_its_first_kind_and_first_known_parent() {
    let (harness, tenant) = Harness::with_tenant().await;
    let mut with_parent = subagent("s-1", "a1", "claude-haiku-4-5");
    with_parent.parent_agent_id = Some("p1".to_string());
    let orphan = subagent("s-1", "a2", "claude-haiku-4-5");
    upload(&harness, tenant, None, carrying(vec![with_parent, orphan])).await;
    // Later uploads say otherwise: another kind and parent for `a1`, a parent for `a2`.
    let mut retold = subagent("s-1", "a1", "claude-haiku-4-5");
    retold.kind = "compaction".to_string();
    retold.parent_agent_id = Some("p2".to_string());
    let mut adopted = subagent("s-1", "a2", "claude-haiku-4-5");
    adopted.parent_agent_id = Some("p3".to_string());
    upload(&harness, tenant, None, carrying(vec![retold, adopted])).await;
    let kind: String = stored(&harness, tenant, "a1", "kind").await;
    let parent: Option<String> = stored(&harness, tenant, "a1", "parent_agent_id").await;
    assert_eq!((kind.as_str(), parent.as_deref()), ("subagent", Some("p1")));
    let parent: Option<String> = stored(&harness, tenant, "a2", "parent_agent_id").await;
    assert_eq!(parent.as_deref(), Some("p3"), "a missing parent is filled");
}

#[tokio::test]
async fn an_agents_type_and_spawn_tool_follow_the_latest_upload_naming_them() {
    let (harness, tenant) = Harness::with_tenant().await;
    // (case, uploaded type and tool, stored type and tool)
    let cases = [
        (
            "first upload",
            (Some("Explore"), Some("Task")),
            ("Explore", "Task"),
        ),
        ("a new type alone", (Some("Plan"), None), ("Plan", "Task")),
        ("neither named", (None, None), ("Plan", "Task")),
        ("a new tool alone", (None, Some("Agent")), ("Plan", "Agent")),
    ];
    for (case, (subagent_type, spawn_tool), expected) in cases {
        let mut fact = subagent("s-1", "a1", "claude-haiku-4-5");
        fact.subagent_type = subagent_type.map(str::to_string);
        fact.spawn_tool = spawn_tool.map(str::to_string);
        upload(&harness, tenant, None, carrying(vec![fact])).await;
        let stored_type: Option<String> = stored(&harness, tenant, "a1", "subagent_type").await;
        let stored_tool: Option<String> = stored(&harness, tenant, "a1", "spawn_tool").await;
        let (expected_type, expected_tool) = expected;
        assert_eq!(
            (stored_type.as_deref(), stored_tool.as_deref()),
            (Some(expected_type), Some(expected_tool)),
            "{case}"
        );
    }
}

#[tokio::test]
async fn an_agents_model_follows_its_newest_activity() {
    let (harness, tenant) = Harness::with_tenant().await;
    let (haiku, sonnet, opus) = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5");
    // (case, agent, uploaded model and last activity, stored model)
    let cases = [
        ("first upload", "a1", Some(haiku), "10:10", haiku),
        ("older activity", "a1", Some(sonnet), "10:05", haiku),
        ("newer activity", "a1", Some(opus), "10:20", opus),
        ("newer, no model", "a1", None, "10:25", opus),
        ("as new as stored", "a1", Some(sonnet), "10:25", sonnet),
        ("first upload", "a2", None, "10:10", ""),
        ("older, fills the gap", "a2", Some(haiku), "10:05", haiku),
    ];
    for (case, agent_id, model, last, expected) in cases {
        let mut fact = subagent("s-1", agent_id, "unused");
        fact.model = model.map(str::to_string);
        fact.first_activity_at = ts("2026-03-01T10:00:00Z");
        fact.last_activity_at = ts(&format!("2026-03-01T{last}:00Z"));
        upload(&harness, tenant, None, carrying(vec![fact])).await;
        let stored_model: Option<String> = stored(&harness, tenant, agent_id, "model").await;
        assert_eq!(
            stored_model.unwrap_or_default(),
            expected,
            "{agent_id}: {case}"
        );
    }
}

#[tokio::test]
async fn an_agents_stored_end_is_sticky() {
    let (harness, tenant) = Harness::with_tenant().await;
    let ending = |agent_id: &str, ended: Option<(&str, &str)>| {
        let mut fact = subagent("s-1", agent_id, "claude-haiku-4-5");
        fact.ended = ended.map(|(word, _)| word.to_string());
        fact.ended_at = ended.and_then(|(_, when)| ts(when));
        fact
    };
    let completed = ("completed", "2026-03-01T10:10:00Z");
    let error = ("error", "2026-03-01T10:12:00Z");
    upload(
        &harness,
        tenant,
        None,
        carrying(vec![ending("a1", Some(completed)), ending("a2", None)]),
    )
    .await;
    upload(
        &harness,
        tenant,
        None,
        carrying(vec![ending("a1", Some(error)), ending("a2", Some(error))]),
    )
    .await;
    for (agent_id, (word, when)) in [("a1", completed), ("a2", error)] {
        let ended: Option<String> = stored(&harness, tenant, agent_id, "ended").await;
        let ended_at: Option<DateTime<Utc>> = stored(&harness, tenant, agent_id, "ended_at").await;
        assert_eq!(
            (ended.as_deref(), ended_at),
            (Some(word), Some(at(when))),
            "{agent_id}: the first end stored stays"
        );
    }
}

#[tokio::test]
async fn an_edges_first_proof_wins() {
    let (harness, tenant) = Harness::with_tenant().await;
    for (join_path, inserted) in [("tool_result", 1), ("meta_file", 0)] {
        let mut request = carrying(vec![subagent("s-1", "a1", "claude-haiku-4-5")]);
        request.edges = vec![edge("s-1", "a1", join_path)];
        let answer = upload(&harness, tenant, None, request).await;
        assert_eq!(answer.edges_inserted, inserted, "proved by {join_path}");
    }
    let proofs: Vec<String> =
        sqlx::query_scalar("SELECT join_path FROM usage.orchestration_edges WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&harness.admin)
            .await
            .expect("edges");
    assert_eq!(proofs, ["tool_result"]);
}
