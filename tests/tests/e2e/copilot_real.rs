//! The real GitHub Copilot CLI 1.0.102, in its bring-your-own-key mode against the Chat
//! Completions stand-in (`COPILOT_OFFLINE=true`: no GitHub sign-in, no network), running
//! Baton's hooks exactly as `baton-hook install --harness copilot` wrote them into its own user
//! hooks file: startup opens and starts a sidecar on the native `copilot` process with its
//! version, agentStop heartbeats and the nudge's `block` continues the turn into the debrief,
//! sessionEnd's close arrives with no manual drain, `--resume` reopens with a new episode that
//! reads live, SIGKILL mid-turn reads `disconnected`, and uninstall removes the file it made.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Child;

use baton_tests::Baton;
use baton_tests::chat_standin::{ChatStandIn, Reply, Script};
use baton_tests::poll::{liveness, until};
use baton_tests::scratch::Scratch;

use crate::real_client;

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

/// A scratch home for Copilot CLI in its bring-your-own-key mode against `standin`, its hooks
/// reporting to `baton` with `api_key`.
pub(crate) fn copilot_scratch(standin: &ChatStandIn, baton: &Baton, api_key: &str) -> Scratch {
    Scratch::new(
        "copilot",
        &[
            ("COPILOT_OFFLINE", "true"),
            ("COPILOT_PROVIDER_BASE_URL", &standin.base_url),
            ("COPILOT_MODEL", MODEL),
            ("COPILOT_AUTO_UPDATE", "false"),
        ],
    )
    .reporting_to(&baton.base_url, api_key)
}

/// What the Copilot tests do in a scratch home.
pub(crate) trait CopilotScratch {
    /// The last `lines` lines of Copilot's newest process log (`~/.copilot/logs`), for a
    /// failure message: what the client itself was doing.
    fn log_tail(&self, lines: usize) -> String;
    /// The user hooks file `baton-hook install` writes.
    fn hooks_file(&self) -> PathBuf;
    /// `baton-hook install --harness claude-code --scope project` in the project folder: the
    /// repository's Claude Code settings, which Copilot CLI also runs.
    async fn install_claude_settings(&self);
    /// `copilot -p PROMPT --allow-all-tools ARGS`, started in its own process group and not
    /// waited for.
    fn copilot(&self, prompt: &str, args: &[&str]) -> Child;
}

impl CopilotScratch for Scratch {
    fn log_tail(&self, lines: usize) -> String {
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

    fn hooks_file(&self) -> PathBuf {
        self.home().join(".copilot/hooks/baton.json")
    }

    async fn install_claude_settings(&self) {
        self.baton_hook(&["install", "--harness", "claude-code", "--scope", "project"])
            .await;
        assert!(self.root.join("project/.claude/settings.json").is_file());
    }

    fn copilot(&self, prompt: &str, args: &[&str]) -> Child {
        let mut all = vec!["-p", prompt, "--allow-all-tools"];
        all.extend(args);
        self.spawn(&copilot_binary(), &all)
    }
}

/// Waits for a finished `copilot` run and checks it succeeded.
pub(crate) async fn finished(child: Child, what: &str) {
    real_client::finished_output(child, what, "copilot").await;
}

#[tokio::test]
async fn copilot_cli_runs_the_installed_hooks_from_startup_to_a_sigkill_mid_turn() {
    copilot_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("copilot-hooks").await;
    let (first_turn, debrief, never) = real_client::gates();
    let standin = ChatStandIn::start(Script {
        replies: real_client::held_turns(&first_turn, &debrief, &never),
    })
    .await;
    let scratch = copilot_scratch(&standin, &baton, &tenant.api_key);

    // Install: a hooks file of Baton's own; a second install writes nothing.
    let said = scratch.user_hooks("install", &[]).await;
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
    scratch.user_hooks("install", &[]).await;
    assert_eq!(
        std::fs::read_to_string(scratch.hooks_file()).expect("hooks file"),
        installed,
        "a second install changes nothing"
    );

    // Startup: sessionStart opened the row before the first model request.
    let session_id = uuid::Uuid::new_v4().to_string();
    let first = scratch.copilot("Start the work.", &["--session-id", &session_id]);
    let copilot_pid = first.id().expect("pid");
    standin.until_issued(1, "Copilot CLI").await;
    let run_id = real_client::opened_run(&client, "copilot", &session_id).await;
    // The briefing reached the model as a user message of its own.
    assert!(
        standin.issued()[0].all_user_text.contains(&run_id),
        "the sessionStart context names the run: {}",
        standin.issued()[0].all_user_text
    );
    let live = real_client::first_episode_live(&client, &run_id, COPILOT_VERSION).await;
    assert_eq!(
        live["episodes"][0]["pid"], copilot_pid,
        "the sidecar watches the native copilot process"
    );
    real_client::write_attributed(&client, &run_id).await;
    std::fs::write(&first_turn, "go").expect("release turn one");
    // The turn end armed the nudge and its continuation reached the model, which holds it.
    standin.until_issued(2, "Copilot CLI").await;
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
    standin.until_issued(3, "Copilot CLI").await;
    let resumed = real_client::resumed_episode(&client, &run_id, epoch, |episode| {
        episode["pid"] == second_pid
    })
    .await;
    // SIGKILL mid-turn: no sessionEnd; the sidecar reports the exit.
    real_client::kill_and_see_disconnected(&client, &run_id, second, second_pid, &resumed["pid"])
        .await;

    // Uninstall: the file install made is gone.
    scratch.user_hooks("uninstall", &[]).await;
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
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("copilot-hosted").await;
    let standin = ChatStandIn::start(Script {
        replies: vec![Reply::Text("Hello.".to_string())],
    })
    .await;
    let scratch = copilot_scratch(&standin, &baton, &tenant.api_key);
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
