//! Ended evidence: a subagent ends when its spawn call's tool result is in the parent's
//! transcript; `error` when that result records a failure or an early termination.

use baton_transcripts::claude::spawn_end;
use baton_transcripts::tree::{EndStatus, Ended};

use crate::corpus::{Layout, append, assistant};

const USAGE: &str = r#"{"input_tokens":1,"output_tokens":1}"#;
const MODEL: &str = "claude-opus-4-6";

fn spawn(id: &str) -> String {
    format!(
        r#"{{"type":"assistant","requestId":"r-{id}","timestamp":"2026-03-01T10:00:00Z","message":{{"id":"m-{id}","model":"{MODEL}","content":[{{"type":"tool_use","id":"{id}","name":"Agent","input":{{"subagent_type":"Explore","description":"look"}}}}],"usage":{USAGE}}}}}"#
    ) + "\n"
}

fn progress(tool: &str, agent: &str) -> String {
    format!(
        r#"{{"type":"progress","parentToolUseID":"{tool}","timestamp":"2026-03-01T10:00:01Z","data":{{"type":"agent_progress","agentId":"{agent}"}}}}"#
    ) + "\n"
}

/// A tool result line: `extra` is spliced into the block, `tool_use_result` is the raw value.
fn result(tool: &str, extra: &str, tool_use_result: &str) -> String {
    format!(
        r#"{{"type":"user","timestamp":"2026-03-01T10:05:00Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{tool}","content":"x"{extra}}}]}},"toolUseResult":{tool_use_result}}}"#
    ) + "\n"
}

fn ended_of(main: &str) -> Option<Ended> {
    let layout = Layout::new();
    layout.claude_file("-p/s1.jsonl", main);
    layout.claude_file(
        "-p/s1/subagents/agent-a1.jsonl",
        &assistant("msg_a", Some("ra"), true, MODEL, USAGE),
    );
    let corpus = layout.scan();
    corpus.sessions[0]
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("a1"))
        .expect("a1")
        .ended
}

const RESULT_MS: i64 = 1_772_359_500_000;

#[test]
fn the_spawn_result_decides_how_the_agent_ended() {
    let head = spawn("toolu_a") + &progress("toolu_a", "a1");
    // (case, the spawn result's (tool use id, extra fields, content) if any, how it ended)
    let cases = [
        ("no result yet", None, None),
        (
            "completed result",
            Some(("toolu_a", "", r#"{"status":"completed","agentId":"a1"}"#)),
            Some(EndStatus::Completed),
        ),
        (
            "is_error without an agent id",
            Some((
                "toolu_a",
                r#","is_error":true"#,
                r#""Error: [Request interrupted by user for tool use]""#,
            )),
            Some(EndStatus::Error),
        ),
        (
            "an early-termination status",
            Some(("toolu_a", "", r#"{"status":"interrupted","agentId":"a1"}"#)),
            Some(EndStatus::Error),
        ),
        (
            "an async launch is no end",
            Some((
                "toolu_a",
                "",
                r#"{"status":"async_launched","agentId":"a1"}"#,
            )),
            None,
        ),
        (
            "another tool's error is not this agent's",
            Some(("toolu_other", r#","is_error":true"#, r#""Error: no""#)),
            None,
        ),
    ];
    for (name, spawn_result, expected) in cases {
        let main = head.clone()
            + &spawn_result.map_or(String::new(), |(tool, extra, content)| {
                result(tool, extra, content)
            });
        let ended = ended_of(&main);
        assert_eq!(ended.map(|e| e.status), expected, "{name}");
        if expected.is_some() {
            assert_eq!(ended.and_then(|e| e.at_ms), Some(RESULT_MS), "{name}");
        }
    }
}

#[test]
fn spawn_end_rules() {
    // (is_error block, error text, status) -> None = no end, Some(is_error)
    let cases = [
        (false, false, None, Some(false)),
        (false, false, Some("completed"), Some(false)),
        (true, false, Some("completed"), Some(true)),
        (false, true, None, Some(true)),
        (false, false, Some("failed"), Some(true)),
        (true, true, Some("async_launched"), None),
    ];
    for (block, text, status, expected) in cases {
        assert_eq!(
            spawn_end(block, text, status),
            expected,
            "{block} {text} {status:?}"
        );
    }
}

#[test]
fn a_result_read_in_a_later_tail_still_ends_the_agent() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().expect("cache");
    let main = layout.claude_file(
        "-p/s1.jsonl",
        &(spawn("toolu_a") + &progress("toolu_a", "a1")),
    );
    layout.claude_file(
        "-p/s1/subagents/agent-a1.jsonl",
        &assistant("msg_a", Some("ra"), true, MODEL, USAGE),
    );
    let first = layout.scan_cached(cache.path());
    assert_eq!(first.sessions[0].agents[1].ended, None);
    append(
        &main,
        &result("toolu_a", "", r#"{"status":"completed","agentId":"a1"}"#),
    );
    let second = layout.scan_cached(cache.path());
    assert_eq!(second.reads.tail, 1, "read as a tail");
    assert_eq!(
        second.sessions[0].agents[1].ended,
        Some(Ended {
            status: EndStatus::Completed,
            at_ms: Some(RESULT_MS)
        })
    );
}
