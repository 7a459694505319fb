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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// Lays the fixture transcripts out under the hook home's `~/.claude` and `~/.codex`.
pub(crate) fn lay_out(home: &Path) {
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
        gemini: Vec::new(),
        copilot: Vec::new(),
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
    [
        "input",
        "output",
        "cacheRead",
        "cacheWrite5m",
        "cacheWrite1h",
    ]
    .iter()
    .map(|k| row[k].as_u64().expect("count"))
    .sum()
}

/// Runs `baton-hook <args>` without stdin: (exit code, stdout, stderr).
async fn command(home: &HookHome, args: &[&str]) -> (Option<i32>, String, String) {
    let output = home
        .command(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("baton-hook ran");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn ingest(home: &HookHome) -> (Option<i32>, Value, String) {
    let (code, stdout, stderr) = command(home, &["ingest", "--json"]).await;
    let summary = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (code, summary, stderr)
}

#[tokio::test]
async fn ingest_backfills_identifiers_and_counts_then_sends_only_what_is_new() {
    let server = UsageRecorder::start().await;
    let home = HookHome::new(&server.url, KEY);
    lay_out(&home.home);
    let (records, tokens) = library_total(&home.home);

    let (code, summary, stderr) = ingest(&home).await;
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert!(
        stderr.is_empty(),
        "no progress bar off a terminal: {stderr}"
    );
    let uploads = server.uploads();
    assert!(!uploads.is_empty());
    for upload in &uploads {
        assert_eq!(upload.path, "/api/v1/usage/batches");
        assert_eq!(upload.api_key.as_deref(), Some(KEY));
        assert!(
            upload.body["hostId"]
                .as_str()
                .is_some_and(|h| h.starts_with("h-"))
        );
        for field in [
            "description",
            "prompt",
            "content",
            "cwd",
            "transcriptPath",
            "message",
        ] {
            assert!(
                !upload.raw.contains(&format!("\"{field}\"")),
                "{field} sent"
            );
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
    assert!(
        main.get("agentId").is_none(),
        "the main agent has no agentId"
    );
    let explore = agents
        .iter()
        .find(|a| a["agentId"] == "a93ccab")
        .expect("explore agent");
    assert_eq!(explore["ended"], "completed");
    assert!(
        explore["endedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(explore["subagentType"], "Explore");

    // A second run on unchanged files sends nothing.
    server.clear();
    let (code, summary, _) = ingest(&home).await;
    assert_eq!(code, Some(0));
    assert!(server.uploads().is_empty(), "nothing re-sent");
    assert_eq!(summary["nothingNew"], true);
    assert_eq!(summary["rowsUnchanged"], records as u64);
    let (_, text, _) = command(&home, &["ingest"]).await;
    assert!(text.starts_with("nothing new"), "{text}");

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
    let (code, text, _) = command(&home, &["ingest"]).await;
    assert_eq!(code, Some(1));
    assert!(text.contains("refused: 400 invalid_request"), "{text}");

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
    let (code, _, stderr) = command(&home, &["ingest"]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no server configured"), "{stderr}");
}

fn spotter_rows(home: &Path) -> usize {
    let roots = Roots {
        claude: vec![home.join(".claude/projects")],
        codex: Vec::new(),
        gemini: Vec::new(),
        copilot: Vec::new(),
    };
    let corpus = baton_transcripts::scan(&roots, &Options::default(), &|_| {}).expect("scan");
    corpus
        .records
        .iter()
        .filter(|r| r.session_id == SESSION)
        .count()
}

#[tokio::test]
async fn session_end_spools_a_flush_the_drain_uploads_and_every_delivery_is_recorded() {
    let server = UsageRecorder::start().await;
    let mut home = HookHome::new("http://127.0.0.1:9", KEY);
    home.set("BATON_HOOK_DRAIN_PATIENCE_MS", "1000");
    lay_out(&home.home);
    let transcript = home
        .home
        .join(format!(".claude/projects/-spotter/{SESSION}.jsonl"));

    // A prompt: recorded in the spool and nothing else — no output, no call, fast.
    let prompt = serde_json::json!({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
        "prompt": "a very private prompt", "cwd": "/w/spotter",
        "transcript_path": transcript.display().to_string()});
    let run = home
        .run(&["claude-code", "user-prompt-submit"], &prompt)
        .await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    assert!(
        run.elapsed < std::time::Duration::from_millis(1000),
        "{:?}",
        run.elapsed
    );

    let end = serde_json::json!({"session_id": SESSION, "hook_event_name": "SessionEnd",
        "reason": "other", "cwd": "/w/spotter",
        "transcript_path": transcript.display().to_string()});
    let run = home.run(&["claude-code", "session-end"], &end).await;
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    assert!(
        run.elapsed < std::time::Duration::from_millis(1500),
        "{:?}",
        run.elapsed
    );

    let lifecycle: Vec<Value> = home.spooled();
    let lifecycle_paths: Vec<&str> = lifecycle
        .iter()
        .map(|e| e["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        lifecycle_paths,
        ["/api/v1/agent-sessions/close"],
        "the lifecycle spool as before"
    );
    let spooled = home.usage_spooled();
    let paths: Vec<&str> = spooled
        .iter()
        .map(|e| e["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        paths,
        [
            "/api/v1/usage/batches",
            "/api/v1/usage/batches",
            "baton-hook:usage-flush"
        ],
        "a delivery per hook run, then the final flush, in the usage spool"
    );
    let spool_text = serde_json::to_string(&spooled).expect("json");
    assert!(
        !spool_text.contains("very private"),
        "the prompt is never kept"
    );
    let events: Vec<&str> = spooled[..2]
        .iter()
        .map(|e| e["body"]["deliveries"][0]["event"].as_str().expect("event"))
        .collect();
    assert_eq!(events, ["UserPromptSubmit", "SessionEnd"]);
    for entry in &spooled[..2] {
        let delivery = &entry["body"]["deliveries"][0];
        let mut keys: Vec<&String> = delivery.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["agent", "deliveryId", "event", "observedAt", "sessionId"],
            "identifiers only"
        );
        assert!(uuid::Uuid::parse_str(delivery["deliveryId"].as_str().expect("id")).is_ok());
        assert_eq!(entry["body"]["sessions"][0]["projectSlug"], "-w-spotter");
    }
    assert!(
        server.uploads().is_empty(),
        "nothing reached the server from the hook runs"
    );

    // The drain, with the server reachable: one upload for both deliveries, then the flush.
    home.set("BATON_URL", &server.url);
    let status = home.command(&["drain"]).status().await.expect("drain");
    assert!(status.success());
    assert!(home.spooled().is_empty(), "{:?}", home.spooled());
    assert!(
        home.usage_spooled().is_empty(),
        "{:?}",
        home.usage_spooled()
    );
    let uploads: Vec<Upload> = server
        .uploads()
        .into_iter()
        .filter(|u| u.path == "/api/v1/usage/batches")
        .collect();
    let with_deliveries: Vec<&Upload> = uploads
        .iter()
        .filter(|u| {
            u.body["deliveries"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
        })
        .collect();
    assert_eq!(
        with_deliveries.len(),
        1,
        "the run of deliveries went as one upload"
    );
    assert_eq!(
        with_deliveries[0].body["deliveries"]
            .as_array()
            .expect("d")
            .len(),
        2
    );
    let flushed = rows(&uploads);
    assert_eq!(
        flushed.len(),
        spotter_rows(&home.home),
        "the session's whole delta"
    );
    assert!(flushed.iter().all(|r| r["sessionId"] == SESSION));
    for upload in &uploads {
        assert!(!upload.raw.contains("very private"));
        assert!(!upload.raw.contains("transcriptPath"));
    }

    // A second end: its delivery goes, but the transcript has nothing new.
    home.set("BATON_URL", "http://127.0.0.1:9");
    home.run(&["claude-code", "session-end"], &end).await;
    home.set("BATON_URL", &server.url);
    server.clear();
    let status = home.command(&["drain"]).status().await.expect("drain");
    assert!(status.success());
    let uploads = server.uploads();
    assert!(rows(&uploads).is_empty(), "nothing new in the transcript");
    let sessions: usize = uploads
        .iter()
        .map(|u| u.body["sessions"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(
        sessions, 0,
        "the server has the session: no minimal fact rides along"
    );
}
