//! Record-level rules, each on lines of the shape Gemini CLI 0.61.0 wrote here (HOOKS.md 4.10).

use super::*;
use crate::facts::JoinPath;
use crate::record::Harness;

const MAIN: GeminiContext = GeminiContext { agent_id: None };

fn read_lines(lines: &[&str]) -> FileFacts {
    let mut facts = FileFacts::default();
    let text = lines.join("\n") + "\n";
    let used = read_chunk(&MAIN, text.as_bytes(), &mut facts);
    assert_eq!(used, text.len());
    facts.records = crate::dedup::dedup(std::mem::take(&mut facts.records));
    facts
}

const META: &str = r#"{"sessionId":"s-1","projectHash":"h","startTime":"2026-12-02T05:16:20.302Z","lastUpdated":"2026-12-02T05:16:20.302Z","kind":"main"}"#;
const ANSWER: &str = r#"{"id":"g-1","timestamp":"2026-12-02T05:16:20.537Z","type":"gemini","content":"ok","thoughts":[],"tokens":{"input":1001,"output":21,"cached":401,"thoughts":8,"tool":4,"total":1034},"model":"gemini-2.5-pro"}"#;

#[test]
fn a_gemini_message_with_tokens_is_one_request() {
    let facts = read_lines(&[
        META,
        r#"{"id":"u-1","timestamp":"2026-12-02T05:16:20.322Z","type":"user","content":[{"text":"hi"}]}"#,
        r#"{"$set":{"lastUpdated":"2026-12-02T05:16:20.323Z"}}"#,
        ANSWER,
    ]);
    assert_eq!(facts.gemini_id.as_deref(), Some("s-1"));
    assert_eq!(facts.records.len(), 1);
    let record = &facts.records[0];
    assert_eq!(record.message_id, "g-1");
    assert_eq!(record.harness, Harness::Gemini);
    assert_eq!(record.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(
        (
            record.tokens.input,
            record.tokens.output,
            record.tokens.cache_read
        ),
        (604, 29, 401)
    );
    assert_eq!(facts.malformed_lines, 0);
}

#[test]
fn copies_of_a_message_are_one_request_and_a_copy_without_tokens_changes_nothing() {
    // The message again with its tool calls, then a resume's `$set.messages` copy without
    // tokens and model (as 0.61.0 writes them).
    let with_calls = ANSWER.replace(
        r#""model":"gemini-2.5-pro"}"#,
        r#""model":"gemini-2.5-pro","toolCalls":[{"id":"ls_1","name":"list_directory","status":"success"}]}"#,
    );
    let resumed = r#"{"$set":{"messages":[{"id":"g-1","timestamp":"2026-12-02T05:20:00.000Z","type":"gemini","content":[{"text":"ok"}]}]}}"#;
    let facts = read_lines(&[META, ANSWER, &with_calls, META, resumed]);
    assert_eq!(facts.records.len(), 1);
    assert_eq!(facts.records[0].tokens.input, 604);
    assert!(facts.spawns.is_empty(), "a plain tool call is no spawn");
}

#[test]
fn a_rewound_message_stays_billed() {
    let facts = read_lines(&[META, ANSWER, r#"{"$rewindTo":"g-1"}"#]);
    assert_eq!(facts.records.len(), 1);
}

#[test]
fn an_invoke_agent_call_is_a_spawn_proven_by_its_agent_id() {
    let call = r#"{"id":"g-2","timestamp":"2026-12-02T05:19:31.660Z","type":"gemini","content":"","tokens":{"input":10,"output":1},"model":"gemini-2.5-pro","toolCalls":[{"id":"invoke_agent_1","name":"invoke_agent","args":{"agent_name":"generalist","prompt":"look"},"status":"success","timestamp":"2026-12-02T05:19:31.747Z","agentId":"a-1","description":"Delegating"}]}"#;
    let facts = read_lines(&[META, call, call]);
    assert_eq!(facts.spawns.len(), 1);
    assert_eq!(facts.spawns[0].subagent_type.as_deref(), Some("generalist"));
    assert_eq!(facts.links.len(), 1);
    assert_eq!(facts.links[0].agent_id, "a-1");
    assert_eq!(facts.links[0].path, JoinPath::ToolResult);
    assert_eq!(facts.results.len(), 1);
    assert!(!facts.results[0].is_error);
}

#[test]
fn a_single_object_file_is_read_whole() {
    let document = format!(
        r#"{{
  "sessionId": "s-old",
  "projectHash": "h",
  "messages": [
    {{"id": "u-1", "timestamp": "2025-10-05T07:11:03.980Z", "type": "user", "content": "hi"}},
    {ANSWER},
    {{"id": "e-1", "timestamp": "2025-10-05T07:12:00.000Z", "type": "error", "content": "x"}}
  ]
}}"#
    );
    let mut facts = FileFacts::default();
    read_document(&MAIN, document.as_bytes(), &mut facts);
    assert_eq!(facts.gemini_id.as_deref(), Some("s-old"));
    assert_eq!(facts.records.len(), 1);
    assert_eq!(facts.malformed_lines, 0);
}

#[test]
fn unreadable_records_are_counted_and_skipped() {
    let cases: [(&str, u64); 4] = [
        ("{\"id\":", 1),
        ("not json", 1),
        (r#"{"id": 7, "type": "gemini"}"#, 1),
        (r#"{"$set": {"messages": 3}}"#, 1),
    ];
    for (line, malformed) in cases {
        let facts = read_lines(&[META, line]);
        assert_eq!(facts.malformed_lines, malformed, "{line}");
        assert!(facts.records.is_empty(), "{line}");
    }
}

#[test]
fn a_subagent_chat_carries_its_agent() {
    let mut facts = FileFacts::default();
    let context = GeminiContext {
        agent_id: Some("a-1".to_string()),
    };
    read_chunk(&context, format!("{ANSWER}\n").as_bytes(), &mut facts);
    assert_eq!(facts.records[0].agent_id.as_deref(), Some("a-1"));
}
