//! The turn's final text for a harness whose turn end does not carry it: Copilot CLI's
//! `agentStop` names only the transcript (`events.jsonl`), in which every answer is an
//! `assistant.message` line. The text stays on the machine except as the heartbeat's excerpt,
//! exactly as Claude Code's `last_assistant_message` does.
//!
//! Copilot writes the file behind its own progress (seen on 1.0.102: a hook that reads at
//! once may find the turn's answer not yet written), but it records each hook run as a
//! `hook.start` line carrying the hook's input, written after the answer. So the answer is
//! the last one before the `hook.start` of this very `agentStop` (same `timestamp`), read once
//! that line is there; until then the file is read again, for at most [`PATIENCE`]. Without
//! it there is no excerpt: an earlier turn's answer would be a wrong one.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// How much of the transcript's end is read: a final answer is far shorter, and a turn end
/// must not read a long session's whole file.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// The longest a turn end waits for Copilot to write its own `hook.start` line.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_millis(300);

/// What the tail says about the answer of the turn that ended at `stop_timestamp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The `hook.start` of this agentStop is written: the answer before it, if any.
    Found(Option<String>),
    /// Not written yet.
    NotYet,
}

/// The main agent's last answer before the `hook.start` line of the `agentStop` (or, from a
/// Claude-format configuration, `Stop`) whose input `timestamp` is `stop_timestamp` (epoch
/// milliseconds in Copilot's own format, an ISO string in the Claude-compatible one).
pub fn copilot_answer_before_stop(tail: &str, stop_timestamp: &Value) -> Lookup {
    let lines: Vec<&str> = tail.lines().collect();
    let is_this_stop = |line: &&str| {
        line.contains("\"hook.start\"")
            && serde_json::from_str::<Value>(line).is_ok_and(|event| {
                event["type"] == "hook.start"
                    && matches!(
                        event["data"]["hookType"].as_str(),
                        Some("agentStop" | "Stop")
                    )
                    && event["data"]["input"]["timestamp"] == *stop_timestamp
            })
    };
    match lines.iter().rposition(is_this_stop) {
        Some(marker) => Lookup::Found(copilot_last_answer(&lines[..marker].join("\n"))),
        None => Lookup::NotYet,
    }
}

/// Reads the tail of `path` until [`copilot_answer_before_stop`] finds this turn end's line,
/// for at most `patience`.
pub fn copilot_answer_waiting(
    path: &Path,
    stop_timestamp: &Value,
    patience: std::time::Duration,
) -> Option<String> {
    let deadline = std::time::Instant::now() + patience;
    loop {
        if let Some(tail) = read_tail(path)
            && let Lookup::Found(answer) = copilot_answer_before_stop(&tail, stop_timestamp)
        {
            return answer;
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The main agent's last non-empty answer in `tail` (the end of a Copilot `events.jsonl`):
/// the last `assistant.message` line without a top-level `agentId` (a subagent's) whose
/// `data.content` is text. A first line cut by the tail's start does not parse and is skipped.
pub fn copilot_last_answer(tail: &str) -> Option<String> {
    tail.lines().rev().find_map(|line| {
        if !line.contains("\"assistant.message\"") {
            return None;
        }
        let event: Value = serde_json::from_str(line).ok()?;
        if event["type"] != "assistant.message" || event.get("agentId").is_some() {
            return None;
        }
        event["data"]["content"]
            .as_str()
            .filter(|text| !text.trim().is_empty())
            .map(str::to_string)
    })
}

/// The last [`TAIL_BYTES`] of the file at `path`, as text (invalid UTF-8 replaced).
pub fn read_tail(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MAIN: &str = r#"{"type":"assistant.message","data":{"model":"gpt-4o","content":"First answer."},"id":"1"}"#;
    const LATER: &str =
        r#"{"type":"assistant.message","data":{"model":"gpt-4o","content":"All done."},"id":"2"}"#;
    const SUBAGENT: &str = r#"{"type":"assistant.message","data":{"content":"Subagent text."},"id":"3","agentId":"c6e2"}"#;
    const TOOL_ONLY: &str = r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"name":"bash"}]},"id":"4"}"#;
    const OTHER: &str =
        r#"{"type":"session.usage_record","data":{"usage":{"model":"gpt-4o"}},"id":"5"}"#;

    #[test]
    fn the_main_agents_last_text_answer() {
        let table: [(&[&str], Option<&str>); 6] = [
            (&[MAIN, LATER, OTHER], Some("All done.")),
            (&[MAIN, LATER, SUBAGENT], Some("All done.")),
            (&[MAIN, TOOL_ONLY], Some("First answer.")),
            (&[OTHER, SUBAGENT], None),
            // The tail's first line is cut mid-way.
            (&[&LATER[10..], OTHER], None),
            (&[], None),
        ];
        for (lines, expected) in table {
            assert_eq!(
                copilot_last_answer(&lines.join("\n")).as_deref(),
                expected,
                "{lines:?}"
            );
        }
    }

    #[test]
    fn the_answer_is_the_one_before_this_stops_own_hook_line() {
        let stop = |timestamp: u64| {
            format!(
                r#"{{"type":"hook.start","data":{{"hookType":"agentStop","input":{{"sessionId":"s","timestamp":{timestamp}}}}},"id":"h"}}"#
            )
        };
        let (first_stop, second_stop) = (stop(100), stop(200));
        let pascal = r#"{"type":"hook.start","data":{"hookType":"Stop","input":{"session_id":"s","timestamp":"2026-12-02T05:56:59.566Z"}},"id":"p"}"#;
        let table: Vec<(Vec<&str>, Value, Lookup)> = vec![
            (
                vec![MAIN, pascal],
                json!("2026-12-02T05:56:59.566Z"),
                Lookup::Found(Some("First answer.".into())),
            ),
            (vec![MAIN, pascal], json!(100), Lookup::NotYet),
            (
                vec![MAIN, &first_stop],
                json!(100),
                Lookup::Found(Some("First answer.".into())),
            ),
            // This turn's answer and hook line are not written yet: the earlier turn's answer
            // must not stand in for it.
            (vec![MAIN, &first_stop], json!(200), Lookup::NotYet),
            (
                vec![MAIN, &first_stop, LATER, &second_stop, OTHER],
                json!(200),
                Lookup::Found(Some("All done.".into())),
            ),
            (
                vec![MAIN, &first_stop, LATER, &second_stop],
                json!(100),
                Lookup::Found(Some("First answer.".into())),
            ),
            (vec![OTHER, &first_stop], json!(100), Lookup::Found(None)),
        ];
        for (lines, timestamp, expected) in table {
            assert_eq!(
                copilot_answer_before_stop(&lines.join("\n"), &timestamp),
                expected,
                "{lines:?} {timestamp}"
            );
        }
    }

    #[test]
    fn waiting_ends_at_the_patience_without_an_answer() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, format!("{MAIN}\n")).expect("write");
        let waited = copilot_answer_waiting(&path, &json!(1), std::time::Duration::from_millis(20));
        assert_eq!(waited, None);
    }

    #[test]
    fn the_tail_is_the_files_end() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("events.jsonl");
        let filler = format!("{OTHER}\n").repeat((TAIL_BYTES as usize / OTHER.len()) + 10);
        std::fs::write(&path, format!("{MAIN}\n{filler}{LATER}\n")).expect("write");
        let tail = read_tail(&path).expect("tail");
        assert_eq!(tail.len() as u64, TAIL_BYTES);
        assert_eq!(copilot_last_answer(&tail).as_deref(), Some("All done."));
        assert_eq!(read_tail(&dir.path().join("missing")), None);
    }
}
