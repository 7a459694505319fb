//! The real Codex CLI 0.171.0 against the Responses stand-in, then `baton-hook usage`: Baton
//! must report exactly the usage the stand-in issued, converted from OpenAI's inclusive counts to
//! Baton's kinds (input = `input_tokens` − cached − cache-written; cache read = cached; 5-minute
//! write = cache-written; output = `output_tokens`, reasoning included).
//!
//! What 0.171.0 does with the scenario (observed): every `POST /v1/responses` is one response
//! and the only request made; the rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`,
//! appended to by `codex exec resume`) gets, per response, a top-level `token_usage_record` line
//! (`response_id`, `turn_id`, `usage`, `turn_token_usage`, `thread_token_usage`) followed by an
//! `event_msg` `token_count` (cumulative `total_token_usage`, `last_token_usage`); the model is
//! on each turn's `turn_context`, not on `session_meta` nor on the usage lines.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use baton_tests::hook::usage_report;
use baton_tests::responses_standin::{Issued, Reply, ResponsesStandIn, Script, Usage};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::token_kinds::{Kinds, assert_activity_span, assert_close, assert_tokens};

const CODEX_VERSION: &str = "0.171.0";
/// Has a row in `usage-model/pricing/prices.json`.
const MODEL: &str = "gpt-5.3-codex";
/// A function tool Codex 0.171.0 offers and runs itself (no sandboxed command), so a turn can
/// take two responses.
const TOOL: &str = "get_goal";
/// The provider's `env_key`: Codex wants a key in the environment, the stand-in ignores it.
const KEY_VARIABLE: &str = "STANDIN_API_KEY";

#[tokio::test]
async fn usage_session_reports_exactly_the_tokens_codex_recorded_by_kind() {
    let scenario = Scenario::run().await;
    let issued = scenario.standin.issued();
    let expected = kinds(issued.iter());

    let session = scenario.scratch.usage(&["session"]).await;
    assert_eq!(session["timezone"], "UTC");
    let rows = session["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "one session in the scratch home: {session}");
    let row = &rows[0];
    assert_eq!(row["harness"], "codex");
    assert_eq!(row["sessionId"], scenario.session_id.as_str());
    assert_tokens(&row["tokens"], expected, "session");
    assert_tokens(&session["totals"]["tokens"], expected, "totals");
    assert_eq!(
        row["requests"],
        issued.len(),
        "one record per response: {row}"
    );
    assert_eq!(row["unpricedTokens"], 0, "{MODEL} is priced: {row}");
    assert_eq!(session["totals"]["unpricedTokens"], 0);
    assert_eq!(session["unpriced"], json!([]));
    assert_close(
        row["costUsd"].as_f64().expect("costUsd"),
        cost(expected),
        "session cost",
    );
    assert_eq!(session["malformedLines"], 0);
    assert_activity_span(row);
    let models = row["models"].as_array().expect("models");
    assert_eq!(models.len(), 1, "one model: {models:?}");
    assert_eq!(models[0]["model"], MODEL);
    assert_tokens(&models[0]["tokens"], expected, MODEL);
    assert_eq!(models[0]["unpricedTokens"], 0);
}

/// One session driven through the real binary: a turn, a resumed turn in which the model calls
/// a tool (two responses in one turn), and another resumed turn. Checks on the way that Codex
/// made exactly the requests the expectations account for and wrote one usage record per
/// response.
struct Scenario {
    standin: ResponsesStandIn,
    scratch: Scratch,
    session_id: String,
}

impl Scenario {
    async fn run() -> Scenario {
        // Before any scratch folder exists, so a missing binary leaves nothing behind.
        codex_binary();
        let standin = ResponsesStandIn::start(script()).await;
        let scratch = Scratch::new(&standin);
        let first = scratch.codex(&["Say hello."]).await;
        let session_id = first
            .thread_id
            .clone()
            .expect("thread.started names the thread");
        let mut last = first;
        for prompt in [
            format!("Look at the goal with {TOOL}."),
            "Thanks.".to_string(),
        ] {
            last = scratch.codex(&["resume", &session_id, &prompt]).await;
            assert_eq!(
                last.thread_id.as_deref(),
                Some(session_id.as_str()),
                "resume kept the session"
            );
        }

        let issued = standin.issued();
        let requests = standin.requests();
        assert!(
            requests
                .iter()
                .all(|request| request.streamed && request.path == "/v1/responses"),
            "Codex {CODEX_VERSION} called only the Responses endpoint: {requests:?}"
        );
        let turns: Vec<_> = issued.iter().map(|response| &response.turn_id).collect();
        let called: Vec<_> = issued
            .iter()
            .map(|response| response.called.as_deref())
            .collect();
        assert_eq!(
            called,
            [None, Some(TOOL), None, None],
            "Codex {CODEX_VERSION} offered {TOOL} and made one request per turn plus one after \
             the tool ran: {issued:?}"
        );
        assert!(
            turns.iter().all(|turn| turn.is_some())
                && turns[1] == turns[2]
                && turns[0] != turns[1]
                && turns[3] != turns[1]
                && turns[3] != turns[0],
            "three turns, the second with two responses: {turns:?}"
        );
        assert!(
            issued.iter().all(|response| response.session_id.as_deref()
                == Some(session_id.as_str())
                && response.model == MODEL),
            "every request names the session and {MODEL}: {issued:?}"
        );
        // Codex's own figure: `turn.completed` carries the thread's cumulative usage.
        let mut wire = Usage::default();
        for response in &issued {
            wire.add(&response.usage);
        }
        assert_eq!(
            last.usage,
            Some(json!({
                "input_tokens": wire.input_tokens,
                "cached_input_tokens": wire.cached_tokens,
                "cache_write_input_tokens": wire.cache_write_tokens,
                "output_tokens": wire.output_tokens,
                "reasoning_output_tokens": wire.reasoning_tokens,
            })),
            "Codex counted what the stand-in issued"
        );

        let rollout = scratch.only_rollout();
        let name = rollout.file_name().and_then(|name| name.to_str());
        assert!(
            name.is_some_and(|name| name.starts_with("rollout-") && name.contains(&session_id)),
            "the rollout is named after the session: {}",
            rollout.display()
        );
        let records = usage_records(&rollout);
        let ids: Vec<&str> = issued
            .iter()
            .map(|response| response.response_id.as_str())
            .collect();
        assert_eq!(
            records
                .iter()
                .map(|record| record["response_id"].as_str().unwrap_or(""))
                .collect::<Vec<_>>(),
            ids,
            "one top-level token_usage_record per response, in order"
        );
        for (record, response) in records.iter().zip(&issued) {
            assert_eq!(record["turn_id"].as_str(), response.turn_id.as_deref());
            assert_eq!(
                record["usage"]["cache_write_input_tokens"], response.usage.cache_write_tokens,
                "token_usage_record usage has cache writes: {record}"
            );
        }
        Scenario {
            standin,
            scratch,
            session_id,
        }
    }
}

/// A message; a tool call and the message after it; a message.
fn script() -> Script {
    Script {
        replies: vec![
            Reply::Text("Hello.".to_string()),
            Reply::Call {
                name: TOOL.to_string(),
                arguments: json!({}),
            },
            Reply::Text("There is no goal.".to_string()),
            Reply::Text("You are welcome.".to_string()),
        ],
    }
}

/// The payloads of the rollout's top-level `token_usage_record` lines.
fn usage_records(rollout: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(rollout).expect("read the rollout");
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("rollout lines are JSON"))
        .filter(|line| line["type"] == "token_usage_record")
        .map(|line| line["payload"].clone())
        .collect()
}

/// Where `scripts/install-harnesses.sh` puts Codex's native binary, unless `BATON_TEST_CODEX`
/// names it.
fn codex_binary() -> PathBuf {
    let path = std::env::var_os("BATON_TEST_CODEX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let harnesses = std::env::var_os("BATON_HARNESS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/baton-harness"));
            let (package, triple) = match std::env::consts::ARCH {
                "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
                _ => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
            };
            harnesses
                .join("node_modules/@openai")
                .join(package)
                .join("vendor")
                .join(triple)
                .join("bin/codex")
        });
    assert!(
        path.is_file(),
        "Codex {CODEX_VERSION} is missing at {}: run scripts/install-harnesses.sh \
         (or point BATON_TEST_CODEX at the binary)",
        path.display()
    );
    path
}

/// What one `codex exec --json` printed that the test uses.
struct Exec {
    /// From `thread.started`.
    thread_id: Option<String>,
    /// From the last `turn.completed`.
    usage: Option<Value>,
}

/// A home, a Codex home with the stand-in as provider, and a project folder of the test's own;
/// kept when the test fails, so the rollout can be read.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(standin: &ResponsesStandIn) -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-codex-real-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let scratch = Scratch { root };
        std::fs::create_dir_all(scratch.codex_home()).expect("scratch codex home");
        std::fs::create_dir_all(scratch.root.join("project")).expect("scratch project");
        // No hooks, plugins or apps: nothing reaches past the stand-in (with them on, 0.171.0
        // looks up github.com and chatgpt.com). No retries: each request is one response.
        let config = format!(
            r#"model = "{MODEL}"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
hooks = false
plugins = false
remote_plugin = false
apps = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{KEY_VARIABLE}"
request_max_retries = 0
stream_max_retries = 0
"#,
            base_url = standin.base_url
        );
        std::fs::write(scratch.codex_home().join("config.toml"), config).expect("config.toml");
        scratch
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn codex_home(&self) -> PathBuf {
        self.home().join(".codex")
    }

    /// Runs `codex exec --json ARGS` in the project folder.
    async fn codex(&self, args: &[&str]) -> Exec {
        let mut command = Command::new(codex_binary());
        command
            .args(["exec", "--json", "--skip-git-repo-check", "--strict-config"])
            .args(args)
            .current_dir(self.root.join("project"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("CODEX_HOME", self.codex_home())
            .env(KEY_VARIABLE, "sk-standin")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("codex finished within two minutes")
            .expect("run codex");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "codex exec {args:?} failed: {stdout}\n{stderr}"
        );
        let mut exec = Exec {
            thread_id: None,
            usage: None,
        };
        for line in stdout.lines() {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|_| panic!("codex exec --json printed a non-JSON line: {line}"));
            match event["type"].as_str() {
                Some("thread.started") => {
                    exec.thread_id = event["thread_id"].as_str().map(str::to_string);
                }
                Some("turn.completed") => exec.usage = Some(event["usage"].clone()),
                Some("turn.failed" | "error") => {
                    panic!("codex exec {args:?}: {line}\n{stderr}")
                }
                _ => {}
            }
        }
        assert!(
            exec.usage.is_some(),
            "codex exec {args:?} completed a turn: {stdout}\n{stderr}"
        );
        exec
    }

    /// The one rollout Codex wrote under `$CODEX_HOME/sessions/YYYY/MM/DD`.
    fn only_rollout(&self) -> PathBuf {
        let mut found = Vec::new();
        let mut folders = vec![self.codex_home().join("sessions")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).expect("Codex wrote $CODEX_HOME/sessions") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    found.push(path);
                }
            }
        }
        assert_eq!(found.len(), 1, "one rollout: {found:?}");
        found.into_iter().next().expect("rollout")
    }

    /// `baton-hook usage ARGS --json --timezone UTC`, reading this scratch home only.
    async fn usage(&self, args: &[&str]) -> Value {
        let mut with_zone = args.to_vec();
        with_zone.extend(["--timezone", "UTC"]);
        let state = self.home().join(".baton");
        let codex_home = self.codex_home();
        usage_report(
            &with_zone,
            &[
                ("HOME", self.home().as_path()),
                ("CODEX_HOME", codex_home.as_path()),
                ("BATON_HOOK_HOME", state.as_path()),
            ],
        )
        .await
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("codex_real: rollout kept in {}", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The issued usage in Baton's kinds: OpenAI's `input_tokens` include cached and cache-written
/// input; OpenAI has one cache-write kind, counted as 5-minute writes.
fn kinds<'a>(responses: impl Iterator<Item = &'a Issued>) -> Kinds {
    let mut total = Kinds::default();
    for response in responses {
        let usage = response.usage;
        total.input += usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens;
        total.output += usage.output_tokens;
        total.cache_read += usage.cached_tokens;
        total.cache_write_5m += usage.cache_write_tokens;
    }
    total
}

/// USD of the kinds at `gpt-5.3-codex`'s row in `prices.json` (per million: input 1.75, cache
/// read 0.175, cache writes at the input rate, output 14).
fn cost(tokens: Kinds) -> f64 {
    (tokens.input as f64 * 1.75
        + tokens.cache_read as f64 * 0.175
        + (tokens.cache_write_5m + tokens.cache_write_1h) as f64 * 1.75
        + tokens.output as f64 * 14.0)
        / 1_000_000.0
}
