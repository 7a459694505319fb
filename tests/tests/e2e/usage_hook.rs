//! The hook feeds the usage context: `baton-hook ingest` over the fixture transcripts, against
//! a recording stand-in of `POST /api/v1/usage/batches` (the usage service is built alongside;
//! these tests assert exactly what the hook sends).

use std::path::{Path, PathBuf};

use baton_tests::hook::HookHome;
use baton_tests::usage_recorder::{Upload, UsageRecorder};
use baton_transcripts::{Options, Roots};
use serde_json::Value;

const SPOTTER: &str = "claude-code/transcripts/spotter";
const SESSION: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";
const KEY: &str = "bk_usage_hook_test";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures")
}

/// Lays the fixture transcripts out under the hook home's `~/.claude` and `~/.codex`.
fn lay_out(home: &Path) {
    let copy = |fixture: &str, target: &str| {
        let to = home.join(target);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(fixtures().join(fixture), to).expect("copy");
    };
    let projects = ".claude/projects";
    copy(
        &format!("{SPOTTER}/{SESSION}.jsonl"),
        &format!("{projects}/-spotter/{SESSION}.jsonl"),
    );
    for agent in ["agent-a93ccab", "agent-aa84377", "agent-acompact-70d8e7"] {
        copy(
            &format!("{SPOTTER}/{SESSION}/subagents/{agent}.jsonl"),
            &format!("{projects}/-spotter/{SESSION}/subagents/{agent}.jsonl"),
        );
    }
    copy(
        &format!("{SPOTTER}/short.jsonl"),
        &format!("{projects}/-spotter/short.jsonl"),
    );
    for name in ["4c_02af2759b6_0_full.jsonl", "73_7e6e3ea2ad_0_full.jsonl"] {
        copy(
            &format!("claude-code/transcripts/entire-checkpoints/{name}"),
            &format!("{projects}/-entire/{name}"),
        );
    }
    let rollout = "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
    copy(
        &format!("codex/rollouts/madshn-localpush/{rollout}"),
        &format!(".codex/sessions/2026/02/23/{rollout}"),
    );
}

fn library_total(home: &Path) -> (usize, u64) {
    let roots = Roots {
        claude: vec![home.join(".claude/projects")],
        codex: vec![home.join(".codex/sessions")],
    };
    let corpus = baton_transcripts::scan(&roots, &Options::default(), &|_| {}).expect("scan");
    let tokens = corpus.records.iter().map(|r| r.tokens.total()).sum();
    (corpus.records.len(), tokens)
}

fn rows(uploads: &[Upload]) -> Vec<Value> {
    uploads
        .iter()
        .flat_map(|u| u.body["usage"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn row_total(row: &Value) -> u64 {
    ["input", "output", "cacheRead", "cacheWrite5m", "cacheWrite1h"]
        .iter()
        .map(|k| row[k].as_u64().expect("count"))
        .sum()
}

async fn ingest(home: &HookHome) -> (Option<i32>, Value, String) {
    let run = home.run(&["ingest", "--json"], &Value::Null).await;
    let summary = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
    (run.code, summary, run.stderr)
}

#[tokio::test]
async fn ingest_backfills_identifiers_and_counts_then_sends_only_what_is_new() {
    let server = UsageRecorder::start().await;
    let home = HookHome::new(&server.url, KEY);
    lay_out(&home.home);
    let (records, tokens) = library_total(&home.home);

    let (code, summary, stderr) = ingest(&home).await;
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert!(stderr.is_empty(), "no progress bar off a terminal: {stderr}");
    let uploads = server.uploads();
    assert!(!uploads.is_empty());
    for upload in &uploads {
        assert_eq!(upload.path, "/api/v1/usage/batches");
        assert_eq!(upload.api_key.as_deref(), Some(KEY));
        assert!(upload.body["hostId"].as_str().is_some_and(|h| h.starts_with("h-")));
        for field in ["description", "prompt", "content", "cwd", "transcriptPath", "message"] {
            assert!(!upload.raw.contains(&format!("\"{field}\"")), "{field} sent");
        }
        assert!(!upload.raw.contains("/redacted/"), "a path was sent");
    }
    let sent = rows(&uploads);
    assert_eq!(sent.len(), records, "every deduplicated request once");
    assert_eq!(sent.iter().map(row_total).sum::<u64>(), tokens);
    assert_eq!(summary["rowsSent"], records as u64);
    assert_eq!(summary["nothingNew"], false);
    let agents: Vec<Value> = uploads
        .iter()
        .flat_map(|u| u.body["agents"].as_array().cloned().unwrap_or_default())
        .collect();
    let main = agents
        .iter()
        .find(|a| a["sessionId"] == SESSION && a["kind"] == "main")
        .expect("main agent");
    assert!(main.get("agentId").is_none(), "the main agent has no agentId");
    let explore = agents
        .iter()
        .find(|a| a["agentId"] == "a93ccab")
        .expect("explore agent");
    assert_eq!(explore["ended"], "completed");
    assert!(explore["endedAt"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(explore["subagentType"], "Explore");

    // A second run on unchanged files sends nothing.
    server.clear();
    let (code, summary, _) = ingest(&home).await;
    assert_eq!(code, Some(0));
    assert!(server.uploads().is_empty(), "nothing re-sent");
    assert_eq!(summary["nothingNew"], true);
    assert_eq!(summary["rowsUnchanged"], records as u64);
    let text = home.run(&["ingest"], &Value::Null).await;
    assert!(text.stdout.starts_with("nothing new"), "{}", text.stdout);

    // A request appended to one transcript: only it, with its session's changed facts.
    let line = r#"{"type":"assistant","sessionId":"fa812bfe-b295-4cca-9c2f-fdf01028cb46","requestId":"req_appended","timestamp":"2026-02-12T18:00:00.000Z","message":{"id":"msg_appended","model":"claude-opus-4-6","content":[{"type":"text","text":"secret words"}],"usage":{"input_tokens":7,"output_tokens":3}}}"#;
    let main_file = home
        .home
        .join(format!(".claude/projects/-spotter/{SESSION}.jsonl"));
    let mut text = std::fs::read_to_string(&main_file).expect("read");
    text.push_str(line);
    text.push('\n');
    std::fs::write(&main_file, text).expect("append");
    server.clear();
    let (code, summary, _) = ingest(&home).await;
    assert_eq!(code, Some(0), "{summary}");
    let uploads = server.uploads();
    let sent = rows(&uploads);
    assert_eq!(sent.len(), 1, "only the new request");
    assert_eq!(sent[0]["dedupKey"], "msg_appended:req_appended");
    assert_eq!(row_total(&sent[0]), 10);
    assert!(!uploads.iter().any(|u| u.raw.contains("secret words")));
    let sessions: Vec<&Value> = uploads
        .iter()
        .flat_map(|u| u.body["sessions"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(sessions.len(), 1, "only the changed session's facts");
    assert_eq!(sessions[0]["sessionId"], SESSION);
}

#[tokio::test]
async fn a_refusal_is_reported_with_its_code_and_sent_again_next_time() {
    let server = UsageRecorder::start().await;
    let home = HookHome::new(&server.url, KEY);
    lay_out(&home.home);
    server.answer_with(400);
    let (code, summary, _) = ingest(&home).await;
    assert_eq!(code, Some(1), "{summary}");
    assert_eq!(summary["failures"][0]["status"], 400);
    assert_eq!(summary["failures"][0]["error"], "invalid_request");
    assert_eq!(summary["rowsSent"], 0);
    let text = home.run(&["ingest"], &Value::Null).await;
    assert!(
        text.stdout.contains("refused: 400 invalid_request"),
        "{}",
        text.stdout
    );

    // The server is back: everything goes, since nothing was acknowledged.
    server.answer_with(200);
    server.clear();
    let (code, summary, _) = ingest(&home).await;
    assert_eq!(code, Some(0), "{summary}");
    let (records, _) = library_total(&home.home);
    assert_eq!(rows(&server.uploads()).len(), records);

    // Acknowledged now: a further run has nothing new.
    let (_, summary, _) = ingest(&home).await;
    assert_eq!(summary["nothingNew"], true);
}

#[tokio::test]
async fn ingest_without_a_server_configured_says_so() {
    let mut home = HookHome::new("http://127.0.0.1:9", KEY);
    home.set("BATON_URL", "");
    home.set("BATON_API_KEY", "");
    home.set("BATON_HOOK_CONFIG", "/nonexistent/hook.json");
    let run = home.run(&["ingest"], &Value::Null).await;
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("no server configured"), "{}", run.stderr);
}
