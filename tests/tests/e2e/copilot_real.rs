//! The real GitHub Copilot CLI 1.0.102, in its bring-your-own-key mode against the Chat
//! Completions stand-in (`COPILOT_OFFLINE=true`: no GitHub sign-in, no network), running
//! Baton's hooks exactly as `baton-hook install --harness copilot` wrote them into its own user
//! hooks file: startup opens and starts a sidecar on the native `copilot` process with its
//! version, agentStop heartbeats and the nudge's `block` continues the turn into the debrief,
//! sessionEnd's close arrives with no manual drain, `--resume` reopens with a new episode that
//! reads live, SIGKILL mid-turn reads `disconnected`, and uninstall removes the file it made.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use baton_tests::chat_standin::{ChatStandIn, Reply, Script};
use baton_tests::{Baton, binary};

use crate::claude_hooks_real::until;
use crate::real_client::{self, liveness};

pub(crate) const COPILOT_VERSION: &str = "1.0.102";
/// Has a row in `usage-model/pricing/prices.json`.
pub(crate) const MODEL: &str = "gpt-4o";

/// Where `scripts/install-harnesses.sh` puts Copilot CLI's native binary, unless
/// `BATON_TEST_COPILOT` names it.
pub(crate) fn copilot_binary() -> PathBuf {
    let path = std::env::var_os("BATON_TEST_COPILOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let package = match std::env::consts::ARCH {
                "aarch64" => "copilot-linux-arm64",
                _ => "copilot-linux-x64",
            };
            std::env::var_os("BATON_HARNESS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/baton-harness"))
                .join("node_modules/@github")
                .join(package)
                .join("copilot")
        });
    assert!(
        path.is_file(),
        "Copilot CLI {COPILOT_VERSION} is missing at {}: run scripts/install-harnesses.sh \
         (or point BATON_TEST_COPILOT at it)",
        path.display()
    );
    path
}

/// A home and a project folder of the test's own; kept when the test fails.
pub(crate) struct Scratch {
    pub(crate) root: PathBuf,
    env: Vec<(String, String)>,
}

impl Scratch {
    pub(crate) fn new(standin: &ChatStandIn, baton: &Baton, api_key: &str) -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-copilot-real-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(root.join("home")).expect("home");
        std::fs::create_dir_all(root.join("project")).expect("project");
        let home = root.join("home").display().to_string();
        let env = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", home),
            ("COPILOT_OFFLINE", "true".to_string()),
            ("COPILOT_PROVIDER_BASE_URL", standin.base_url.clone()),
            ("COPILOT_MODEL", MODEL.to_string()),
            ("COPILOT_AUTO_UPDATE", "false".to_string()),
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

    /// The last `lines` lines of Copilot's newest process log (`~/.copilot/logs`), for a
    /// failure message: what the client itself was doing.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let newest = std::fs::read_dir(self.home().join(".copilot/logs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".log"))
            .max_by_key(|entry| entry.metadata().and_then(|meta| meta.modified()).ok());
        let Some(newest) = newest else {
            return "(no Copilot process log)".to_string();
        };
        let text = std::fs::read_to_string(newest.path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        format!(
            "Copilot's log {}:\n{}",
            newest.path().display(),
            all[all.len().saturating_sub(lines)..].join("\n")
        )
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub(crate) fn hooks_file(&self) -> PathBuf {
        self.home().join(".copilot/hooks/baton.json")
    }

    pub(crate) fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.root.join("project"))
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null());
        command
    }

    /// `baton-hook install|uninstall --harness copilot --scope user`; its stdout.
    pub(crate) async fn baton_hook(&self, verb: &str) -> String {
        let output = self
            .command(&binary("baton-hook"))
            .args([verb, "--harness", "copilot", "--scope", "user"])
            .output()
            .await
            .expect("baton-hook");
        assert!(output.status.success(), "{verb}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `baton-hook install --harness claude-code --scope project` in the project folder: the
    /// repository's Claude Code settings, which Copilot CLI also runs.
    pub(crate) async fn install_claude_settings(&self) {
        let output = self
            .command(&binary("baton-hook"))
            .args(["install", "--harness", "claude-code", "--scope", "project"])
            .output()
            .await
            .expect("baton-hook");
        assert!(output.status.success(), "{output:?}");
        assert!(self.root.join("project/.claude/settings.json").is_file());
    }

    /// `copilot -p PROMPT --allow-all-tools ARGS`, started in its own process group and not
    /// waited for.
    pub(crate) fn copilot(&self, prompt: &str, args: &[&str]) -> Child {
        self.command(&copilot_binary())
            .args(["-p", prompt, "--allow-all-tools"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("copilot")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("copilot_real: scratch kept in {}", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Waits for a finished `copilot` run and checks it succeeded.
pub(crate) async fn finished(child: Child, what: &str) {
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what}: copilot finished within two minutes"))
        .expect("copilot ran");
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub(crate) async fn completions(standin: &ChatStandIn, count: usize) {
    let started = Instant::now();
    while standin.issued().len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "Copilot CLI never sent model request {count}: {:?}",
            standin.requests()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn copilot_cli_runs_the_installed_hooks_from_startup_to_a_sigkill_mid_turn() {
    copilot_binary();
    let baton = Baton::start_with(&[("BATON_RATE_LIMIT__REQUESTS", "1000000")]).await;
    let tenant = baton.create_tenant("copilot-hooks").await;
    let client = baton.client(&tenant);
    let gate = std::env::temp_dir().join(format!("gate-{}", uuid::Uuid::new_v4().simple()));
    let (first_turn, debrief, never) = (
        gate.with_extension("one"),
        gate.with_extension("debrief"),
        gate.with_extension("never"),
    );
    let standin = ChatStandIn::start(Script {
        replies: vec![
            // Turn one waits for the test's attributed write, so the nudge arms.
            Reply::After {
                gate: first_turn.clone(),
                reply: Box::new(Reply::Text("Turn one is done.".to_string())),
            },
            // The nudge's continuation: the debrief turn, held until the test has read the
            // first turn's excerpt (the close that follows the run hands the excerpt to the
            // closer, which clears it).
            Reply::After {
                gate: debrief.clone(),
                reply: Box::new(Reply::Text("Debriefed: nothing left open.".to_string())),
            },
            // The resumed turn never gets an answer: the client is killed mid-turn.
            Reply::After {
                gate: never,
                reply: Box::new(Reply::Text("unreachable".to_string())),
            },
        ],
    })
    .await;
    let scratch = Scratch::new(&standin, &baton, &tenant.api_key);

    // Install: a hooks file of Baton's own; a second install writes nothing.
    let said = scratch.baton_hook("install").await;
    assert!(said.contains("Copilot CLI"), "the trust step: {said}");
    let installed = std::fs::read_to_string(scratch.hooks_file()).expect("hooks file");
    let parsed: Value = serde_json::from_str(&installed).expect("JSON");
    assert_eq!(parsed["version"], 1);
    let events: Vec<&String> = parsed["hooks"].as_object().expect("hooks").keys().collect();
    assert_eq!(
        events,
        [
            "sessionStart",
            "agentStop",
            "sessionEnd",
            "preCompact",
            "userPromptSubmitted"
        ]
    );
    scratch.baton_hook("install").await;
    assert_eq!(
        std::fs::read_to_string(scratch.hooks_file()).expect("hooks file"),
        installed,
        "a second install changes nothing"
    );

    // Startup: sessionStart opened the row before the first model request.
    let session_id = uuid::Uuid::new_v4().to_string();
    let first = scratch.copilot("Start the work.", &["--session-id", &session_id]);
    let copilot_pid = first.id().expect("pid");
    completions(&standin, 1).await;
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "copilot", "sessionId": session_id}),
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
    // The briefing reached the model as a user message of its own.
    assert!(
        standin.issued()[0].all_user_text.contains(&run_id),
        "the sessionStart context names the run: {}",
        standin.issued()[0].all_user_text
    );
    let read = || liveness(&client, &run_id);
    let live = until(Duration::from_secs(30), "first episode", read, |read| {
        read["episodes"][0]["clientVersion"] == COPILOT_VERSION
    })
    .await;
    assert_eq!(live["liveness"], "live");
    assert_eq!(
        live["episodes"][0]["pid"], copilot_pid,
        "the sidecar watches the native copilot process"
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
    // The turn end armed the nudge and its continuation reached the model, which holds it.
    completions(&standin, 2).await;
    let admin = baton.admin().await;
    let excerpt = real_client::excerpt(&admin, &run_id).await;
    assert_eq!(
        excerpt.as_deref(),
        Some("Turn one is done."),
        "agentStop carries no final text: the hook took the answer from the transcript"
    );
    std::fs::write(&debrief, "go").expect("release the debrief");

    // agentStop armed the nudge; its block continued the turn with the debrief words.
    finished(first, "first run").await;
    let continued = standin.issued().get(1).cloned().expect("the continuation");
    real_client::assert_debrief_prompt(&continued.user_text);
    let epoch = real_client::until_closed_after_debrief(&client, &run_id).await;

    // --resume: a new process reopens the row; read at once, it is live.
    let second = scratch.copilot("Carry on.", &[&format!("--resume={session_id}")]);
    let second_pid = second.id().expect("pid");
    completions(&standin, 3).await;
    let resumed = real_client::resumed_episode(&client, &run_id, epoch, |episode| {
        episode["pid"] == second_pid
    })
    .await;
    // SIGKILL mid-turn: no sessionEnd; the sidecar reports the exit.
    real_client::kill_and_see_disconnected(&client, &run_id, second, second_pid, &resumed["pid"])
        .await;

    // Uninstall: the file install made is gone.
    scratch.baton_hook("uninstall").await;
    assert!(
        !scratch.hooks_file().exists(),
        "uninstall removed Baton's file"
    );
    let _ = std::fs::remove_file(&first_turn);
    let _ = std::fs::remove_file(&debrief);
}

/// Copilot CLI runs a repository's `.claude/settings.json` hooks (in prompt mode once the
/// folder is trusted) with Claude Code's payload shape and no `COPILOT_HOOK_DIR`: Baton must
/// still report the session as Copilot's, never register it as a Claude Code session.
#[tokio::test]
async fn copilot_running_a_repositorys_claude_settings_reports_as_copilot() {
    copilot_binary();
    let baton = Baton::start_with(&[("BATON_RATE_LIMIT__REQUESTS", "1000000")]).await;
    let tenant = baton.create_tenant("copilot-hosted").await;
    let client = baton.client(&tenant);
    let standin = ChatStandIn::start(Script {
        replies: vec![Reply::Text("Hello.".to_string())],
    })
    .await;
    let scratch = Scratch::new(&standin, &baton, &tenant.api_key);
    scratch.install_claude_settings().await;
    // `--trust-folder` (repository hooks load in prompt mode only in a trusted folder) cannot
    // be combined with `--session-id`: the session is the one Copilot made.
    finished(scratch.copilot("Say hello.", &["--trust-folder"]), "run").await;
    let sessions: Vec<String> = std::fs::read_dir(scratch.home().join(".copilot/session-state"))
        .expect("session-state")
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("events.jsonl").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session_id = sessions[0].clone();
    let key = |agent: &str| json!({"agent": agent, "sessionId": session_id});
    let as_claude = client
        .post("/api/v1/agent-sessions/heartbeat", &key("claude-code"))
        .await;
    assert_eq!(
        as_claude.status, 404,
        "never registered as Claude Code: {:?}",
        as_claude.body
    );
    let as_copilot = client
        .post("/api/v1/agent-sessions/heartbeat", &key("copilot"))
        .await;
    assert_eq!(as_copilot.status, 200, "{:?}", as_copilot.body);
    let run_id = as_copilot.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string();
    let read = || liveness(&client, &run_id);
    let episodes = until(Duration::from_secs(30), "an episode", read, |read| {
        read["episodes"][0].is_object()
    })
    .await;
    let episode = &episodes["episodes"][0];
    assert_eq!(
        episode["client"], "claude-code",
        "the settings format: {episode}"
    );
    assert_eq!(episode["hostClient"], "copilot", "the host: {episode}");
    assert_eq!(episode["clientVersion"], COPILOT_VERSION, "{episode}");
}
