//! The real `baton-hook` at SessionStart, fed recorded Claude Code payloads, against a running
//! Baton: the seed's source table (startup, resume, compact, clear).

use serde_json::{Value, json};

use baton_tests::Baton;
use baton_tests::hook::{HookHome, fixture};

const CLAUDE: [&str; 2] = ["claude-code", "session-start"];

fn context(run: &baton_tests::hook::HookRun) -> String {
    let printed = run.json().expect("SessionStart prints its context");
    assert_eq!(
        printed["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_string()
}

fn run_id_in(context: &str) -> String {
    let start = context
        .find("sessionRunId = ")
        .expect("the run id is injected")
        + 15;
    context[start..start + 36].to_string()
}

async fn commitments(client: &baton_tests::Client, count: usize) {
    for n in 0..count {
        let answer = client
            .post(
                "/api/v1/memories",
                &json!({"memoryType": "commitment", "topic": format!("finish part {n:02} of the migration"),
                    "content": "the body the briefing never shows", "scope": "work"}),
            )
            .await;
        assert_eq!(answer.status, 201, "{:?}", answer.body);
    }
}

#[tokio::test]
async fn startup_cuts_the_briefing_and_stamps_exactly_what_survived() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-startup").await;
    commitments(&client, 30).await;
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    // 100 tokens = 400 characters: far less than 30 commitments need.
    home.set("BATON_BRIEFING_MAX_TOKENS", "100");
    let payload = fixture("danielmiessler-fabric", "session_start").remove(0);
    let run = home.run(&CLAUDE, &payload).await;
    assert_eq!(run.code, Some(0));
    let context = context(&run);
    let run_id = run_id_in(&context);
    let briefing = &context[..context.find("Baton session:").expect("instruction")];
    assert!(
        briefing.chars().count() <= 400,
        "cut to the budget: {}",
        briefing.chars().count()
    );
    assert!(
        context.contains(&format!("\"sessionRunId\": \"{run_id}\"")),
        "the write instruction names the id"
    );

    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200);
    assert_eq!(
        row.body["project"], "fabric",
        "the project comes from the payload's cwd"
    );
    assert_eq!(row.body["sessionId"], payload["session_id"]);
    let briefed = row.body["briefedMemories"].as_array().expect("stamped");
    let shown: Vec<&str> = briefing
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split(" [").next())
        .collect();
    assert!(
        !briefed.is_empty() && briefed.len() < 30,
        "the cut dropped some: {}",
        briefed.len()
    );
    assert_eq!(briefed.len(), shown.len(), "one stamp per commitment shown");
    for row in briefed {
        assert!(
            shown.contains(&row["topic"].as_str().expect("topic")),
            "{row} was never shown"
        );
        assert_eq!(row["status"], "open");
    }
    assert!(row.body["briefingDeliveredAt"].is_string());
}

#[tokio::test]
async fn resume_compact_and_clear_follow_the_source_table() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-sources").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    // Real deliveries: [0] resume and [1] compact of one session, [2] clear of another.
    let payloads = fixture("kesslerio-attio-mcp-server", "session_start");

    let resumed = home.run(&CLAUDE, &payloads[0]).await;
    let run_id = run_id_in(&context(&resumed));
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["source"], "resume");
    assert_eq!(
        row.body["briefingDeliveredAt"],
        Value::Null,
        "resume never stamps a briefing"
    );
    assert_eq!(row.body["project"], Value::Null, "resume sends no project");
    let epoch = row.body["activationEpoch"].clone();

    let compacted = home.run(&CLAUDE, &payloads[1]).await;
    let compact_context = context(&compacted);
    assert_eq!(
        run_id_in(&compact_context),
        run_id,
        "compact re-injects the same run id"
    );
    assert!(
        !compact_context.contains("Baton briefing"),
        "compact is not a briefing"
    );
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(
        row.body["activationEpoch"], epoch,
        "compact is not an activation"
    );

    // clear of a session the server has never seen: 404 → a startup with a briefing.
    let cleared = home.run(&CLAUDE, &payloads[2]).await;
    let clear_context = context(&cleared);
    assert!(clear_context.contains("Baton briefing"));
    let clear_run = run_id_in(&clear_context);
    let row = client
        .get(&format!("/api/v1/agent-sessions/{clear_run}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["source"], "startup");
    assert_eq!(row.body["project"], "attio-mcp-server");
    let delivered = row.body["briefingDeliveredAt"].clone();
    assert!(
        delivered.is_string(),
        "a startup stamps the (empty) briefing"
    );
    let epoch = row.body["activationEpoch"].clone();

    // clear again: the probe answers 200 and that is all.
    let again = home.run(&CLAUDE, &payloads[2]).await;
    let again_context = context(&again);
    assert_eq!(run_id_in(&again_context), clear_run);
    assert!(
        !again_context.contains("Baton briefing"),
        "nothing new on a known session"
    );
    let row = client
        .get(&format!("/api/v1/agent-sessions/{clear_run}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["activationEpoch"], epoch, "no second activation");
    assert_eq!(row.body["briefingDeliveredAt"], delivered, "no restamp");
    assert!(
        home.log_lines().is_empty(),
        "nothing failed: {:?}",
        home.log_lines()
    );
}

#[tokio::test]
async fn a_failed_briefing_still_opens_without_briefed_memories() {
    // No provenance service: the briefing read fails, the registry still answers.
    let baton = Baton::start_services(
        &["gateway", "registry", "triage"],
        &[("BATON_PROVENANCE__ADDR", "127.0.0.1:9")],
    )
    .await;
    let (tenant, client) = baton.tenant_client("hook-failed-briefing").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    let payload = json!({"session_id": "no-briefing", "hook_event_name": "SessionStart",
        "source": "startup", "cwd": "/"});
    let run = home.run(&CLAUDE, &payload).await;
    assert_eq!(run.code, Some(0));
    let context = context(&run);
    assert!(
        !context.contains("Baton briefing"),
        "no briefing was delivered"
    );
    let run_id = run_id_in(&context);
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200);
    assert_eq!(
        row.body["briefingDeliveredAt"],
        Value::Null,
        "opened without briefedMemories"
    );
    assert_eq!(row.body["briefedMemories"], json!([]));
    assert_eq!(
        row.body["project"],
        Value::Null,
        "a cwd of / gives no project, never \"unknown\""
    );
    let log = home.log_lines();
    assert_eq!(log.len(), 1, "one local line: {log:?}");
    assert!(log[0].contains("briefing_status_"), "{log:?}");
}

#[tokio::test]
async fn claude_code_hooks_running_inside_cursor_report_one_cursor_session() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-host").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    let payload = json!({"session_id": "hosted", "hook_event_name": "SessionStart",
        "source": "startup", "cwd": "/work/app", "permission_mode": "default"});
    let run = home
        .run_with(&CLAUDE, &payload, &[("CURSOR_VERSION", "3.21.16")])
        .await;
    // The output keeps the installed (Claude Code) form: Cursor's compatibility layer reads it.
    let run_id = run_id_in(&context(&run));
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(row.body["agent"], "cursor");
    // Cursor's own sessionStart for the same conversation lands on the same row.
    let cursor = json!({"conversation_id": "hosted", "session_id": "hosted",
        "hook_event_name": "sessionStart", "workspace_roots": ["/work/app"], "cursor_version": "3.21.16"});
    let own = home.run(&["cursor", "session-start"], &cursor).await;
    let printed = own.json().expect("cursor context");
    let text = printed["additional_context"]
        .as_str()
        .expect("Cursor's own output form");
    assert_eq!(run_id_in(text), run_id, "one session, not two");
}

#[tokio::test]
async fn subagents_and_unknown_events_do_nothing() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-skip").await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    let subagent = json!({"session_id": "sub", "hook_event_name": "SessionStart", "source": "startup",
        "agent_id": "a93ccab"});
    let run = home.run(&CLAUDE, &subagent).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    let role = json!({"session_id": "sub", "hook_event_name": "SessionStart", "source": "startup"});
    let run = home
        .run_with(&CLAUDE, &role, &[("BATON_HOOK_ROLE", "subagent")])
        .await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    // The fixtures' sessions are open on the server, so a call the hook must not make (a
    // heartbeat, a triage begin) would land and show, instead of reading as an unseen 404.
    let opened_at = "2026-08-01T10:00:00.000Z";
    let mut rows = Vec::new();
    for session in [
        "278a2245-9881-4e57-8176-beb93e3d7fd3",
        "c7428042-d9a9-4e9e-a71c-4433a8d202c0",
    ] {
        let run = client
            .at(opened_at)
            .open_startup("claude-code", session)
            .await;
        let row = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
        assert_eq!(row.status, 200, "{:?}", row.body);
        rows.push((run, row.body));
    }
    for payload in fixture("kesslerio-attio-mcp-server", "subagent_stop")
        .into_iter()
        .chain(fixture("kesslerio-attio-mcp-server", "notification"))
    {
        let run = home.run(&["claude-code", "stop"], &payload).await;
        assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    }
    for (run, before) in &rows {
        let after = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
        assert_eq!(after.status, 200, "{:?}", after.body);
        for field in ["lastSeenAt", "activationEpoch", "closedAt", "triageStatus"] {
            assert_eq!(
                after.body[field], before[field],
                "no call reached {run}: {field}"
            );
        }
        let attempts = client
            .get(&format!("/api/v1/agent-sessions/{run}/triage-attempts"))
            .await;
        assert_eq!(attempts.status, 200, "{:?}", attempts.body);
        assert_eq!(attempts.body["count"], 0, "no nudge was armed for {run}");
    }
    let absent = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "sub"}),
        )
        .await;
    assert_eq!(absent.status, 404, "no session was opened");
    let garbage = home.run(&CLAUDE, &json!("not an object")).await;
    assert_eq!((garbage.code, garbage.stdout.as_str()), (Some(0), ""));
    assert_eq!(home.log_lines().len(), 1, "one line for the bad payload");
}

#[tokio::test]
async fn compact_on_a_session_the_server_does_not_know_opens_nothing() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("hook-compact-unknown").await;
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    // Even with the sidecar on: nothing to watch for a session that does not exist.
    home.set("BATON_HOOK_SIDECAR", "on");
    let payload = json!({"session_id": "never-seen", "hook_event_name": "SessionStart",
        "source": "compact", "cwd": "/w/app"});
    let run = home.run(&CLAUDE, &payload).await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), ""),
        "nothing re-injected"
    );
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "never-seen"}),
        )
        .await;
    assert_eq!(
        probe.status, 404,
        "compact is not an open: {:?}",
        probe.body
    );
    let log = home.log_lines();
    assert_eq!(log.len(), 1, "one line: {log:?}");
    assert!(log[0].contains("compact_unknown_session"), "{log:?}");
    assert!(
        home.spooled().is_empty(),
        "nothing spooled to open it later"
    );
    assert!(
        !home.state_dir().join("sidecars").exists(),
        "no sidecar for an unknown session"
    );
}
