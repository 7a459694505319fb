//! The hook under each harness's launch path, with stand-in clients whose process looks like
//! the harness (`codex`, `cursor-agent`): the sidecar watches the client itself — not the shell
//! that started the hook — and ends with it; a close reaches the server with no manual drain,
//! with and without a sidecar; a resume reads live at once; a recorded client whose start time
//! differs (a recycled pid) keeps nothing live.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use baton_tests::Baton;
use baton_tests::client_standin::{Launch, StandIn};
use baton_tests::hook::HookHome;
use baton_tests::poll::{liveness, until};

fn sidecar_home(baton: &Baton, api_key: &str) -> HookHome {
    let mut home = HookHome::new(&baton.base_url, api_key);
    home.set("BATON_HOOK_SIDECAR", "on");
    home.set("BATON_HOOK_PULSE_INTERVAL_MS", "100");
    home
}

fn run_id_in(printed: &str) -> String {
    let value: Value = serde_json::from_str(printed.trim()).expect("SessionStart printed JSON");
    let text = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .or_else(|| value["additional_context"].as_str())
        .expect("a context")
        .to_string();
    let start = text.find("sessionRunId = ").expect("the run id") + 15;
    text[start..start + 36].to_string()
}

/// One harness as the stand-in plays it: its process name, the hook's harness argument, its
/// version line, and a SessionStart / SessionEnd payload for `session`.
struct Shape {
    process: &'static str,
    harness: &'static str,
    version_line: &'static str,
    version: &'static str,
}

const CODEX: Shape = Shape {
    process: "codex",
    harness: "codex",
    version_line: "codex-cli 0.171.0",
    version: "0.171.0",
};
const CURSOR: Shape = Shape {
    process: "cursor-agent",
    harness: "cursor",
    version_line: "2026.01.28-1a2b3c4",
    version: "",
};

impl Shape {
    fn start(&self, session: &str, source: &str) -> Value {
        match self.harness {
            "cursor" => json!({"conversation_id": session, "session_id": session,
                "hook_event_name": "sessionStart", "workspace_roots": ["/w/app"],
                "is_background_agent": false}),
            _ => json!({"session_id": session, "hook_event_name": "SessionStart",
                "source": source, "cwd": "/w/app", "model": "gpt-5.5"}),
        }
    }

    fn end(&self, session: &str) -> Value {
        match self.harness {
            "cursor" => json!({"conversation_id": session, "session_id": session,
                "hook_event_name": "sessionEnd", "reason": "completed", "workspace_roots": ["/w/app"]}),
            _ => json!({"session_id": session, "hook_event_name": "SessionEnd", "reason": "other",
                "cwd": "/w/app", "model": "gpt-5.5"}),
        }
    }
}

#[tokio::test]
async fn codex_and_cursor_sessions_watch_their_client_through_a_shell_or_directly_and_end_with_it()
{
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("clients").await;
    let home = sidecar_home(&baton, &tenant.api_key);
    for shape in [CODEX, CURSOR] {
        for launch in [Launch::Shell, Launch::Direct] {
            let case = format!("{} {launch:?}", shape.process);
            let session = format!("{}-{launch:?}", shape.process);
            let mut standin = StandIn::spawn(&home, shape.process, shape.version_line, launch);
            let printed = standin
                .hook(
                    &[shape.harness, "session-start"],
                    &shape.start(&session, "startup"),
                )
                .await;
            let run_id = run_id_in(&printed);
            let read = || liveness(&client, &run_id);
            let live = until(Duration::from_secs(15), &case, read, |read| {
                read["liveness"] == "live" && read["episodes"][0].is_object()
            })
            .await;
            let episode = &live["episodes"][0];
            assert_eq!(
                episode["pid"],
                standin.pid(),
                "{case}: the client, not the shell"
            );
            assert_eq!(episode["client"], shape.harness, "{case}");
            assert_eq!(live["episodes"].as_array().map(Vec::len), Some(1), "{case}");
            // The shell (if any) and the hook are long gone; the episode is still live.
            let later = until(Duration::from_secs(15), &case, read, |read| {
                read["episodes"][0]["lastPulseAt"] != episode["lastPulseAt"]
            })
            .await;
            assert_eq!(later["liveness"], "live", "{case}: still watched");
            assert_eq!(later["episodes"][0]["endedAt"], Value::Null, "{case}");
            if !shape.version.is_empty() {
                until(Duration::from_secs(15), &case, read, |read| {
                    read["episodes"][0]["clientVersion"] == shape.version
                })
                .await;
            }

            standin.kill().await;
            // Well inside the 120 s the seed allows: the sidecar saw its client go.
            let gone = until(Duration::from_secs(15), &case, read, |read| {
                read["liveness"] == "disconnected"
            })
            .await;
            assert_eq!(gone["episodes"][0]["endReason"], "process_exited", "{case}");
            assert_eq!(gone["outcome"], "unknown", "{case}");
        }
    }
    assert!(
        home.log_lines().is_empty(),
        "a client was found every time: {:?}",
        home.log_lines()
    );
}

#[tokio::test]
async fn a_session_end_close_reaches_the_server_with_no_manual_drain_with_and_without_a_sidecar() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("closes").await;
    let home = sidecar_home(&baton, &tenant.api_key);
    let row = |run_id: String| {
        let client = client.clone();
        move || {
            let (client, run_id) = (client.clone(), run_id.clone());
            async move {
                client
                    .get(&format!("/api/v1/agent-sessions/{run_id}"))
                    .await
                    .body
            }
        }
    };

    // With a sidecar: a Codex client ends its session through a shell and lives on (Codex
    // also ends idle sessions while running).
    let mut standin = StandIn::spawn(&home, "codex", CODEX.version_line, Launch::Shell);
    let run_id = run_id_in(
        &standin
            .hook(
                &["codex", "session-start"],
                &CODEX.start("with-sidecar", "startup"),
            )
            .await,
    );
    let read = || liveness(&client, &run_id);
    until(Duration::from_secs(15), "sidecar", read, |read| {
        read["episodes"][0].is_object()
    })
    .await;
    standin
        .hook(&["codex", "session-end"], &CODEX.end("with-sidecar"))
        .await;
    let closed = until(
        Duration::from_secs(60),
        "close with a sidecar",
        row(run_id.clone()),
        |row| row["closedAt"].is_string(),
    )
    .await;
    assert!(closed["closedAt"].is_string());
    // The sidecar hears the session closed, says so and leaves.
    let ended = until(Duration::from_secs(15), "sidecar ends", read, |read| {
        read["liveness"] == "closed" && read["episodes"][0]["endReason"].is_string()
    })
    .await;
    assert_eq!(ended["episodes"][0]["endReason"], "session_closed");
    let claims = || {
        std::fs::read_dir(home.state_dir().join("sidecars"))
            .map(|entries| entries.count())
            .unwrap_or(0)
    };
    let started = Instant::now();
    while claims() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the sidecar left"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Without one: the hook runs from the test process, which is no harness. No client is
    // found, so no sidecar starts (one log line) and the lease alone decides — and the close
    // still arrives, drained by the detached drain SessionEnd starts.
    let start = home
        .run(
            &["codex", "session-start"],
            &CODEX.start("no-sidecar", "startup"),
        )
        .await;
    let run_id = run_id_in(&start.stdout);
    let sidecars = std::fs::read_dir(home.state_dir().join("sidecars"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(
        sidecars, 0,
        "the first session's sidecar left with its close"
    );
    let log = home.log_lines();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].contains("client_not_found"), "{log:?}");
    let ended = home
        .run(&["codex", "session-end"], &CODEX.end("no-sidecar"))
        .await;
    assert_eq!((ended.code, ended.stdout.as_str()), (Some(0), ""));
    until(
        Duration::from_secs(60),
        "close without a sidecar",
        row(run_id.clone()),
        |row| row["closedAt"].is_string(),
    )
    .await;
    let episodes = liveness(&client, &run_id).await["episodes"].clone();
    assert_eq!(episodes, json!([]), "nothing watched the test process");
    // The detached drain removes the spooled close once the server has answered, which is
    // after the row shows it closed: wait for the spool to empty rather than race the drain.
    let started = Instant::now();
    while !home.spooled().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the delivered close stayed spooled: {:?}",
            home.spooled()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_resume_read_at_once_shows_the_new_episode_live() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("resume").await;
    let home = sidecar_home(&baton, &tenant.api_key);
    // The first process runs the session and ends it; the close lands.
    let mut first = StandIn::spawn(&home, "codex", CODEX.version_line, Launch::Shell);
    let run_id = run_id_in(
        &first
            .hook(
                &["codex", "session-start"],
                &CODEX.start("resumed", "startup"),
            )
            .await,
    );
    first
        .hook(&["codex", "session-end"], &CODEX.end("resumed"))
        .await;
    first.exit().await;
    let read = || liveness(&client, &run_id);
    until(Duration::from_secs(60), "first close", read, |read| {
        read["liveness"] == "closed" && read["episodes"][0]["endedAt"].is_string()
    })
    .await;

    // `codex exec resume`: a new process, SessionStart(resume), then a read right away.
    let mut second = StandIn::spawn(&home, "codex", CODEX.version_line, Launch::Shell);
    let printed = second
        .hook(
            &["codex", "session-start"],
            &CODEX.start("resumed", "resume"),
        )
        .await;
    assert_eq!(run_id_in(&printed), run_id, "one row");
    let at_once = liveness(&client, &run_id).await;
    assert_eq!(at_once["liveness"], "live", "{at_once}");
    // The new episode arrives, and keeps pulsing rather than ending as `session_closed`.
    let episode_of = |read: &Value| {
        read["episodes"]
            .as_array()
            .and_then(|episodes| {
                episodes
                    .iter()
                    .find(|episode| episode["pid"] == second.pid())
                    .cloned()
            })
            .unwrap_or(Value::Null)
    };
    let arrived = until(Duration::from_secs(15), "new episode", read, |read| {
        episode_of(read).is_object()
    })
    .await;
    let first_pulse = episode_of(&arrived)["lastPulseAt"].clone();
    let later = until(Duration::from_secs(15), "later pulse", read, |read| {
        episode_of(read)["lastPulseAt"] != first_pulse
    })
    .await;
    assert_eq!(later["liveness"], "live", "{later}");
    assert_eq!(episode_of(&later)["endedAt"], Value::Null, "{later}");
    assert_eq!(later["episodes"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn a_recorded_client_whose_start_time_differs_keeps_no_episode_live() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("recycled").await;
    let home = sidecar_home(&baton, &tenant.api_key);
    // A live process holds the pid; the identity recorded for it names another start: the
    // process the pid belonged to is gone and the kernel gave the number to this one.
    let standin = StandIn::spawn(&home, "codex", CODEX.version_line, Launch::Direct);
    let pid = standin.pid().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let true_start = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(19))
        .expect("start time")
        .to_string();
    let stale_start = (true_start.parse::<u64>().expect("ticks") - 1).to_string();
    let mut runs = Vec::new();
    for (session, start) in [("stale", &stale_start), ("true", &true_start)] {
        let opened = client
            .post(
                "/api/v1/agent-sessions/open",
                &json!({"agent": "codex", "sessionId": session, "source": "startup"}),
            )
            .await;
        assert_eq!(opened.status, 200);
        runs.push(
            opened.body["sessionRunId"]
                .as_str()
                .expect("run")
                .to_string(),
        );
        let args = [
            "sidecar",
            "--agent",
            "codex",
            "--session-id",
            session,
            "--client-pid",
            &pid,
            "--client-start",
            start,
            "--client",
            "codex",
        ];
        home.command(&args).spawn().expect("sidecar");
    }
    let (stale, true_run) = (runs[0].clone(), runs[1].clone());
    let stale_read = || liveness(&client, &stale);
    let ended = until(
        Duration::from_secs(15),
        "stale identity",
        stale_read,
        |read| read["episodes"][0]["endReason"] == "process_exited",
    )
    .await;
    assert_eq!(ended["episodes"][0]["pid"], standin.pid());
    assert_eq!(
        ended["liveness"], "disconnected",
        "a live process with another start is not it"
    );
    let true_read = || liveness(&client, &true_run);
    let watched = until(
        Duration::from_secs(15),
        "true identity",
        true_read,
        |read| read["episodes"][0].is_object(),
    )
    .await;
    assert_eq!(
        watched["episodes"][0]["endedAt"],
        Value::Null,
        "the same process is watched"
    );
    assert_eq!(watched["liveness"], "live");
}
