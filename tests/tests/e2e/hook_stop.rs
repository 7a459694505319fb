//! The real `baton-hook` at Stop: the unconditional heartbeat and, with `BATON_STOP_NUDGE=1`,
//! the triage handshake with each harness's continuation envelope.

use serde_json::{Value, json};

use baton_tests::hook::{HookHome, fixture};
use baton_tests::{Baton, Client};

/// A write attributed to the run: the provenance event that arms the nudge.
async fn write(client: &Client, run_id: &str, topic: &str) {
    let written = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "decision", "topic": topic, "content": "kept", "sessionRunId": run_id}),
        )
        .await;
    assert_eq!(written.status, 201, "{:?}", written.body);
}

async fn triage_status(client: &Client, run_id: &str) -> Value {
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    row.body["triageStatus"].clone()
}

#[tokio::test]
async fn the_claude_code_nudge_round_trip() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-nudge").await;
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    home.set("BATON_STOP_NUDGE", "1");
    // The recorded Stop payload, with the newer field Claude Code now sends.
    let mut stop = fixture("kesslerio-attio-mcp-server", "stop").remove(0);
    let session_id = stop["session_id"].as_str().expect("id").to_string();
    let run_id = client.open_startup("claude-code", &session_id).await;
    write(&client, &run_id, "use the outbox").await;
    let long = format!("a{}", "😀".repeat(2500));
    stop["last_assistant_message"] = json!(long);

    let armed = home.run(&["claude-code", "stop"], &stop).await;
    assert_eq!(armed.code, Some(0));
    let envelope = armed.json().expect("armed: the continuation");
    assert_eq!(envelope["decision"], "block");
    let reason = envelope["reason"].as_str().expect("reason");
    assert!(
        reason.contains("remember") && reason.contains("resolve"),
        "the debrief words"
    );
    assert_eq!(
        envelope.as_object().expect("object").len(),
        2,
        "only decision and reason"
    );
    assert_eq!(triage_status(&client, &run_id).await, "pending");
    let admin = baton.admin().await;
    let (excerpt,): (String,) = sqlx::query_as(
        "SELECT last_message_excerpt FROM registry.agent_sessions WHERE id = $1::uuid",
    )
    .bind(&run_id)
    .fetch_one(&admin)
    .await
    .expect("excerpt");
    assert_eq!(
        excerpt.encode_utf16().count(),
        3999,
        "cut to 4000 units without splitting 😀"
    );
    assert!(long.starts_with(&excerpt));

    // The continuation writes, then Claude Code stops again with stop_hook_active.
    write(&client, &run_id, "drop the cron").await;
    stop["stop_hook_active"] = json!(true);
    let finalized = home.run(&["claude-code", "stop"], &stop).await;
    assert_eq!(
        (finalized.code, finalized.stdout.as_str()),
        (Some(0), ""),
        "never inject twice"
    );
    assert_eq!(triage_status(&client, &run_id).await, "completed");
    assert!(home.log_lines().is_empty(), "{:?}", home.log_lines());
}

#[tokio::test]
async fn cursor_gets_a_followup_message_and_its_follow_up_finalizes() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-cursor").await;
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    home.set("BATON_STOP_NUDGE", "1");
    let run_id = client.open_startup("cursor", "conv-1").await;
    write(&client, &run_id, "cache the index").await;
    let mut stop = json!({"conversation_id": "conv-1", "generation_id": "g-1", "hook_event_name": "stop",
        "status": "completed", "loop_count": 0, "workspace_roots": ["/w/app"], "cursor_version": "3.21.16"});
    let armed = home.run(&["cursor", "stop"], &stop).await;
    let envelope = armed.json().expect("armed: a follow-up");
    assert!(
        envelope["followup_message"]
            .as_str()
            .is_some_and(|m| m.contains("remember"))
    );
    assert_eq!(
        envelope.as_object().expect("object").len(),
        1,
        "no decision/reason for Cursor"
    );

    stop["loop_count"] = json!(1);
    let finalized = home.run(&["cursor", "stop"], &stop).await;
    assert_eq!(finalized.stdout, "", "a follow-up's stop never injects");
    assert_eq!(
        triage_status(&client, &run_id).await,
        "expired",
        "no write since begin"
    );
}

#[tokio::test]
async fn a_claude_format_stop_carrying_cursor_version_gets_a_followup_message() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-cursor-claude").await;
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    home.set("BATON_STOP_NUDGE", "1");
    // Cursor running Claude Code's settings: the installed command says claude-code, the
    // payload says Cursor. The session is Cursor's, and so is the continuation's form.
    let run_id = client.open_startup("cursor", "hosted-stop").await;
    write(&client, &run_id, "keep the cache warm").await;
    let stop = json!({"session_id": "hosted-stop", "hook_event_name": "Stop",
        "stop_hook_active": false, "cursor_version": "3.21.16", "last_assistant_message": "done"});
    let armed = home.run(&["claude-code", "stop"], &stop).await;
    let envelope = armed.json().expect("armed: a follow-up");
    assert!(
        envelope["followup_message"]
            .as_str()
            .is_some_and(|m| m.contains("remember")),
        "{envelope}"
    );
    assert_eq!(
        envelope.as_object().expect("object").len(),
        1,
        "never decision/reason under Cursor: {envelope}"
    );
    assert_eq!(triage_status(&client, &run_id).await, "pending");
}

#[tokio::test]
async fn nothing_is_injected_when_the_nudge_is_off() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-off").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    let run_id = client.open_startup("claude-code", "quiet").await;
    write(&client, &run_id, "a signal that would arm").await;
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    let before = row.body["lastSeenAt"].clone();
    let stop = json!({"session_id": "quiet", "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "done"});
    let run = home.run(&["claude-code", "stop"], &stop).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["triageStatus"], "idle", "begin was never called");
    assert_ne!(row.body["lastSeenAt"], before, "the heartbeat still ran");

    // Codex: the env alone does not nudge; the installed `--nudge` must ask for it.
    let codex_run = client.open_startup("codex", "codex-thread").await;
    write(&client, &codex_run, "another signal").await;
    let codex_stop = json!({"session_id": "codex-thread", "hook_event_name": "Stop", "turn_id": "t1",
        "model": "gpt-5-codex", "stop_hook_active": false, "last_assistant_message": null,
        "cwd": "/w", "permission_mode": "default", "transcript_path": null});
    let plain = home
        .run_with(
            &["codex", "stop"],
            &codex_stop,
            &[("BATON_STOP_NUDGE", "1")],
        )
        .await;
    assert_eq!(plain.stdout, "");
    let asked = home
        .run_with(
            &["codex", "stop", "--nudge"],
            &codex_stop,
            &[("BATON_STOP_NUDGE", "1")],
        )
        .await;
    assert_eq!(asked.json().expect("armed")["decision"], "block");
}

#[tokio::test]
async fn a_stop_for_an_unknown_session_creates_nothing() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-unknown").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    let stop = json!({"session_id": "never-opened", "hook_event_name": "Stop"});
    let run = home.run(&["claude-code", "stop"], &stop).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "never-opened"}),
        )
        .await;
    assert_eq!(probe.status, 404);
    assert!(home.spooled().is_empty(), "an answered 404 is not spooled");
    // A wrong key: still exit 0, nothing printed, one log line, no key in it.
    let mut wrong = HookHome::new(&baton.base_url, "baton_wrong_key");
    wrong.set("BATON_STOP_NUDGE", "1");
    let run = wrong.run(&["claude-code", "stop"], &stop).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    let log = wrong.log_lines();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(!log[0].contains("baton_wrong_key"));
}
