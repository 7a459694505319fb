//! A file's last line without a newline (HOOKS.md 4.9): a whole JSON object counts, a
//! half-written one does not, and a checkpoint never holds the unterminated line, so neither
//! case is counted twice or lost when the file grows.

use crate::corpus::{Layout, append, assistant, by_model};

const USAGE: &str = r#"{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100}"#;
const MODEL: &str = "claude-opus-4-6";

fn line(message: &str) -> String {
    assistant(message, Some(&format!("r-{message}")), false, MODEL, USAGE)
}

/// The line without its newline.
fn unterminated(message: &str) -> String {
    line(message).trim_end().to_string()
}

#[test]
fn a_complete_last_line_without_newline_counts_cold_and_cached() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    layout.claude_file("-p/s1.jsonl", &(line("msg_1") + &unterminated("msg_2")));
    assert_eq!(layout.scan().records.len(), 2, "cold read counts both");
    let first = layout.scan_cached(cache.path());
    assert_eq!(first.records.len(), 2);
    let again = layout.scan_cached(cache.path());
    assert_eq!(
        again.reads.cached, 1,
        "the unchanged file comes from the checkpoint"
    );
    assert_eq!(
        again.records.len(),
        2,
        "and its unterminated line is still read"
    );
}

#[test]
fn its_newline_arriving_later_counts_it_once() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let path = layout.claude_file("-p/s1.jsonl", &(line("msg_1") + &unterminated("msg_2")));
    assert_eq!(layout.scan_cached(cache.path()).records.len(), 2);
    append(&path, "\n");
    let after = layout.scan_cached(cache.path());
    assert_eq!(after.records.len(), 2, "the same line is not counted again");
    assert_eq!(after.reads.tail, 1, "the grown file was tail-read");
    append(&path, &unterminated("msg_3"));
    let grown = layout.scan_cached(cache.path());
    assert_eq!(grown.records.len(), 3);
    assert_eq!(
        by_model(&grown),
        by_model(&layout.scan()),
        "equals a cold read"
    );
}

#[test]
fn a_half_written_last_line_is_skipped_then_counted_once_whole() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let whole = unterminated("msg_2");
    let (head, tail) = whole.split_at(whole.len() / 2);
    let path = layout.claude_file("-p/s1.jsonl", &(line("msg_1") + head));
    let cut = layout.scan_cached(cache.path());
    assert_eq!(cut.records.len(), 1, "half a line is not a record");
    assert_eq!(
        cut.malformed_lines, 0,
        "nor malformed: it is still being written"
    );
    append(&path, tail);
    assert_eq!(
        layout.scan_cached(cache.path()).records.len(),
        2,
        "whole now, though still without its newline"
    );
    append(&path, "\n");
    assert_eq!(layout.scan_cached(cache.path()).records.len(), 2);
}

#[test]
fn a_codex_rollout_ending_without_newline_counts_its_last_event() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let meta = r#"{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"t1","cwd":"/w","cli_version":"0.77.0","source":"cli"}}"#;
    let turn = r#"{"timestamp":"2026-03-01T10:00:00.100Z","type":"turn_context","payload":{"model":"gpt-5"}}"#;
    let count = |ms: u32, input: u64, output: u64| {
        format!(
            r#"{{"timestamp":"2026-03-01T10:00:0{ms}.000Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{input},"cached_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":0,"total_tokens":{}}}}}}}}}"#,
            input + output
        )
    };
    let path = layout.codex_file(
        "2026/03/01/rollout-2026-03-01T10-00-00-t1.jsonl",
        &format!(
            "{meta}\n{turn}\n{}\n{}",
            count(1, 100, 10),
            count(2, 300, 30)
        ),
    );
    let first = layout.scan_cached(cache.path());
    let total: u64 = first.records.iter().map(|r| r.tokens.input).sum();
    assert_eq!(total, 300, "the unterminated last event is counted");
    append(&path, "\n");
    let after = layout.scan_cached(cache.path());
    let total: u64 = after.records.iter().map(|r| r.tokens.input).sum();
    assert_eq!(total, 300, "and once, when its newline arrives");
}
