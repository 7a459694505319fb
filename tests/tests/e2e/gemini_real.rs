//! The real Gemini CLI 0.61.0 running Baton's hooks exactly as `baton-hook install --harness
//! gemini --nudge` wrote them into its user `settings.json`, against a real Baton and the Gemini
//! API stand-in: startup opens and starts a sidecar on Gemini's own (relaunched) process with
//! its version, AfterAgent heartbeats with the turn's text and the nudge's `deny` continues the
//! turn into the debrief, SessionEnd's close arrives with no manual drain, `--resume` reopens
//! with a new episode that reads live, SIGKILL mid-turn reads `disconnected`, and uninstall
//! gives back the settings file byte for byte.

use std::path::PathBuf;

use serde_json::Value;
use tokio::process::Child;

use baton_tests::Baton;
use baton_tests::gemini_standin::{GeminiStandIn, Script};
use baton_tests::scratch::Scratch;

use crate::real_client;

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

/// A scratch home with Gemini's settings, for Gemini CLI against `standin`, its hooks
/// reporting to `baton` with `api_key`.
pub(crate) fn gemini_scratch(standin: &GeminiStandIn, baton: &Baton, api_key: &str) -> Scratch {
    let scratch = Scratch::new(
        "gemini",
        &[
            ("GEMINI_API_KEY", "standin-key"),
            ("GOOGLE_GEMINI_BASE_URL", &standin.base_url),
        ],
    )
    .reporting_to(&baton.base_url, api_key);
    std::fs::create_dir_all(scratch.home().join(".gemini")).expect("home");
    std::fs::write(scratch.settings_path(), SETTINGS).expect("settings");
    scratch
}

/// What the Gemini tests do in a scratch home.
pub(crate) trait GeminiScratch {
    /// Gemini's user `settings.json`.
    fn settings_path(&self) -> PathBuf;
    /// `gemini -m MODEL -p PROMPT --output-format json ARGS`, started in its own process group
    /// and not waited for.
    fn gemini(&self, prompt: &str, args: &[&str]) -> Child;
}

impl GeminiScratch for Scratch {
    fn settings_path(&self) -> PathBuf {
        self.home().join(".gemini/settings.json")
    }

    fn gemini(&self, prompt: &str, args: &[&str]) -> Child {
        let mut all = vec!["-m", MODEL, "-p", prompt, "--output-format", "json"];
        all.extend(args);
        self.spawn(&gemini_binary(), &all)
    }
}

/// Waits for a finished `gemini` run, checks it succeeded and reads its JSON output.
pub(crate) async fn finished(child: Child, what: &str) -> Value {
    let stdout = real_client::finished_output(child, what, "gemini").await;
    serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{what}: JSON output: {stdout}"))
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
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("gemini-hooks").await;
    let (first_turn, debrief, never) = real_client::gates();
    let standin = GeminiStandIn::start(Script {
        replies: real_client::held_turns(&first_turn, &debrief, &never),
    })
    .await;
    let scratch = gemini_scratch(&standin, &baton, &tenant.api_key);

    // Install: Baton's four entries, every other byte kept; a second install writes nothing.
    let said = scratch.user_hooks("install", &["--nudge"]).await;
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
    scratch.user_hooks("install", &["--nudge"]).await;
    assert_eq!(
        std::fs::read_to_string(scratch.settings_path()).expect("settings"),
        installed,
        "a second install changes nothing"
    );

    // Startup: SessionStart opened the row before the first model request.
    let session_id = uuid::Uuid::new_v4().to_string();
    let first = scratch.gemini("Start the work.", &["--session-id", &session_id]);
    let launcher = u64::from(first.id().expect("pid"));
    standin.until_issued(1, "Gemini CLI").await;
    let run_id = real_client::opened_run(&client, "gemini", &session_id).await;
    // The briefing reached the model inside the first prompt.
    assert!(
        standin.issued()[0].user_text.contains(&run_id),
        "the SessionStart context names the run: {}",
        standin.issued()[0].user_text
    );
    let live = real_client::first_episode_live(&client, &run_id, GEMINI_VERSION).await;
    let watched = live["episodes"][0]["pid"].as_u64().expect("pid");
    assert_eq!(
        parent_of(watched),
        Some(launcher),
        "the sidecar watches the relaunched Gemini process the launcher started"
    );
    real_client::write_attributed(&client, &run_id).await;
    std::fs::write(&first_turn, "go").expect("release turn one");
    // The turn end armed the nudge and its continuation reached the model, which holds it.
    standin.until_issued(2, "Gemini CLI").await;
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
    standin.until_issued(3, "Gemini CLI").await;
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
    scratch.user_hooks("uninstall", &[]).await;
    assert_eq!(
        std::fs::read_to_string(scratch.settings_path()).expect("settings"),
        SETTINGS,
        "uninstall restores the original"
    );
    let _ = std::fs::remove_file(&first_turn);
    let _ = std::fs::remove_file(&debrief);
}
