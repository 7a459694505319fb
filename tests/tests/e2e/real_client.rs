//! What the real-client scenarios of every harness check the same way: the session row and its
//! liveness through the API, the close a turn end's spool delivers, a resume's reopen, a
//! SIGKILL's disconnect, the usage a session reports to Baton and to its own machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Child;

use baton_tests::Client;
use baton_tests::hook::usage_report;
use baton_tests::poll::{liveness, until};
use baton_tests::standin::{Reply, SeenRequest, StandIn};

pub(crate) async fn row(client: &Client, run_id: &str) -> Value {
    client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await
        .body
}

/// Fresh gate files for a scenario's held turns: turn one, the debrief, the resumed turn.
pub(crate) fn gates() -> (PathBuf, PathBuf, PathBuf) {
    let gate = std::env::temp_dir().join(format!("gate-{}", uuid::Uuid::new_v4().simple()));
    (
        gate.with_extension("one"),
        gate.with_extension("debrief"),
        gate.with_extension("never"),
    )
}

/// The scenario's replies: turn one held by `first_turn`, the debrief by `debrief`, and a
/// resumed turn that never gets an answer.
pub(crate) fn held_turns(first_turn: &Path, debrief: &Path, never: &Path) -> Vec<Reply> {
    let held = |gate: &Path, text: &str| Reply::After {
        gate: gate.to_path_buf(),
        reply: Box::new(Reply::Text(text.to_string())),
    };
    vec![
        // Turn one waits for the test's attributed write, so the nudge arms.
        held(first_turn, "Turn one is done."),
        // The nudge's continuation: the debrief turn, held until the test has read the first
        // turn's excerpt (the close that follows the run hands the excerpt to the closer,
        // which clears it).
        held(debrief, "Debriefed: nothing left open."),
        // The resumed turn never gets an answer: the client is killed mid-turn.
        held(never, "unreachable"),
    ]
}

/// Startup opened the session before the first model request: the run id a heartbeat of
/// `agent`'s `session_id` finds.
pub(crate) async fn opened_run(client: &Client, agent: &str, session_id: &str) -> String {
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": agent, "sessionId": session_id}),
        )
        .await;
    assert_eq!(
        probe.status, 200,
        "startup opened the session: {:?}",
        probe.body
    );
    probe.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string()
}

/// Waits for the first episode to report `version` and checks the run reads live; the read.
pub(crate) async fn first_episode_live(client: &Client, run_id: &str, version: &str) -> Value {
    let read = || liveness(client, run_id);
    let live = until(Duration::from_secs(30), "first episode", read, |read| {
        read["episodes"][0]["clientVersion"] == version
    })
    .await;
    assert_eq!(live["liveness"], "live");
    live
}

/// A memory written for the run (an attributed write, so the turn end arms the nudge).
pub(crate) async fn write_attributed(client: &Client, run_id: &str) {
    let written = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "decision", "topic": "use the outbox", "content": "kept",
                "sessionRunId": run_id}),
        )
        .await;
    assert_eq!(written.status, 201, "{:?}", written.body);
}

/// Waits, two minutes at most, for a `client` run to finish and checks it succeeded; its
/// stdout.
pub(crate) async fn finished_output(child: Child, what: &str, client: &str) -> String {
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what}: {client} finished within two minutes"))
        .expect("the client ran");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
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

/// After a clear, `rows` (`sessions_of`, two sessions) hold a new session id, and the new
/// session's liveness read says it follows the cleared one.
pub(crate) async fn assert_second_follows_first(client: &Client, rows: &Value) {
    let (old_run, new_run) = (
        rows[0][0].as_str().expect("run").to_string(),
        rows[1][0].as_str().expect("run").to_string(),
    );
    assert_ne!(rows[0][1], rows[1][1], "a new session id");
    let read = client
        .get(&format!("/api/v1/agent-sessions/{new_run}/liveness"))
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(
        read.body["followsSessionRunId"],
        old_run.as_str(),
        "the new session follows the cleared one: {}",
        read.body
    );
}

/// Waits, thirty seconds at most, until both of the `agent`'s sessions are closed; the rows.
pub(crate) async fn until_both_closed(admin: &sqlx::PgPool, agent: &str, what: &str) -> Value {
    let sessions = || sessions_of(admin, agent);
    until(Duration::from_secs(30), what, sessions, |rows| {
        rows.as_array()
            .is_some_and(|rows| rows.len() == 2 && rows.iter().all(|row| row[2] == true))
    })
    .await
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
    assert_eq!(watched["liveness"], "live");
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

/// The usage scenario's replies: one answer for each of three runs.
pub(crate) fn three_answers() -> Vec<Reply> {
    ["Hello.", "Still here.", "Third answer."]
        .map(|text| Reply::Text(text.to_string()))
        .to_vec()
}

/// Three responses were issued, one per run, every request a streamed call of `client`; what
/// was issued.
pub(crate) fn issued_three_streamed<R, I>(
    standin: &StandIn<R, I, SeenRequest>,
    client: &str,
) -> Vec<I>
where
    R: Send + 'static,
    I: Clone + Send + 'static,
{
    let issued = standin.issued();
    assert_eq!(
        issued.len(),
        3,
        "one request per run: {:?}",
        standin.requests()
    );
    assert!(
        standin.requests().iter().all(|request| request.streamed),
        "{client} made only streamed calls: {:?}",
        standin.requests()
    );
    issued
}

/// The usage read's `tokens` object for what was issued, `kinds` giving each response's input,
/// output, cache read and reasoning in Baton's kinds (a real client here writes no cache).
pub(crate) fn issued_tokens<I>(issued: &[I], kinds: impl Fn(&I) -> [u64; 4]) -> Value {
    let [input, output, cache_read, reasoning] =
        issued.iter().map(kinds).fold([0; 4], |mut sums, counts| {
            for (sum, count) in sums.iter_mut().zip(counts) {
                *sum += count;
            }
            sums
        });
    json!({"input": input, "output": output, "cacheRead": cache_read, "cacheWrite5m": 0,
        "cacheWrite1h": 0, "total": input + output + cache_read, "reasoning": reasoning})
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
