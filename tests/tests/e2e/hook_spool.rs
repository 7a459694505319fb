//! SessionEnd only spools; the drain delivers with the original observation times, in order,
//! and survives being killed mid-way without losing or repeating a call.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::{Value, json};

use baton_tests::Baton;
use baton_tests::hook::HookHome;
use baton_tests::recording_proxy::RecordingProxy;

/// Nothing listens here: a server that is down.
const DOWN: &str = "http://127.0.0.1:9";

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn session_end_spools_within_its_budget_and_the_drain_closes_at_the_observed_time() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("spool").await;
    let run_id = client
        .open(&json!({"agent": "claude-code", "sessionId": "ending", "source": "startup"}))
        .await;

    let mut home = HookHome::new(DOWN, &tenant.api_key);
    let stop = json!({"session_id": "ending", "hook_event_name": "Stop", "last_assistant_message": "all done"});
    let stopped = home.run(&["claude-code", "stop"], &stop).await;
    assert_eq!((stopped.code, stopped.stdout.as_str()), (Some(0), ""));
    let end = json!({"session_id": "ending", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit",
        "cwd": "/w/app", "transcript_path": "/tmp/x.jsonl"});
    let ended = home.run(&["claude-code", "session-end"], &end).await;
    assert_eq!((ended.code, ended.stdout.as_str()), (Some(0), ""));
    assert!(
        ended.elapsed < Duration::from_millis(1500),
        "inside Claude Code's shared 1.5 s: {:?}",
        ended.elapsed
    );

    let spooled = home.spooled();
    assert_eq!(spooled.len(), 2, "{spooled:?}");
    assert_eq!(spooled[0]["path"], "/api/v1/agent-sessions/heartbeat");
    assert_eq!(spooled[0]["body"]["lastMessageExcerpt"], "all done");
    assert_eq!(spooled[1]["path"], "/api/v1/agent-sessions/close");
    let heard_at = spooled[0]["body"]["observedAt"].clone();
    let ended_at = spooled[1]["body"]["observedAt"].clone();
    assert!(heard_at.is_string() && ended_at.is_string());
    assert_eq!(mode(&home.spool_dir()), 0o700);
    // The entries sit in the journal, or in a batch the detached drain (started by the end,
    // against a server that is down) already moved them to: every one of those files is
    // private.
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(home.spool_dir())
        .expect("spool")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| {
                    name == "journal" || (name.starts_with("batch-") && !name.ends_with(".done"))
                })
        })
        .collect();
    assert!(!files.is_empty(), "the spool holds the entries in a file");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }

    // The server is back; the drain replays both with their observation times.
    tokio::time::sleep(Duration::from_millis(30)).await;
    home.set("BATON_URL", &baton.base_url);
    let status = home.command(&["drain"]).status().await.expect("drain");
    assert!(status.success());
    assert!(
        home.spooled().is_empty(),
        "each entry deleted once answered"
    );
    let row = client
        .get(&format!("/api/v1/agent-sessions/{run_id}"))
        .await;
    assert_eq!(row.status, 200, "{:?}", row.body);
    assert_eq!(
        row.body["lastSeenAt"], heard_at,
        "the replayed heartbeat counts when it was observed"
    );
    assert_eq!(
        row.body["closedAt"], ended_at,
        "closed when the end was observed, not when it arrived"
    );
    let again = home.command(&["drain"]).status().await.expect("drain");
    assert!(again.success(), "an empty drain is a no-op");
}

#[tokio::test]
async fn killing_the_drain_twenty_times_loses_no_call_and_repeats_none() {
    // 1,000 replays in a few seconds: far past the default 300 per minute.
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("spool-kill").await;
    let sessions: Vec<String> = (0..100).map(|n| format!("crash-{n:03}")).collect();
    let mut runs = HashMap::new();
    for session in &sessions {
        let opened = client
            .post(
                "/api/v1/agent-sessions/open",
                &json!({"agent": "claude-code", "sessionId": session, "source": "startup"}),
            )
            .await;
        assert_eq!(opened.status, 200);
        runs.insert(
            session.clone(),
            opened.body["sessionRunId"]
                .as_str()
                .expect("run")
                .to_string(),
        );
    }
    // 1,000 calls through the real hook with the server down: for each session five rounds of
    // SessionEnd then Stop. Rounds go across all sessions, so one session's calls are observed
    // well apart.
    let home = HookHome::new(DOWN, &tenant.api_key);
    for _round in 0..5 {
        for event in ["SessionEnd", "Stop"] {
            for session in &sessions {
                let word = if event == "Stop" {
                    "stop"
                } else {
                    "session-end"
                };
                let payload =
                    json!({"session_id": session, "hook_event_name": event, "reason": "other"});
                let run = home.run(&["claude-code", word], &payload).await;
                assert_eq!(run.code, Some(0));
            }
        }
    }
    let spooled = home.spooled();
    assert_eq!(spooled.len(), 1000);
    let mut last_heartbeat: HashMap<String, Value> = HashMap::new();
    for entry in &spooled {
        if entry["path"] == "/api/v1/agent-sessions/heartbeat" {
            let session = entry["body"]["sessionId"]
                .as_str()
                .expect("session")
                .to_string();
            last_heartbeat.insert(session, entry["body"]["observedAt"].clone());
        }
    }

    // Every call the drains send goes through a proxy that records it, so a repeat is seen
    // even though the server answers it idempotently. Each spooled call is identified by its
    // path and body (the body carries its own observation time, so no two are alike).
    let identities: HashSet<(String, String)> = spooled
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().expect("path").to_string(),
                entry["body"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        identities.len(),
        spooled.len(),
        "every spooled call is distinct"
    );
    let proxy = RecordingProxy::start(&baton.base_url).await;
    let mut home = home;
    home.set("BATON_URL", &proxy.url);
    let killed_mid_way = home.kill_drains(&proxy, 20).await;
    assert!(
        killed_mid_way > 0,
        "the kills landed while the drain was sending"
    );
    let finished = home.command(&["drain"]).status().await.expect("drain");
    assert!(finished.success());
    assert!(home.spooled().is_empty(), "every call was delivered");

    // The usage context's delivery records go through the same drain from their own spool;
    // this test is about the lifecycle calls.
    let sent: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|request| request.path != "/api/v1/usage/batches")
        .collect();
    let mut times: HashMap<(String, String), usize> = HashMap::new();
    for request in &sent {
        let body: Value = serde_json::from_str(&request.body).expect("JSON body");
        *times
            .entry((request.path.clone(), body.to_string()))
            .or_default() += 1;
    }
    let missing = identities
        .iter()
        .filter(|id| !times.contains_key(*id))
        .count();
    assert_eq!(missing, 0, "no spooled call was lost");
    assert_eq!(
        times.len(),
        identities.len(),
        "nothing was sent that was not spooled"
    );
    let repeats = sent.len() - identities.len();
    println!(
        "kills mid-way: {killed_mid_way}, calls sent: {}, repeats: {repeats}",
        sent.len()
    );
    assert!(
        repeats <= killed_mid_way,
        "a kill re-sends at most the call it was on: {repeats} repeats for {killed_mid_way} kills mid-way"
    );

    for session in &sessions {
        let row = client
            .get(&format!("/api/v1/agent-sessions/{}", runs[session]))
            .await;
        assert_eq!(row.status, 200, "{:?}", row.body);
        assert_eq!(
            row.body["activationEpoch"], 6,
            "{session}: five closes each reopened exactly once"
        );
        assert_eq!(
            row.body["closedAt"],
            Value::Null,
            "{session}: the last call was a heartbeat"
        );
        assert_eq!(row.body["lastSeenAt"], last_heartbeat[session], "{session}");
    }
}
