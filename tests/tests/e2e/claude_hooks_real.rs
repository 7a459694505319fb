//! The real Claude Code 2.1.332 running Baton's hooks exactly as `baton-hook install` wrote
//! them into its user settings, against a real Baton and the Messages stand-in: startup opens
//! and starts a sidecar on Claude's own process, Stop heartbeats and the nudge's `block`
//! continues the turn into the debrief, SessionEnd's close arrives with no manual drain,
//! `--resume` reopens with a new episode that reads live, and SIGKILL mid-turn reads
//! `disconnected`.

use std::time::{Duration, Instant};

use tokio::process::Child;

use baton_tests::Baton;
use baton_tests::messages_standin::{Caller, MessagesStandIn, Reply, Script};
use baton_tests::scratch::Scratch;

use crate::claude_real::claude_binary;
use crate::real_client;

const MODEL: &str = "claude-opus-5-5";

/// A scratch home for Claude Code against `standin`, its hooks reporting to `baton` with
/// `api_key`.
pub(crate) fn claude_scratch(baton: &Baton, api_key: &str, standin: &MessagesStandIn) -> Scratch {
    Scratch::new(
        "claude-code",
        &[
            ("ANTHROPIC_BASE_URL", &standin.base_url),
            ("ANTHROPIC_API_KEY", "sk-ant-standin"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
        ],
    )
    .reporting_to(&baton.base_url, api_key)
}

/// What the Claude Code hook tests do in a scratch home.
pub(crate) trait ClaudeScratch {
    /// `baton-hook install --harness claude-code --scope user`, which writes the settings.
    async fn install(&self);
    /// `claude -p PROMPT ARGS`, started in its own process group and not waited for.
    fn claude(&self, prompt: &str, args: &[&str]) -> Child;
}

impl ClaudeScratch for Scratch {
    async fn install(&self) {
        self.user_hooks("install", &[]).await;
        let settings = std::fs::read_to_string(self.home().join(".claude/settings.json"))
            .expect("installed settings");
        assert!(settings.contains("baton-hook"), "{settings}");
    }

    fn claude(&self, prompt: &str, args: &[&str]) -> Child {
        let mut all = vec!["-p", prompt, "--model", MODEL, "--output-format", "json"];
        all.extend(args);
        self.spawn(&claude_binary(), &all)
    }
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
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("claude-hooks").await;
    let (first_turn, _, never) = real_client::gates();
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
    let scratch = claude_scratch(&baton, &tenant.api_key, &standin);
    scratch.install().await;
    let session_id = uuid::Uuid::new_v4().to_string();

    // Startup: SessionStart opened the row before the first model request.
    let first = scratch.claude("Start the work.", &["--session-id", &session_id]);
    let claude_pid = first.id().expect("pid");
    main_requests(&standin, 1).await;
    let run_id = real_client::opened_run(&client, "claude-code", &session_id).await;
    let live = real_client::first_episode_live(&client, &run_id, "2.1.332").await;
    assert_eq!(
        live["episodes"][0]["pid"], claude_pid,
        "the sidecar watches Claude itself"
    );
    real_client::write_attributed(&client, &run_id).await;
    std::fs::write(&first_turn, "go").expect("release turn one");

    // Stop armed the nudge; its block continued the turn with the debrief words.
    real_client::finished_output(first, "first run", "claude").await;
    let continued = standin
        .requests()
        .into_iter()
        .filter(|request| request.caller == Some(Caller::Main))
        .nth(1)
        .expect("a second main request: the continuation");
    real_client::assert_debrief_prompt(&continued.user_text);
    // SessionEnd only spooled; the close arrives with no drain by hand. The continuation's
    // Stop (stop_hook_active) finalized the attempt; nothing was written during the debrief,
    // so it lands expired (the closer still debriefs the session).
    let epoch = real_client::until_closed_after_debrief(&client, &run_id).await;

    // --resume: a new process reopens the row; read at once, it is live.
    let second = scratch.claude("Carry on.", &["--resume", &session_id]);
    let second_pid = second.id().expect("pid");
    main_requests(&standin, 3).await;
    let resumed = real_client::resumed_episode(&client, &run_id, epoch, |episode| {
        episode["pid"] == second_pid
    })
    .await;

    // SIGKILL mid-turn: no SessionEnd; the sidecar reports the exit.
    real_client::kill_and_see_disconnected(&client, &run_id, second, second_pid, &resumed["pid"])
        .await;
    let _ = std::fs::remove_file(&first_turn);
}
