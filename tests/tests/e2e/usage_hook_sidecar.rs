//! The sidecar tails its session's transcript: on each pulse it uploads what is new, so a
//! request appended mid-session reaches the usage upload on the next pulse. Uploads go to a
//! recording stand-in of the upload route in front of a real Baton (which serves the rest).

use std::path::Path;
use std::time::{Duration, Instant};

use baton_tests::Baton;
use baton_tests::hook::HookHome;
use baton_tests::usage_recorder::UsageRecorder;
use serde_json::{Value, json};

const SPOTTER: &str = "claude-code/transcripts/spotter";
const SESSION: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

const PULSE: &str = "/api/v1/agent-sessions/pulse";

fn rows(recorder: &UsageRecorder) -> Vec<Value> {
    recorder
        .uploads()
        .iter()
        .flat_map(|u| u.body["usage"].as_array().cloned().unwrap_or_default())
        .collect()
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(20), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_sidecar_uploads_its_session_and_a_request_appended_mid_session() {
    let baton = Baton::unthrottled().await;
    let tenant = baton.create_tenant("usage-tail").await;
    let recorder = UsageRecorder::in_front_of(&baton.base_url).await;
    let dir = std::env::temp_dir().join(format!("standin-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("stand-in folder");
    let mut client = crate::hook_liveness::stand_in(&dir);
    let mut home = HookHome::new(&recorder.url, &tenant.api_key);
    home.set("BATON_HOOK_SIDECAR", "on");
    home.set("BATON_HOOK_PULSE_INTERVAL_MS", "100");
    home.set("CLAUDE_PID", &client.id().expect("pid").to_string());

    let projects = home.home.join(".claude/projects/-spotter");
    std::fs::create_dir_all(projects.join(format!("{SESSION}/subagents"))).expect("mkdir");
    let transcript = projects.join(format!("{SESSION}.jsonl"));
    std::fs::copy(
        fixtures().join(format!("{SPOTTER}/{SESSION}.jsonl")),
        &transcript,
    )
    .expect("copy");
    for agent in ["agent-a93ccab", "agent-aa84377", "agent-acompact-70d8e7"] {
        std::fs::copy(
            fixtures().join(format!("{SPOTTER}/{SESSION}/subagents/{agent}.jsonl")),
            projects.join(format!("{SESSION}/subagents/{agent}.jsonl")),
        )
        .expect("copy");
    }
    let roots = baton_transcripts::Roots {
        claude: vec![home.home.join(".claude/projects")],
        codex: Vec::new(),
        gemini: Vec::new(),
        copilot: Vec::new(),
    };
    let expected = baton_transcripts::scan(&roots, &Default::default(), &|_| {})
        .expect("scan")
        .records
        .len();

    let start = json!({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup",
        "cwd": "/w/spotter", "transcript_path": transcript.display().to_string()});
    let run = home.run(&["claude-code", "session-start"], &start).await;
    assert_eq!(run.code, Some(0));
    until("the sidecar uploaded the session", || {
        rows(&recorder).len() >= expected
    })
    .await;
    // Three more pulses, each followed by a look at the transcript, send nothing again.
    let pulses = recorder.forwarded(PULSE);
    until("three more pulses", || {
        recorder.forwarded(PULSE) >= pulses + 3
    })
    .await;
    assert_eq!(
        rows(&recorder).len(),
        expected,
        "later pulses send nothing again"
    );

    let line = r#"{"type":"assistant","sessionId":"fa812bfe-b295-4cca-9c2f-fdf01028cb46","requestId":"req_tail","timestamp":"2026-02-12T18:00:00.000Z","message":{"id":"msg_tail","model":"claude-opus-4-6","content":[{"type":"text","text":"tail secret"}],"usage":{"input_tokens":2,"output_tokens":1}}}"#;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .expect("open");
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).expect("append");
    until("the next pulse picked up the appended request", || {
        rows(&recorder)
            .iter()
            .any(|r| r["dedupKey"] == "msg_tail:req_tail")
    })
    .await;
    assert_eq!(rows(&recorder).len(), expected + 1, "only the new request");
    assert!(
        !recorder
            .uploads()
            .iter()
            .any(|u| u.raw.contains("tail secret")),
        "no message text"
    );
    let _ = client.start_kill();
    let _ = client.wait().await;
}
