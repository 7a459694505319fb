//! The real Gemini CLI 0.61.0 running Baton's hooks exactly as `baton-hook install --harness
//! gemini --nudge` wrote them into its user `settings.json`, against a real Baton and the Gemini
//! API stand-in: startup opens and starts a sidecar on Gemini's own (relaunched) process with
//! its version, AfterAgent heartbeats with the turn's text and the nudge's `deny` continues the
//! turn into the debrief, SessionEnd's close arrives with no manual drain, `--resume` reopens
//! with a new episode that reads live, SIGKILL mid-turn reads `disconnected`, and uninstall
//! gives back the settings file byte for byte.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use baton_tests::gemini_standin::{GeminiStandIn, Reply, Script};
use baton_tests::{Baton, binary};

use crate::claude_hooks_real::until;
use crate::real_client::{self, liveness};

pub(crate) const GEMINI_VERSION: &str = "0.61.0";
/// Named with `-m`, so no routing call precedes the real one (HOOKS.md 4.10).
pub(crate) const MODEL: &str = "gemini-2.5-pro";

/// Where `scripts/install-harnesses.sh` puts the `gemini` launcher, unless `BATON_TEST_GEMINI`
/// names it.
pub(crate) fn gemini_binary() -> PathBuf {
    let path = std::env::var_os("BATON_TEST_GEMINI")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("BATON_HARNESS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/baton-harness"))
                .join("node_modules/.bin/gemini")
        });
    assert!(
        path.exists(),
        "Gemini CLI {GEMINI_VERSION} is missing at {}: run scripts/install-harnesses.sh \
         (or point BATON_TEST_GEMINI at it)",
        path.display()
    );
    path
}

/// The user settings a person running Gemini headless against a local endpoint has: API-key
/// auth (a base URL otherwise switches to "gateway" auth, exit 41), folder trust off (else
/// exit 55 in a fresh folder), nothing sent home. Install must keep every byte of it. Written
/// with 0.61.0's own key names: it rewrites a file that uses retired ones (`disableAutoUpdate`
/// becomes `enableAutoUpdate: false`), which would leave nothing byte-identical to check.
pub(crate) const SETTINGS: &str = r#"{
  "security": {
    "auth": { "selectedType": "gemini-api-key" },
    "folderTrust": { "enabled": false }
  },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false }
}
"#;

/// A home with Gemini's settings and a project folder of the test's own; kept when the test
/// fails, so the chat files and Baton's hook log can be read.
pub(crate) struct Scratch {
    pub(crate) root: PathBuf,
    env: Vec<(String, String)>,
}

impl Scratch {
    pub(crate) fn new(standin: &GeminiStandIn, baton: Option<(&Baton, &str)>) -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-gemini-real-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(root.join("home/.gemini")).expect("home");
        std::fs::create_dir_all(root.join("project")).expect("project");
        std::fs::write(root.join("home/.gemini/settings.json"), SETTINGS).expect("settings");
        let home = root.join("home").display().to_string();
        let mut env: Vec<(String, String)> = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", home),
            ("GEMINI_API_KEY", "standin-key".to_string()),
            ("GOOGLE_GEMINI_BASE_URL", standin.base_url.clone()),
            ("BATON_STOP_NUDGE", "1".to_string()),
            ("BATON_HOOK_PULSE_INTERVAL_MS", "200".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
        if let Some((baton, api_key)) = baton {
            env.push(("BATON_URL".to_string(), baton.base_url.clone()));
            env.push(("BATON_API_KEY".to_string(), api_key.to_string()));
        }
        Scratch { root, env }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub(crate) fn settings_path(&self) -> PathBuf {
        self.home().join(".gemini/settings.json")
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

    /// `baton-hook install|uninstall --harness gemini --scope user ARGS`; its stdout.
    pub(crate) async fn baton_hook(&self, verb: &str, args: &[&str]) -> String {
        let output = self
            .command(&binary("baton-hook"))
            .args([verb, "--harness", "gemini", "--scope", "user"])
            .args(args)
            .output()
            .await
            .expect("baton-hook");
        assert!(output.status.success(), "{verb}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `gemini -m MODEL -p PROMPT --output-format json ARGS`, started in its own process group
    /// and not waited for.
    pub(crate) fn gemini(&self, prompt: &str, args: &[&str]) -> Child {
        self.command(&gemini_binary())
            .args(["-m", MODEL, "-p", prompt, "--output-format", "json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("gemini")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("gemini_real: scratch kept in {}", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Waits for a finished `gemini` run and checks it succeeded.
pub(crate) async fn finished(child: Child, what: &str) -> Value {
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what}: gemini finished within two minutes"))
        .expect("gemini ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{what}: JSON output: {stdout}"))
}

pub(crate) async fn streamed(standin: &GeminiStandIn, count: usize) {
    let started = Instant::now();
    while standin.issued().len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "Gemini CLI never sent model request {count}: {:?}",
            standin.requests()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The parent pid of `pid`, from `/proc`.
fn parent_of(pid: u64) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test]
async fn gemini_cli_runs_the_installed_hooks_from_startup_to_a_sigkill_mid_turn() {
    gemini_binary();
    let baton = Baton::start_with(&[("BATON_RATE_LIMIT__REQUESTS", "1000000")]).await;
    let tenant = baton.create_tenant("gemini-hooks").await;
    let client = baton.client(&tenant);
    let gate = std::env::temp_dir().join(format!("gate-{}", uuid::Uuid::new_v4().simple()));
    let (first_turn, debrief, never) = (
        gate.with_extension("one"),
        gate.with_extension("debrief"),
        gate.with_extension("never"),
    );
    let standin = GeminiStandIn::start(Script {
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
    let scratch = Scratch::new(&standin, Some((&baton, &tenant.api_key)));

    // Install: Baton's four entries, every other byte kept; a second install writes nothing.
    let said = scratch.baton_hook("install", &["--nudge"]).await;
    assert!(said.contains("Gemini CLI"), "the trust step: {said}");
    let installed = std::fs::read_to_string(scratch.settings_path()).expect("settings");
    let parsed: Value = serde_json::from_str(&installed).expect("installed settings are JSON");
    let original: Value = serde_json::from_str(SETTINGS).expect("original");
    for (key, value) in original.as_object().expect("object") {
        assert_eq!(&parsed[key], value, "{key} kept");
    }
    let events: Vec<&String> = parsed["hooks"].as_object().expect("hooks").keys().collect();
    assert_eq!(
        events,
        ["SessionStart", "AfterAgent", "SessionEnd", "BeforeAgent"]
    );
    assert!(
        parsed["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
            .as_str()
            .is_some_and(|command| command.ends_with(" gemini stop --nudge")),
        "{installed}"
    );
    scratch.baton_hook("install", &["--nudge"]).await;
    assert_eq!(
        std::fs::read_to_string(scratch.settings_path()).expect("settings"),
        installed,
        "a second install changes nothing"
    );

    // Startup: SessionStart opened the row before the first model request.
    let session_id = uuid::Uuid::new_v4().to_string();
    let first = scratch.gemini("Start the work.", &["--session-id", &session_id]);
    let launcher = u64::from(first.id().expect("pid"));
    streamed(&standin, 1).await;
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "gemini", "sessionId": session_id}),
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
    // The briefing reached the model inside the first prompt.
    assert!(
        standin.issued()[0].user_text.contains(&run_id),
        "the SessionStart context names the run: {}",
        standin.issued()[0].user_text
    );
    let read = || liveness(&client, &run_id);
    let live = until(Duration::from_secs(30), "first episode", read, |read| {
        read["episodes"][0]["clientVersion"] == GEMINI_VERSION
    })
    .await;
    assert_eq!(live["liveness"], "live");
    let watched = live["episodes"][0]["pid"].as_u64().expect("pid");
    assert_eq!(
        parent_of(watched),
        Some(launcher),
        "the sidecar watches the relaunched Gemini process the launcher started"
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
    streamed(&standin, 2).await;
    let admin = baton.admin().await;
    let excerpt = real_client::excerpt(&admin, &run_id).await;
    assert_eq!(
        excerpt.as_deref(),
        Some("Turn one is done."),
        "AfterAgent's prompt_response is the excerpt"
    );
    std::fs::write(&debrief, "go").expect("release the debrief");

    // AfterAgent armed the nudge; its deny continued the turn with the debrief words.
    let output = finished(first, "first run").await;
    assert_eq!(output["session_id"], session_id.as_str(), "{output}");
    let continued = standin.issued().get(1).cloned().expect("the continuation");
    real_client::assert_debrief_prompt(&continued.user_text);
    let epoch = real_client::until_closed_after_debrief(&client, &run_id).await;

    // --resume: a new process reopens the row; read at once, it is live.
    let second = scratch.gemini("Carry on.", &["--resume", &session_id]);
    let second_launcher = second.id().expect("pid");
    streamed(&standin, 3).await;
    let resumed = real_client::resumed_episode(&client, &run_id, epoch, |episode| {
        episode["pid"]
            .as_u64()
            .is_some_and(|pid| parent_of(pid) == Some(u64::from(second_launcher)))
    })
    .await;
    // SIGKILL of the whole process group (the inner process outlives a kill of the launcher
    // alone).
    real_client::kill_and_see_disconnected(
        &client,
        &run_id,
        second,
        second_launcher,
        &resumed["pid"],
    )
    .await;

    // Uninstall: the settings file is the person's again, byte for byte.
    scratch.baton_hook("uninstall", &[]).await;
    assert_eq!(
        std::fs::read_to_string(scratch.settings_path()).expect("settings"),
        SETTINGS,
        "uninstall restores the original"
    );
    let _ = std::fs::remove_file(&first_turn);
    let _ = std::fs::remove_file(&debrief);
}
