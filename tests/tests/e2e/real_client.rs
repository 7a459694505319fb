//! What the real-client scenarios of every harness check the same way: the session row and its
//! liveness through the API, the close a turn end's spool delivers, a resume's reopen, a
//! SIGKILL's disconnect, the usage a session reports to Baton and to its own machine.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Child;

use baton_tests::Client;
use baton_tests::hook::usage_report;

use crate::claude_hooks_real::until;

pub(crate) async fn row(client: &Client, run_id: &str) -> Value {
    client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await
        .body
}

pub(crate) async fn liveness(client: &Client, run_id: &str) -> Value {
    client
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await
        .body
}

/// The stored excerpt of the run (not in any API read: it is the closer's input).
pub(crate) async fn excerpt(admin: &sqlx::PgPool, run_id: &str) -> Option<String> {
    let (excerpt,): (Option<String>,) = sqlx::query_as(
        "SELECT last_message_excerpt FROM registry.agent_sessions WHERE id = $1::uuid",
    )
    .bind(run_id)
    .fetch_one(admin)
    .await
    .expect("excerpt");
    excerpt
}

/// `(run id, session id, closed)` of the `agent`'s sessions, oldest first, as JSON.
pub(crate) async fn sessions_of(admin: &sqlx::PgPool, agent: &str) -> Value {
    let rows: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT id::text, session_id, closed_at IS NOT NULL FROM registry.agent_sessions \
         WHERE agent = $1 ORDER BY opened_at",
    )
    .bind(agent)
    .fetch_all(admin)
    .await
    .expect("sessions");
    serde_json::to_value(rows).expect("rows")
}

/// The nudge's words reached the model as the continuation's prompt.
pub(crate) fn assert_debrief_prompt(user_text: &str) {
    assert!(
        user_text.contains("remember") && user_text.contains("resolve"),
        "the debrief prompt reached the model: {user_text}"
    );
}

/// Waits for the close the end hook spooled (no drain by hand). The continuation's turn end
/// finalized the nudge's attempt and nothing was written during the debrief, so it is expired.
/// Returns the closed row's activation epoch.
pub(crate) async fn until_closed_after_debrief(client: &Client, run_id: &str) -> i64 {
    let read = || row(client, run_id);
    let closed = until(Duration::from_secs(60), "the end's close", read, |row| {
        row["closedAt"].is_string()
    })
    .await;
    assert_eq!(
        closed["triageStatus"], "expired",
        "the follow-up turn end finalized"
    );
    closed["activationEpoch"].as_i64().expect("epoch")
}

/// After a resume: the row reopened at `epoch + 1` and reads live at once; waits for the
/// episode `is_resumed` picks out and returns it, still running.
pub(crate) async fn resumed_episode(
    client: &Client,
    run_id: &str,
    epoch: i64,
    is_resumed: impl Fn(&Value) -> bool,
) -> Value {
    let reopened = row(client, run_id).await;
    assert_eq!(reopened["closedAt"], Value::Null, "resume reopened it");
    assert_eq!(reopened["activationEpoch"].as_i64(), Some(epoch + 1));
    assert_eq!(liveness(client, run_id).await["liveness"], "live");
    let episode_of = |read: &Value| {
        read["episodes"]
            .as_array()
            .and_then(|all| all.iter().find(|episode| is_resumed(episode)).cloned())
            .unwrap_or(Value::Null)
    };
    let read = || liveness(client, run_id);
    let watched = until(Duration::from_secs(30), "resumed episode", read, |read| {
        episode_of(read).is_object()
    })
    .await;
    let episode = episode_of(&watched);
    assert_eq!(episode["endedAt"], Value::Null, "{watched}");
    episode
}

/// SIGKILL of the client's whole process group mid-turn (no end hook runs); the sidecar
/// reports the exit of the episode with `pid`: disconnected, outcome unknown.
pub(crate) async fn kill_and_see_disconnected(
    client: &Client,
    run_id: &str,
    mut child: Child,
    group: u32,
    pid: &Value,
) {
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the client");
    let _ = child.wait().await;
    let read = || liveness(client, run_id);
    let gone = until(Duration::from_secs(120), "disconnected", read, |read| {
        read["liveness"] == "disconnected"
    })
    .await;
    let ended = gone["episodes"]
        .as_array()
        .and_then(|all| all.iter().find(|episode| episode["pid"] == *pid))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(ended["endReason"], "process_exited", "{gone}");
    assert_eq!(gone["outcome"], "unknown");
}

/// What a real session's usage must read: the server's usage read (filled by the sidecar and
/// the end's flush) totals exactly `expected` in one `model`, priced; `baton-hook usage
/// session` on the same home reports one session of `harness` with `requests` records, the
/// same tokens (reasoning aside: the local report states it apart) and the same cost.
pub(crate) async fn assert_usage_everywhere(
    client: &Client,
    home: &Path,
    expected: &Value,
    model: &str,
    harness: &str,
    session_id: &str,
    requests: usize,
) {
    let server = until(
        Duration::from_secs(60),
        "the sidecar's uploads and the end's flush",
        || async {
            let answer = client.get("/api/v1/usage?groupBy=model").await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
            answer.body
        },
        |body| body["total"]["tokens"] == *expected,
    )
    .await;
    let groups = server["groups"].as_array().expect("groups");
    assert!(
        !groups.is_empty() && groups.iter().all(|group| group["key"] == model),
        "one model: {server}"
    );
    assert_eq!(
        server["total"]["unpricedTokens"], 0,
        "{model} is priced: {server}"
    );

    let state = home.join(".baton");
    let local = usage_report(
        &["session", "--timezone", "UTC"],
        &[("HOME", home), ("BATON_HOOK_HOME", state.as_path())],
    )
    .await;
    let sessions = local["rows"].as_array().expect("rows");
    assert_eq!(sessions.len(), 1, "one session: {local}");
    assert_eq!(sessions[0]["harness"], harness);
    assert_eq!(sessions[0]["sessionId"], session_id);
    assert_eq!(sessions[0]["requests"], requests, "one record per response");
    let without_reasoning = |tokens: &Value| {
        let mut tokens = tokens.clone();
        if let Some(object) = tokens.as_object_mut() {
            object.retain(|key, _| key != "reasoning");
        }
        tokens
    };
    assert_eq!(
        without_reasoning(&sessions[0]["tokens"]),
        without_reasoning(expected),
        "the local report: {local}"
    );
    assert_eq!(sessions[0]["unpricedTokens"], 0);
    let server_cost = server["total"]["costUsd"].as_f64().expect("server cost");
    let local_cost = sessions[0]["costUsd"].as_f64().expect("local cost");
    assert!(server_cost > 0.0, "{server}");
    assert!(
        (server_cost - local_cost).abs() < 1e-9,
        "the server and the local report price alike: {server_cost} vs {local_cost}"
    );
}
