//! The real Claude Code 2.1.332 running Baton's hooks exactly as `baton-hook install` wrote
//! them into its user settings, against a real Baton and the Messages stand-in: startup opens
//! and starts a sidecar on Claude's own process, Stop heartbeats and the nudge's `block`
//! continues the turn into the debrief, SessionEnd's close arrives with no manual drain,
//! `--resume` reopens with a new episode that reads live, and SIGKILL mid-turn reads
//! `disconnected`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use baton_tests::messages_standin::{Caller, MessagesStandIn, Reply, Script};
use baton_tests::{Baton, Client, binary};

use crate::claude_real::claude_binary;

const MODEL: &str = "claude-opus-5-5";

/// Polls `read` until `done` holds, for at most `limit`.
pub(crate) async fn until<F, Fut>(
    limit: Duration,
    what: &str,
    read: F,
    done: impl Fn(&Value) -> bool,
) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let started = Instant::now();
    loop {
        let value = read().await;
        if done(&value) {
            return value;
        }
        assert!(started.elapsed() < limit, "{what}: never reached: {value}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) struct Scratch {
    root: PathBuf,
    env: Vec<(String, String)>,
}

impl Scratch {
    pub(crate) fn new(baton: &Baton, api_key: &str, standin: &MessagesStandIn) -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-claude-hooks-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(root.join("home")).expect("home");
        std::fs::create_dir_all(root.join("project")).expect("project");
        let home = root.join("home").display().to_string();
        let env = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", home),
            ("ANTHROPIC_BASE_URL", standin.base_url.clone()),
            ("ANTHROPIC_API_KEY", "sk-ant-standin".to_string()),
            ("DISABLE_AUTOUPDATER", "1".to_string()),
            ("DISABLE_TELEMETRY", "1".to_string()),
            ("BATON_URL", baton.base_url.clone()),
            ("BATON_API_KEY", api_key.to_string()),
            ("BATON_STOP_NUDGE", "1".to_string()),
            ("BATON_HOOK_PULSE_INTERVAL_MS", "200".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
        Scratch { root, env }
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.root.join("project"))
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null());
        command
    }

    pub(crate) async fn install(&self) {
        let output = self
            .command(&binary("baton-hook"))
            .args(["install", "--harness", "claude-code", "--scope", "user"])
            .output()
            .await
            .expect("install");
        assert!(output.status.success(), "{output:?}");
        let settings = std::fs::read_to_string(self.root.join("home/.claude/settings.json"))
            .expect("installed settings");
        assert!(settings.contains("baton-hook"), "{settings}");
    }

    /// `claude -p PROMPT ARGS`, started in its own process group and not waited for.
    pub(crate) fn claude(&self, prompt: &str, args: &[&str]) -> Child {
        self.command(&claude_binary())
            .args(["-p", prompt, "--model", MODEL, "--output-format", "json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("claude")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

async fn liveness(client: &Client, run_id: &str) -> Value {
    client
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await
        .body
}

async fn main_requests(standin: &MessagesStandIn, count: usize) {
    let started = Instant::now();
    while standin
        .issued()
        .iter()
        .filter(|issued| issued.caller == Caller::Main)
        .count()
        < count
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "Claude Code never sent main request {count}: {:?}",
            standin.requests()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn claude_code_runs_the_installed_hooks_from_startup_to_a_sigkill_mid_turn() {
    claude_binary();
    let baton = Baton::start_with(&[("BATON_RATE_LIMIT__REQUESTS", "1000000")]).await;
    let tenant = baton.create_tenant("claude-hooks").await;
    let client = baton.client(&tenant);
    let root_gate = std::env::temp_dir().join(format!("gate-{}", uuid::Uuid::new_v4().simple()));
    let (first_turn, never) = (
        root_gate.with_extension("one"),
        root_gate.with_extension("never"),
    );
    let standin = MessagesStandIn::start(Script {
        main: vec![
            // Turn one waits for the test's attributed write, so the nudge arms.
            Reply::After {
                gate: first_turn.clone(),
                reply: Box::new(Reply::Text("Turn one is done.".to_string())),
            },
            // The nudge's continuation: the debrief turn.
            Reply::Text("Debriefed: nothing left open.".to_string()),
            // The resumed turn never gets an answer: the client is killed mid-turn.
            Reply::After {
                gate: never,
                reply: Box::new(Reply::Text("unreachable".to_string())),
            },
        ],
        subagent: vec![],
    })
    .await;
    let scratch = Scratch::new(&baton, &tenant.api_key, &standin);
    scratch.install().await;
    let session_id = uuid::Uuid::new_v4().to_string();

    // Startup: SessionStart opened the row before the first model request.
    let first = scratch.claude("Start the work.", &["--session-id", &session_id]);
    let claude_pid = first.id().expect("pid");
    main_requests(&standin, 1).await;
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": session_id}),
        )
        .await;
    assert_eq!(
        probe.status, 200,
        "startup opened the session: {:?}",
        probe.body
    );
    let run_id = probe.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string();
    let read = || liveness(&client, &run_id);
    let live = until(Duration::from_secs(30), "first episode", read, |read| {
        read["episodes"][0]["clientVersion"] == "2.1.332"
    })
    .await;
    assert_eq!(live["liveness"], "live");
    assert_eq!(
        live["episodes"][0]["pid"], claude_pid,
        "the sidecar watches Claude itself"
    );
    let written = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "decision", "topic": "use the outbox", "content": "kept",
                "sessionRunId": run_id}),
        )
        .await;
    assert_eq!(written.status, 201, "{:?}", written.body);
    std::fs::write(&first_turn, "go").expect("release turn one");

    // Stop armed the nudge; its block continued the turn with the debrief words.
    let output = tokio::time::timeout(Duration::from_secs(120), first.wait_with_output())
        .await
        .expect("claude finished")
        .expect("claude ran");
    assert!(output.status.success(), "{output:?}");
    let continued = standin
        .requests()
        .into_iter()
        .filter(|request| request.caller == Some(Caller::Main))
        .nth(1)
        .expect("a second main request: the continuation");
    assert!(
        continued.user_text.contains("remember") && continued.user_text.contains("resolve"),
        "the debrief prompt reached the model: {}",
        continued.user_text
    );
    let row = || {
        let client = client.clone();
        let run_id = run_id.clone();
        async move {
            client
                .get(&format!("/api/v1/agent-sessions/{run_id}"))
                .await
                .body
        }
    };
    // SessionEnd only spooled; the close arrives with no drain by hand.
    let closed = until(Duration::from_secs(60), "SessionEnd close", row, |row| {
        row["closedAt"].is_string()
    })
    .await;
    // The continuation's Stop (stop_hook_active) finalized the attempt; nothing was written
    // during the debrief, so it lands expired (the closer still debriefs the session).
    assert_eq!(
        closed["triageStatus"], "expired",
        "the follow-up Stop finalized"
    );
    let epoch = closed["activationEpoch"].as_i64().expect("epoch");

    // --resume: a new process reopens the row; read at once, it is live.
    let mut second = scratch.claude("Carry on.", &["--resume", &session_id]);
    let second_pid = second.id().expect("pid");
    main_requests(&standin, 3).await;
    let reopened = row().await;
    assert_eq!(reopened["closedAt"], Value::Null, "resume reopened it");
    assert_eq!(reopened["activationEpoch"].as_i64(), Some(epoch + 1));
    assert_eq!(liveness(&client, &run_id).await["liveness"], "live");
    let episode_of = |read: &Value| {
        read["episodes"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["pid"] == second_pid).cloned())
            .unwrap_or(Value::Null)
    };
    let watched = until(Duration::from_secs(30), "resumed episode", read, |read| {
        episode_of(read).is_object()
    })
    .await;
    assert_eq!(episode_of(&watched)["endedAt"], Value::Null, "{watched}");
    assert_eq!(watched["liveness"], "live");

    // SIGKILL mid-turn: no SessionEnd; the sidecar reports the exit.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(second_pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL claude");
    let _ = second.wait().await;
    let gone = until(Duration::from_secs(120), "disconnected", read, |read| {
        read["liveness"] == "disconnected"
    })
    .await;
    assert_eq!(episode_of(&gone)["endReason"], "process_exited", "{gone}");
    assert_eq!(gone["outcome"], "unknown");
    let _ = std::fs::remove_file(&first_turn);
}
