//! The upload's pure parts: facts from the fixture transcripts (and that no transcript text is
//! in them), the bounds a fact must keep, and a whole run against a server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use baton_transcripts::{Corpus, Options, Roots, scan};
use serde_json::Value;

use super::facts;
use super::ledger::Ledger;
use super::plan::{Limits, plan};
use super::wire::UsageFact;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

pub(super) const SPOTTER: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";
/// 2026-12-01T00:00:00Z: after every fixture.
pub(super) const NOW_MS: i64 = 1_796_083_200_000;

/// Every fixture transcript laid out under `dir` as the harnesses write them.
fn fixture_roots(dir: &Path) -> Roots {
    let claude = dir.join("claude/projects");
    let codex = dir.join("codex/sessions");
    let copy = |from: &str, to: &Path| {
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(fixtures().join(from), to).expect("copy fixture");
    };
    let spotter = "claude-code/transcripts/spotter";
    copy(
        &format!("{spotter}/{SPOTTER}.jsonl"),
        &claude.join(format!("-spotter/{SPOTTER}.jsonl")),
    );
    copy(
        &format!("{spotter}/short.jsonl"),
        &claude.join("-spotter/short.jsonl"),
    );
    for agent in ["agent-a93ccab", "agent-aa84377", "agent-acompact-70d8e7"] {
        copy(
            &format!("{spotter}/{SPOTTER}/subagents/{agent}.jsonl"),
            &claude.join(format!("-spotter/{SPOTTER}/subagents/{agent}.jsonl")),
        );
    }
    for name in ["73_7e6e3ea2ad_0_full.jsonl", "4c_02af2759b6_0_full.jsonl"] {
        copy(
            &format!("claude-code/transcripts/entire-checkpoints/{name}"),
            &claude.join(format!("-entire/{name}")),
        );
    }
    for name in [
        "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ] {
        copy(
            &format!("codex/rollouts/madshn-localpush/{name}"),
            &codex.join(format!("2026/02/23/{name}")),
        );
    }
    Roots {
        claude: vec![claude],
        codex: vec![codex],
        gemini: Vec::new(),
        copilot: Vec::new(),
    }
}

pub(super) fn fixture_corpus() -> (tempfile::TempDir, Corpus) {
    let dir = tempfile::tempdir().expect("dir");
    let roots = fixture_roots(dir.path());
    let corpus = scan(&roots, &Options::default(), &|_| {}).expect("scan");
    (dir, corpus)
}

/// The spotter session of `corpus` and a copy of its usage records.
fn spotter(
    corpus: &Corpus,
) -> (
    &baton_transcripts::Session,
    Vec<baton_transcripts::UsageRecord>,
) {
    let session = corpus
        .sessions
        .iter()
        .find(|s| s.session_id == SPOTTER)
        .expect("spotter");
    let records = corpus
        .records
        .iter()
        .filter(|r| r.session_id == SPOTTER)
        .cloned()
        .collect();
    (session, records)
}

/// Keys whose values are identifiers, allowed on the wire even inside content.
const IDENTIFIER_KEYS: &[&str] = &[
    "model",
    "service_tier",
    "speed",
    "inference_geo",
    "type",
    "id",
    "tool_use_id",
    "name",
    "subagent_type",
    "role",
    "status",
    "agentId",
];
/// Keys whose values are content (text, inputs, outputs, places).
const CONTENT_KEYS: [&str; 11] = [
    "content",
    "text",
    "input",
    "prompt",
    "description",
    "toolUseResult",
    "output",
    "arguments",
    "cwd",
    "summary",
    "thinking",
];

fn content_strings(value: &Value, inside: bool, out: &mut BTreeSet<String>) {
    match value {
        Value::String(text) if inside => {
            out.insert(text.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| content_strings(v, inside, out)),
        Value::Object(map) => {
            for (key, v) in map {
                if inside && IDENTIFIER_KEYS.contains(&key.as_str()) {
                    continue;
                }
                content_strings(v, inside || CONTENT_KEYS.contains(&key.as_str()), out);
            }
        }
        _ => {}
    }
}

fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[test]
fn batches_from_the_fixtures_carry_no_transcript_text_and_no_path() {
    let (dir, corpus) = fixture_corpus();
    let built = facts::build(&corpus, NOW_MS);
    assert_eq!(built.invalid, 0);
    let deltas: Vec<_> = built
        .sessions
        .iter()
        .filter_map(|s| Ledger::default().delta(s))
        .collect();
    let planned = plan(
        "h-test",
        Some("0.1.0"),
        deltas,
        Vec::new(),
        Limits::default(),
    );
    let bodies: Vec<Value> = planned
        .iter()
        .map(|p| serde_json::to_value(&p.batch).expect("json"))
        .collect();
    let mut sent = Vec::new();
    bodies.iter().for_each(|body| strings(body, &mut sent));
    assert!(!sent.is_empty());

    let mut content = BTreeSet::new();
    for file in walk_files(dir.path()) {
        for line in std::fs::read_to_string(&file).expect("read").lines() {
            if let Ok(value) = serde_json::from_str::<Value>(line) {
                content_strings(&value, false, &mut content);
            }
        }
    }
    let content: Vec<&String> = content.iter().filter(|c| c.len() >= 8).collect();
    assert!(
        content.len() > 100,
        "the fixtures hold text: {}",
        content.len()
    );
    for text in &sent {
        assert!(!text.contains('/'), "a path-like string was sent: {text}");
        for c in &content {
            assert!(
                !text.contains(c.as_str()),
                "transcript text in the upload: {text:?} holds {c:?}"
            );
        }
    }
    // Content-bearing field names never appear either.
    let text = serde_json::to_string(&bodies).expect("json");
    for field in ["description", "prompt", "content", "cwd", "transcriptPath"] {
        assert!(!text.contains(&format!("\"{field}\"")), "{field}");
    }
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn fixture_facts_match_the_corpus() {
    let (_dir, corpus) = fixture_corpus();
    let built = facts::build(&corpus, NOW_MS);
    assert_eq!(built.sessions.len(), corpus.sessions.len());
    let rows: usize = built.sessions.iter().map(|s| s.usage.len()).sum();
    assert_eq!(
        rows,
        corpus.records.len(),
        "every deduplicated record, once"
    );
    let total =
        |u: &UsageFact| u.input + u.output + u.cache_read + u.cache_write_5m + u.cache_write_1h;
    let sent: u64 = built
        .sessions
        .iter()
        .flat_map(|s| s.usage.values())
        .map(total)
        .sum();
    let read: u64 = corpus.records.iter().map(|r| r.tokens.total()).sum();
    assert_eq!(sent, read);

    let spotter = built
        .sessions
        .iter()
        .find(|s| s.session.session_id == SPOTTER)
        .expect("spotter");
    assert_eq!(spotter.key, format!("claude-code/{SPOTTER}"));
    assert_eq!(spotter.session.project_slug, "-spotter");
    assert!(spotter.session.output_under_reported);
    assert_eq!(spotter.agents.len(), 4);
    assert_eq!(spotter.agents[0].kind, "main");
    assert_eq!(spotter.agents[0].agent_id, None);
    for id in ["a93ccab", "aa84377"] {
        let agent = spotter
            .agents
            .iter()
            .find(|a| a.agent_id.as_deref() == Some(id))
            .expect(id);
        assert_eq!(agent.ended, Some("completed"));
        assert!(agent.ended_at.is_some());
        assert_eq!(agent.subagent_type.as_deref(), Some("Explore"));
        assert_eq!(agent.spawn_tool.as_deref(), Some("Task"));
        assert_eq!(agent.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    }
    let compaction = spotter
        .agents
        .iter()
        .find(|a| a.kind == "compaction")
        .expect("compaction");
    assert_eq!(compaction.ended, None);
    let paths: BTreeSet<&str> = spotter.edges.iter().map(|e| e.join_path).collect();
    assert_eq!(paths, BTreeSet::from(["tool_result", "compaction"]));
    assert_eq!(spotter.edges.len(), 3);
}

#[test]
fn identifiers_outside_the_contract_are_left_out() {
    let cases = [
        ("a93ccab", true),
        ("acompact-70d8e7", true),
        ("", false),
        ("a/b", false),
        ("a b", false),
        (&"x".repeat(129), false),
    ];
    for (id, ok) in cases {
        assert_eq!(facts::id_ok(id), ok, "{id}");
    }
    assert!(facts::text_ok("-spotter", 256));
    assert!(!facts::text_ok("a\u{7}b", 256));
    assert!(!facts::text_ok("", 256));
}

#[test]
fn instants_outside_the_servers_window_are_left_out() {
    let (_dir, corpus) = fixture_corpus();
    let (session, mut records) = spotter(&corpus);
    let n = records.len();
    // (timestamp, kept)
    let cases = [
        (0, false),
        (facts::EARLIEST_MS - 1, false),
        (facts::EARLIEST_MS, true),
        (NOW_MS + facts::SKEW_MS, true),
        (NOW_MS + facts::SKEW_MS + 1, false),
    ];
    for (record, (ms, _)) in records.iter_mut().zip(cases) {
        record.timestamp_ms = ms;
    }
    records[5].tokens.output = facts::MAX_TOKENS + 1;
    let refs: Vec<_> = records.iter().collect();
    let (built, invalid) = facts::session_facts(session, &refs, NOW_MS).expect("session");
    let kept = cases.iter().filter(|(_, kept)| *kept).count();
    assert_eq!(invalid as usize, cases.len() - kept + 1);
    assert_eq!(built.usage.len(), n - (cases.len() - kept) - 1);
    let mut early = session.clone();
    early.first_ms = Some(0);
    let (built, _) = facts::session_facts(&early, &refs, NOW_MS).expect("session");
    assert_eq!(
        built.session.first_activity_at, None,
        "omitted, not refused"
    );
    assert!(built.session.last_activity_at.is_some());
}

#[test]
fn reasoning_and_server_tool_calls_travel_on_each_usage_fact() {
    let (_dir, corpus) = fixture_corpus();
    let (session, mut records) = spotter(&corpus);
    records[0].tokens.reasoning = 7;
    records[0].server_tools.web_search = 3;
    records[0].server_tools.web_fetch = 1;
    records[1].server_tools.web_fetch = facts::MAX_SERVER_TOOL_CALLS + 1;
    let refs: Vec<_> = records.iter().collect();
    let (built, invalid) = facts::session_facts(session, &refs, NOW_MS).expect("session");
    assert_eq!(
        invalid, 1,
        "a count the server would refuse leaves its row out"
    );
    assert!(!built.usage.contains_key(&records[1].dedup_key()));
    let searched = &built.usage[&records[0].dedup_key()];
    assert_eq!(
        (
            searched.reasoning,
            searched.web_search_requests,
            searched.web_fetch_requests
        ),
        (7, 3, 1)
    );
    let wire = serde_json::to_value(searched).expect("json");
    assert_eq!(
        (
            &wire["reasoning"],
            &wire["webSearchRequests"],
            &wire["webFetchRequests"]
        ),
        (&Value::from(7), &Value::from(3), &Value::from(1))
    );
    let plain = serde_json::to_value(&built.usage[&records[2].dedup_key()]).expect("json");
    for key in ["reasoning", "webSearchRequests", "webFetchRequests"] {
        assert!(plain.get(key).is_none(), "a zero {key} is left out");
    }
}

/// A server answering every upload with `status`, recording the bodies.
fn accept(
    bodies: &mut Vec<Value>,
    status: u16,
) -> impl FnMut(&Value) -> Result<crate::http::Answer, crate::http::Failure> + '_ {
    move |body| {
        bodies.push(body.clone());
        Ok(crate::http::Answer {
            status,
            body: serde_json::json!({"error": "not_found"}),
            retry_after: None,
        })
    }
}

#[test]
fn a_run_sends_what_is_new_and_a_not_found_makes_the_next_send_the_session_whole() {
    let (_dir, corpus) = fixture_corpus();
    let state = tempfile::tempdir().expect("state");
    let ledger = Ledger::path(state.path());
    let rows = |bodies: &[Value]| -> usize {
        bodies
            .iter()
            .map(|b| b["usage"].as_array().map_or(0, Vec::len))
            .sum()
    };
    // One run over `corpus` answered with `status`: the bodies sent and the summary.
    let send = |corpus: &Corpus, status: u16| {
        let mut bodies = Vec::new();
        let summary = super::run(
            corpus,
            Vec::new(),
            &ledger,
            "h",
            false,
            accept(&mut bodies, status),
        );
        (bodies, summary)
    };
    let (first, summary) = send(&corpus, 200);
    assert_eq!(rows(&first), corpus.records.len());
    assert_eq!(summary.rows_sent as usize, corpus.records.len());
    let (second, summary) = send(&corpus, 200);
    assert!(second.is_empty(), "nothing new");
    assert_eq!(summary.sessions_unchanged, summary.sessions);

    // The server lost a session: a row of it comes back 404 and the session is sent whole.
    let mut grown = corpus.clone();
    let row = grown
        .records
        .iter_mut()
        .find(|r| r.session_id == SPOTTER)
        .expect("row");
    row.tokens.output += 1;
    let (refused, summary) = send(&grown, 404);
    assert_eq!(summary.failures, vec![(404, "not_found".to_string())]);
    assert_eq!(rows(&refused), 1, "only the changed row was tried");
    let (again, _) = send(&grown, 200);
    let spotter_rows = grown
        .records
        .iter()
        .filter(|r| r.session_id == SPOTTER)
        .count();
    assert_eq!(rows(&again), spotter_rows, "the whole session again");
    assert_eq!(again[0]["sessions"].as_array().expect("s").len(), 1);
}
