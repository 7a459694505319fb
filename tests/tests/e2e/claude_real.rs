//! The real Claude Code 2.1.332 against the Messages stand-in, then `baton-hook usage`: Baton
//! must report exactly the usage the stand-in issued for the requests Claude Code wrote to the
//! transcript, split by token kind, by model and by agent.
//!
//! What 2.1.332 does with each request of the scenario (observed; see the session test):
//! * main turns and the subagent's requests: one assistant line per content block, each with the
//!   response's final usage (main file; `subagents/agent-<id>.jsonl`) — **counted**;
//! * the compaction summary request of `/compact`: no assistant line and no `agent-acompact-*`
//!   file, its usage reaches only the cumulative `cost-state` line — **excluded** from the
//!   expected tokens (Baton reads usage from assistant lines), so the session's client cost
//!   (`clientCostUsd`, from `cost-state`) is higher than Baton's own by exactly that request;
//! * side calls (title generation, token counting, non-streamed helpers): none are made in
//!   print mode, only a `HEAD /api/hello` reachability probe per process, which issues no
//!   usage; the test fails if any other appears, so a new one gets looked at before it is
//!   counted or excluded.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use baton_tests::hook::usage_report;
use baton_tests::messages_standin::{Caller, Issued, MessagesStandIn, Reply, Script, Usage};
use serde_json::Value;
use tokio::process::Command;

use crate::token_kinds::{Kinds, assert_activity_span, assert_close, assert_tokens};

const CLAUDE_VERSION: &str = "2.1.332";
const MAIN_MODEL: &str = "claude-opus-5-5";
/// What Claude Code 2.1.332 resolves the subagent's `model: "haiku"` to.
const SUBAGENT_MODEL: &str = "claude-haiku-5-5";
const SUBAGENT_DESCRIPTION: &str = "Count the files";

#[tokio::test]
async fn usage_session_reports_exactly_the_tokens_claude_code_recorded_by_kind_and_model() {
    let scenario = Scenario::run().await;
    let recorded = scenario.recorded();

    let session = scenario.scratch.usage(&["session"]).await;
    let rows = session["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "one session in the scratch home: {session}");
    let row = &rows[0];
    assert_eq!(row["sessionId"], scenario.session_id.as_str());
    assert_eq!(row["harness"], "claude-code");
    assert_eq!(row["project"], scenario.project_slug());
    assert_eq!(row["versions"], serde_json::json!([CLAUDE_VERSION]));
    assert_eq!(
        row["outputUnderReported"], false,
        "2.1.332 writes final usage"
    );
    assert_activity_span(row);
    assert_tokens(&row["tokens"], sum(recorded.iter()), "session");
    assert_tokens(&session["totals"]["tokens"], sum(recorded.iter()), "totals");
    assert_eq!(row["unpricedTokens"], 0);
    assert_close(
        row["costUsd"].as_f64().expect("costUsd"),
        cost_of(recorded.iter()),
        "session cost",
    );
    // The client's figure counts the compaction request too, which is why it is the higher one.
    assert_close(
        row["clientCostUsd"]
            .as_f64()
            .expect("clientCostUsd from cost-state"),
        scenario.client_cost,
        "client cost is Claude Code's last cost-state",
    );
    assert_eq!(session["malformedLines"], 0);
    let models = row["models"].as_array().expect("models");
    assert_eq!(models.len(), 2, "main and subagent models: {models:?}");
    for model in [MAIN_MODEL, SUBAGENT_MODEL] {
        let entry = models
            .iter()
            .find(|entry| entry["model"] == model)
            .unwrap_or_else(|| panic!("{model} in {models:?}"));
        let of_model = || recorded.iter().filter(|r| r.model == model);
        assert_tokens(&entry["tokens"], sum(of_model()), model);
        assert_close(
            entry["costUsd"].as_f64().expect("costUsd"),
            cost_of(of_model()),
            model,
        );
    }
}

#[tokio::test]
async fn usage_tree_splits_the_recorded_tokens_between_main_and_its_subagent() {
    let scenario = Scenario::run().await;
    let recorded = scenario.recorded();
    let of_caller = |caller: Caller| sum(recorded.iter().filter(|r| r.caller == caller));
    let (main_usage, subagent_usage) = (of_caller(Caller::Main), of_caller(Caller::Subagent));

    let tree = scenario
        .scratch
        .usage(&["tree", &scenario.session_id])
        .await;
    assert_eq!(tree["report"], "tree");
    assert_eq!(tree["sessionId"], scenario.session_id.as_str());
    let agents = tree["agents"].as_array().expect("agents");
    assert_eq!(
        agents.len(),
        2,
        "main and one subagent; no compaction agent, as 2.1.332 records none: {agents:?}"
    );
    let main = agent(agents, "main");
    assert_eq!(main["kind"], "main");
    assert_eq!(main["parentAgentId"], Value::Null);
    assert_eq!(main["model"], MAIN_MODEL);
    assert_tokens(&main["tokens"], main_usage, "main agent");
    let mut everything = main_usage;
    everything.add(&subagent_usage);
    assert_tokens(&main["rolledUp"]["tokens"], everything, "main rolled up");
    assert_close(
        main["rolledUp"]["costUsd"]
            .as_f64()
            .expect("rolled-up cost"),
        cost_of(recorded.iter()),
        "rolled-up cost",
    );
    let subagent = agent(agents, &scenario.subagent_id);
    assert_eq!(subagent["kind"], "subagent");
    assert_eq!(subagent["parentAgentId"], "main");
    assert_eq!(subagent["subagentType"], "general-purpose");
    assert_eq!(subagent["description"], SUBAGENT_DESCRIPTION);
    assert_eq!(subagent["model"], SUBAGENT_MODEL);
    assert_tokens(&subagent["tokens"], subagent_usage, "subagent");
    assert_tokens(
        &subagent["rolledUp"]["tokens"],
        subagent_usage,
        "subagent rolled up",
    );
}

/// One session driven through the real binary: a turn that delegates to a subagent, a resumed
/// turn, `/compact`, and a turn after it. Checks on the way that Claude Code made exactly the
/// requests the expectations account for.
struct Scenario {
    standin: MessagesStandIn,
    scratch: Scratch,
    session_id: String,
    /// The subagent's id, from the header on its requests.
    subagent_id: String,
    /// Claude Code's own cumulative cost of the session (its last result, = its last
    /// cost-state line).
    client_cost: f64,
}

impl Scenario {
    async fn run() -> Scenario {
        // Before any scratch folder exists, so a missing binary leaves nothing behind.
        claude_binary();
        let standin = MessagesStandIn::start(script()).await;
        let scratch = Scratch::new();
        let first = scratch
            .claude(&standin, &["-p", "Count the files here, with a subagent."])
            .await;
        let session_id = first["session_id"]
            .as_str()
            .expect("session_id")
            .to_string();
        let mut last = first;
        for prompt in ["Thanks. Anything else?", "/compact", "One more question."] {
            last = scratch
                .claude(&standin, &["-p", prompt, "--resume", &session_id])
                .await;
            assert_eq!(
                last["session_id"],
                session_id.as_str(),
                "--resume kept the session"
            );
        }

        let issued = standin.issued();
        let callers: Vec<Caller> = issued.iter().map(|response| response.caller).collect();
        assert_eq!(
            callers,
            [
                Caller::Main,
                Caller::Subagent,
                Caller::Main,
                Caller::Main,
                Caller::Compaction,
                Caller::Main
            ],
            "Claude Code {CLAUDE_VERSION} made the requests this test accounts for: {:?}",
            standin.requests()
        );
        // Besides the Messages calls, only the reachability probe each process makes.
        let others: Vec<_> = standin
            .requests()
            .into_iter()
            .filter(|request| request.caller.is_none())
            .collect();
        assert!(
            others
                .iter()
                .all(|request| request.method == "HEAD" && request.path == "/api/hello"),
            "no token counting or other endpoint was called: {others:?}"
        );
        let client_cost = last["total_cost_usd"].as_f64().expect("total_cost_usd");
        assert_close(
            cost_of(issued.iter()),
            client_cost,
            "the test's price table reproduces Claude Code's own cost of every issued response",
        );
        let subagent_id = issued
            .iter()
            .find_map(|response| response.agent_id.clone())
            .expect("the subagent's requests name it");
        let sidecar = scratch
            .only_project()
            .join(&session_id)
            .join("subagents")
            .join(format!("agent-{subagent_id}.jsonl"));
        assert!(
            sidecar.is_file(),
            "the subagent's transcript is at {}",
            sidecar.display()
        );
        Scenario {
            standin,
            scratch,
            session_id,
            subagent_id,
            client_cost,
        }
    }

    /// The responses Claude Code wrote to assistant lines: main and subagent, not compaction
    /// (see the module comment).
    fn recorded(&self) -> Vec<Issued> {
        self.standin
            .issued()
            .into_iter()
            .filter(|response| matches!(response.caller, Caller::Main | Caller::Subagent))
            .collect()
    }

    /// The project folder's name, as Claude Code derived it from the working directory.
    fn project_slug(&self) -> String {
        let project = self.scratch.only_project();
        let name = project.file_name().and_then(|name| name.to_str());
        name.expect("slug").to_string()
    }
}

/// Main: delegate (text + Agent call), answer the hand-back, think then answer, answer again.
/// The two-block replies make Claude Code write two assistant lines with one usage.
fn script() -> Script {
    Script {
        main: vec![
            Reply::Spawn {
                subagent_type: "general-purpose".to_string(),
                description: SUBAGENT_DESCRIPTION.to_string(),
                prompt: "Count the files in this folder.".to_string(),
                model: Some("haiku".to_string()),
            },
            Reply::Text("The subagent found no files.".to_string()),
            Reply::ThinkThenText {
                thinking: "Nothing else was asked.".to_string(),
                text: "Nothing else to do.".to_string(),
            },
            Reply::Text("Still no files.".to_string()),
        ],
        subagent: vec![Reply::Text("There are no files.".to_string())],
    }
}

/// Where `scripts/install-harnesses.sh` puts Claude Code, unless `BATON_TEST_CLAUDE` names it.
pub(crate) fn claude_binary() -> PathBuf {
    let path = std::env::var_os("BATON_TEST_CLAUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let harnesses = std::env::var_os("BATON_HARNESS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/baton-harness"));
            harnesses.join("node_modules/@anthropic-ai/claude-code-linux-x64/claude")
        });
    assert!(
        path.is_file(),
        "Claude Code {CLAUDE_VERSION} is missing at {}: run scripts/install-harnesses.sh \
         (or point BATON_TEST_CLAUDE at the binary)",
        path.display()
    );
    path
}

/// A home, a project folder and a settings file of the test's own; kept when the test fails,
/// so the transcripts can be read.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-claude-real-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(root.join("home")).expect("scratch home");
        std::fs::create_dir_all(root.join("project")).expect("scratch project");
        // Empty settings: no hooks, nothing from the machine's own ~/.claude.
        std::fs::write(root.join("settings.json"), "{}").expect("settings");
        Scratch { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Runs `claude ARGS --output-format json` in print mode and returns its result object.
    async fn claude(&self, standin: &MessagesStandIn, args: &[&str]) -> Value {
        let settings = self.root.join("settings.json");
        let mut command = Command::new(claude_binary());
        command
            .args(args)
            .args([
                "--model",
                MAIN_MODEL,
                "--output-format",
                "json",
                "--settings",
            ])
            .arg(&settings)
            .current_dir(self.root.join("project"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("ANTHROPIC_BASE_URL", &standin.base_url)
            .env("ANTHROPIC_API_KEY", "sk-ant-standin")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("claude finished within two minutes")
            .expect("run claude");
        assert!(
            output.status.success(),
            "claude {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let result: Value = serde_json::from_slice(&output.stdout).expect("one JSON result");
        assert_eq!(result["is_error"], false, "claude {args:?}: {result}");
        result
    }

    /// The one project folder Claude Code created under `~/.claude/projects`.
    fn only_project(&self) -> PathBuf {
        let projects = self.home().join(".claude/projects");
        let entries: Vec<PathBuf> = std::fs::read_dir(&projects)
            .expect("Claude Code wrote ~/.claude/projects")
            .map(|entry| entry.expect("entry").path())
            .collect();
        assert_eq!(entries.len(), 1, "one project folder: {entries:?}");
        entries.into_iter().next().expect("project folder")
    }

    /// `baton-hook usage ARGS --json`, reading this scratch home only.
    async fn usage(&self, args: &[&str]) -> Value {
        let state = self.home().join(".baton");
        usage_report(
            args,
            &[
                ("HOME", self.home().as_path()),
                ("BATON_HOOK_HOME", state.as_path()),
            ],
        )
        .await
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("claude_real: transcripts kept in {}", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn agent<'a>(agents: &'a [Value], agent_id: &str) -> &'a Value {
    agents
        .iter()
        .find(|agent| agent["agentId"] == agent_id)
        .unwrap_or_else(|| panic!("agent {agent_id} in {agents:?}"))
}

impl From<Usage> for Kinds {
    fn from(usage: Usage) -> Kinds {
        Kinds {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write_5m: usage.cache_write_5m,
            cache_write_1h: usage.cache_write_1h,
        }
    }
}

/// The responses' usage in Baton's kinds (the Messages API counts them the same way).
fn sum<'a>(responses: impl Iterator<Item = &'a Issued>) -> Kinds {
    let mut total = Kinds::default();
    for response in responses {
        total.add(&response.usage.into());
    }
    total
}

/// USD per million tokens (input, 5m write, 1h write, cache read, output), HOOKS.md §5; prompts
/// here stay far below Haiku 5.5's 100k-token tier.
fn prices(model: &str) -> [f64; 5] {
    match model {
        "claude-opus-5-5" => [4.0, 5.0, 8.0, 0.20, 20.0],
        "claude-haiku-5-5" => [0.10, 0.125, 0.20, 0.01, 0.50],
        other => panic!("no price for {other}: add it from HOOKS.md §5"),
    }
}

fn cost_of<'a>(responses: impl Iterator<Item = &'a Issued>) -> f64 {
    responses
        .map(|response| {
            let [input, write_5m, write_1h, read, output] = prices(&response.model);
            let usage = response.usage;
            (usage.input as f64 * input
                + usage.cache_write_5m as f64 * write_5m
                + usage.cache_write_1h as f64 * write_1h
                + usage.cache_read as f64 * read
                + usage.output as f64 * output)
                / 1_000_000.0
        })
        .sum()
}
