//! The liveness sidecar and process episodes: a killed client reads disconnected, a replay
//! never revives it, and a `/clear` successor records the session it follows.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use baton_tests::hook::HookHome;
use baton_tests::poll::liveness;
use baton_tests::{Baton, Client};

/// A stand-in Claude Code: answers `--version` like the real one and otherwise just lives.
pub(crate) fn stand_in(dir: &Path) -> Child {
    let script = dir.join("claude");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo '2.1.296 (Claude Code)'; exit 0; fi\n\
         while :; do sleep 1; done\n",
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    Command::new(&script)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(Stdio::null())
        .spawn()
        .expect("stand-in client")
}

/// SIGKILL to the stand-in's whole process group, then reap it (a zombie would still look alive).
pub(crate) async fn kill_client(client: &mut Child) {
    let pid = client.id().expect("pid") as i32;
    nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL).expect("SIGKILL the client");
    let _ = client.wait().await;
}

pub(crate) fn sidecar_home(baton: &Baton, api_key: &str, client_pid: u32) -> HookHome {
    let mut home = HookHome::new(&baton.base_url, api_key);
    home.set("BATON_HOOK_SIDECAR", "on");
    home.set("BATON_HOOK_PULSE_INTERVAL_MS", "100");
    home.set("CLAUDE_PID", &client_pid.to_string());
    home
}

/// Polls the liveness read until `done` holds (at most 15 s).
async fn until(client: &Client, run_id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let read = liveness(client, run_id).await;
        if done(&read) {
            return read;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "never reached: {read}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn start(home: &HookHome, session_id: &str, source: &str) -> String {
    let payload = json!({"session_id": session_id, "hook_event_name": "SessionStart", "source": source,
        "cwd": "/w/app"});
    let run = home.run(&["claude-code", "session-start"], &payload).await;
    let printed = run.json().expect("context");
    let text = printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context")
        .to_string();
    let start = text.find("sessionRunId = ").expect("run id") + 15;
    text[start..start + 36].to_string()
}

fn sidecar_pids(home: &HookHome) -> Vec<u32> {
    std::fs::read_dir(home.state_dir().join("sidecars"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
                .filter_map(|text| text.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A running Baton, a tenant, a stand-in client process and a hook home whose sidecar
/// watches it.
struct Scene {
    _baton: Baton,
    client: Client,
    stand_in: Child,
    home: HookHome,
}

async fn scene(name: &str) -> Scene {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client(name).await;
    let dir = std::env::temp_dir().join(format!("standin-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("stand-in folder");
    let stand_in = stand_in(&dir);
    let home = sidecar_home(&baton, &tenant.api_key, stand_in.id().expect("pid"));
    Scene {
        _baton: baton,
        client,
        stand_in,
        home,
    }
}

/// SessionStart through the hook, then wait until its sidecar's first pulse arrived.
async fn start_live(scene: &Scene, session_id: &str, source: &str) -> String {
    let run_id = start(&scene.home, session_id, source).await;
    until(&scene.client, &run_id, |read| {
        read["liveness"] == "live" && read["episodes"][0].is_object()
    })
    .await;
    run_id
}

#[tokio::test]
async fn a_killed_client_reads_disconnected_and_a_replay_does_not_revive_it() {
    let mut scene = scene("liveness").await;
    let pid = scene.stand_in.id().expect("pid");
    let (client, home) = (&scene.client, &scene.home);
    let run_id = start(home, "killed", "startup").await;

    let live = until(client, &run_id, |read| {
        read["liveness"] == "live" && read["episodes"][0]["clientVersion"] == "2.1.296"
    })
    .await;
    let episode = &live["episodes"][0];
    assert_eq!(episode["client"], "claude-code");
    assert_eq!(episode["pid"], pid);
    assert!(
        episode["hostId"]
            .as_str()
            .is_some_and(|id| id.starts_with("h-"))
    );
    assert_eq!(
        live["episodes"].as_array().expect("episodes").len(),
        1,
        "one sidecar per session and process"
    );
    // A second SessionStart in the same process (compact) starts no second sidecar.
    let payload =
        json!({"session_id": "killed", "hook_event_name": "SessionStart", "source": "compact"});
    home.run(&["claude-code", "session-start"], &payload).await;

    kill_client(&mut scene.stand_in).await;
    let gone = until(client, &run_id, |read| read["liveness"] == "disconnected").await;
    assert_eq!(
        gone["outcome"], "unknown",
        "no SessionEnd: the outcome is unknown"
    );
    assert_eq!(gone["episodes"].as_array().expect("episodes").len(), 1);
    assert_eq!(gone["episodes"][0]["endReason"], "process_exited");
    let ended_at = gone["episodes"][0]["endedAt"]
        .as_str()
        .expect("ended")
        .to_string();

    // Replays from before the exit: an old one (clamped to lastSeenAt) and one just before it.
    let before_exit = chrono::DateTime::parse_from_rfc3339(&ended_at).expect("instant")
        - chrono::Duration::milliseconds(1);
    for observed in [
        "2026-01-01T00:00:00.000Z".to_string(),
        before_exit.to_rfc3339(),
    ] {
        let replay = client
            .post(
                "/api/v1/agent-sessions/heartbeat",
                &json!({"agent": "claude-code", "sessionId": "killed", "observedAt": observed}),
            )
            .await;
        assert_eq!(replay.status, 200, "{:?}", replay.body);
        assert_eq!(replay.body["resurrected"], false);
        assert_eq!(
            liveness(client, &run_id).await["liveness"],
            "disconnected",
            "{observed}"
        );
    }
    assert!(
        sidecar_pids(home).is_empty(),
        "the sidecar left with its client"
    );
}

#[tokio::test]
async fn a_silent_client_reads_disconnected_once_the_window_passes() {
    let mut scene = scene("liveness-window").await;
    let run_id = start_live(&scene, "silent", "startup").await;
    let (client, home) = (&scene.client, &scene.home);
    // The machine dies: sidecar and client both vanish, no last pulse.
    for pid in sidecar_pids(home) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    kill_client(&mut scene.stand_in).await;
    // A pulse the sidecar sent just before the kill may still be landing: take the last pulse
    // once two reads 200 ms apart agree, so the window is measured from the real last one.
    let read_last_pulse = || async {
        liveness(client, &run_id).await["episodes"][0]["lastPulseAt"]
            .as_str()
            .expect("pulse")
            .to_string()
    };
    let mut last_pulse = read_last_pulse().await;
    for _ in 0..25 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let again = read_last_pulse().await;
        if again == last_pulse {
            break;
        }
        last_pulse = again;
    }
    let at = |seconds: i64| {
        let instant = chrono::DateTime::parse_from_rfc3339(&last_pulse).expect("instant")
            + chrono::Duration::seconds(seconds);
        instant
            .to_utc()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let within = liveness(&client.at(&at(119)), &run_id).await;
    assert_eq!(
        within["liveness"], "live",
        "inside the window the last pulse still counts"
    );
    let after = liveness(&client.at(&at(120)), &run_id).await;
    assert_eq!(
        after["liveness"], "disconnected",
        "within 120 s of the last pulse"
    );
    assert_eq!(after["outcome"], "unknown");
}

#[tokio::test]
async fn after_clear_the_new_session_records_the_one_it_follows() {
    let mut scene = scene("clear").await;
    let first = start_live(&scene, "before-clear", "startup").await;
    let (client, home) = (&scene.client, &scene.home);
    // /clear: SessionEnd(clear) for the old id, then SessionStart(clear) with a new id, one process.
    let end =
        json!({"session_id": "before-clear", "hook_event_name": "SessionEnd", "reason": "clear"});
    home.run(&["claude-code", "session-end"], &end).await;
    let second = start(home, "after-clear", "clear").await;
    assert_ne!(first, second, "a new native session, not a new episode");
    let read = liveness(client, &second).await;
    assert_eq!(read["followsSessionRunId"], first.as_str());
    // The old session closes (the drain delivers its spooled close) and its sidecar stops.
    let old = until(client, &first, |read| {
        read["liveness"] == "closed" && read["episodes"][0]["endReason"] == "session_closed"
    })
    .await;
    assert!(old["closedAt"].is_string());
    until(client, &second, |read| {
        read["liveness"] == "live" && read["episodes"][0].is_object()
    })
    .await;
    kill_client(&mut scene.stand_in).await;
    until(client, &second, |read| read["liveness"] == "disconnected").await;
}
