//! What Baton registers in each harness's hook settings, and how to recognise it afterwards.
//!
//! Every command is `<baton-hook> <harness> <event-word>`, nothing else, so an entry is Baton's
//! exactly when its command's first word names a `baton-hook` binary (wherever it lives: a
//! moved binary is still ours) and its second word names this harness. Subagent stops are never
//! registered: a subagent finishing is not the session's turn ending.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::Harness;

/// Which `SessionStart` sources Baton briefs on: every way a session begins or resumes.
const SESSION_START_MATCHER: &str = "startup|resume|clear|compact";

/// One element Baton keeps in one event's array.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The event key in the harness's `hooks` object, in the harness's spelling.
    pub event: &'static str,
    pub element: Value,
}

/// True for a harness whose client puts no cap of its own on how often a turn-end hook may
/// continue the turn (Codex; Gemini CLI, capped only by its max-turn limit): the nudge rides on
/// its Stop entry only when the person asks for it with `--nudge`.
pub fn nudge_needs_asking(harness: Harness) -> bool {
    matches!(harness, Harness::Codex | Harness::Gemini)
}

/// One row of [`desired`]: the event in each harness family's spelling, the command's event
/// word and the timeout in seconds.
struct Row {
    claude: &'static str,
    /// Cursor's and Copilot CLI's camelCase name.
    camel: &'static str,
    gemini: &'static str,
    word: &'static str,
    seconds: u64,
}

/// The entries Baton wants for `harness`, in the order they are added to a new file.
/// `command` is the binary's path, already shell-quoted; `nudge` is the install's `--nudge`.
///
/// SessionEnd gets 1 s: the harness shares a short budget at exit and the hook only spools a
/// final heartbeat. UserPromptSubmit (Claude Code, Codex; Gemini's BeforeAgent; Copilot's
/// userPromptSubmitted; Cursor's prompt hook is another shape) is recorded only: the hook
/// spools one delivery and exits, so 2 s is far more than it needs. Gemini gets no PreCompress
/// entry: 0.61.0 fires it before every model call, and a compaction changes nothing Baton
/// keeps for Gemini. Copilot CLI's camelCase names pick its camelCase payloads, which carry no
/// event name: the command's word names the event.
pub fn desired(harness: Harness, command: &str, nudge: bool) -> Vec<Entry> {
    let stop_word = if nudge_needs_asking(harness) && nudge {
        "stop --nudge"
    } else {
        "stop"
    };
    let row = |claude, camel, gemini, word, seconds| Row {
        claude,
        camel,
        gemini,
        word,
        seconds,
    };
    let stop_camel = if harness == Harness::Copilot {
        "agentStop"
    } else {
        "stop"
    };
    let mut rows = vec![
        row(
            "SessionStart",
            "sessionStart",
            "SessionStart",
            "session-start",
            10,
        ),
        row("Stop", stop_camel, "AfterAgent", stop_word, 10),
        row("SessionEnd", "sessionEnd", "SessionEnd", "session-end", 1),
    ];
    if harness != Harness::Gemini {
        rows.push(row("PreCompact", "preCompact", "", "pre-compact", 5));
    }
    if harness != Harness::Cursor {
        rows.push(row(
            "UserPromptSubmit",
            "userPromptSubmitted",
            "BeforeAgent",
            "user-prompt-submit",
            2,
        ));
    }
    rows.iter()
        .map(|row| {
            entry(
                harness,
                row,
                &format!("{command} {} {}", harness.name(), row.word),
            )
        })
        .collect()
}

/// The event word of a row's command words (`stop --nudge` → `stop`): a hook's name in
/// Gemini CLI is one word (`/hooks disable <name>`).
fn event_word(words: &str) -> &str {
    words.split(' ').next().unwrap_or(words)
}

/// The element of one row in the harness's own shape.
fn entry(harness: Harness, row: &Row, full_command: &str) -> Entry {
    match harness {
        Harness::Cursor => Entry {
            event: row.camel,
            element: json!({"command": full_command, "timeout": row.seconds}),
        },
        // `command` is Copilot's cross-platform spelling of a shell command.
        Harness::Copilot => Entry {
            event: row.camel,
            element: json!({"type": "command", "command": full_command,
                "timeoutSec": row.seconds}),
        },
        // Gemini's timeout is in milliseconds; its lifecycle matchers compare the source
        // exactly, so SessionStart has none and fires for every source.
        Harness::Gemini => {
            let handler = json!({"type": "command", "name": format!("baton-{}", event_word(row.word)),
                "command": full_command, "timeout": row.seconds * 1000});
            Entry {
                event: row.gemini,
                element: json!({"hooks": [handler]}),
            }
        }
        Harness::ClaudeCode | Harness::Codex => {
            let handler =
                json!({"type": "command", "command": full_command, "timeout": row.seconds});
            let element = if row.claude == "SessionStart" {
                json!({"matcher": SESSION_START_MATCHER, "hooks": [handler]})
            } else {
                json!({"hooks": [handler]})
            };
            Entry {
                event: row.claude,
                element,
            }
        }
    }
}

/// The root `version` member a harness's file needs beside `hooks`: Cursor's and Copilot's
/// format marker.
pub fn format_version(harness: Harness) -> Option<Value> {
    flat(harness).then(|| json!(1))
}

/// True for a harness whose event arrays hold handlers themselves, not matcher groups.
fn flat(harness: Harness) -> bool {
    matches!(harness, Harness::Cursor | Harness::Copilot)
}

/// True when an event-array element is Baton's. A Claude-style matcher group counts only when
/// every handler in it is Baton's, so a group another tool shares is never removed.
pub fn is_baton_element(harness: Harness, element: &Value) -> bool {
    let is_ours = |handler: &Value| {
        handler
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|command| is_baton_command(harness, command))
    };
    if flat(harness) {
        return is_ours(element);
    }
    match element.get("hooks").and_then(Value::as_array) {
        Some(handlers) => !handlers.is_empty() && handlers.iter().all(is_ours),
        None => false,
    }
}

/// True when `command` runs a `baton-hook` binary for `harness` (aliases such as `claude`
/// count, as the hook itself accepts them).
pub fn is_baton_command(harness: Harness, command: &str) -> bool {
    let words = shell_words(command);
    let [binary, harness_word, ..] = words.as_slice() else {
        return false;
    };
    let file_name = Path::new(binary).file_name().and_then(|name| name.to_str());
    matches!(file_name, Some("baton-hook" | "baton-hook.exe"))
        && Harness::parse(harness_word) == Some(harness)
}

/// Splits a command line the way a POSIX shell splits plain words: single quotes, double
/// quotes with backslash escapes, and bare backslash escapes. Enough to read a quoted path.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut characters = command.chars();
    while let Some(character) = characters.next() {
        match character {
            '\'' => {
                in_word = true;
                for quoted in characters.by_ref() {
                    if quoted == '\'' {
                        break;
                    }
                    current.push(quoted);
                }
            }
            '"' => {
                in_word = true;
                while let Some(quoted) = characters.next() {
                    match quoted {
                        '"' => break,
                        '\\' => current.extend(characters.next()),
                        other => current.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                current.extend(characters.next());
            }
            blank if blank.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            other => {
                in_word = true;
                current.push(other);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_recognition_table() {
        let table = [
            (
                "/usr/local/bin/baton-hook claude-code stop",
                Harness::ClaudeCode,
                true,
            ),
            ("baton-hook claude session-start", Harness::ClaudeCode, true),
            (
                "'/opt/My Tools/baton-hook' codex stop --nudge",
                Harness::Codex,
                true,
            ),
            ("\"/opt/x y/baton-hook\" cursor stop", Harness::Cursor, true),
            (
                "/opt/My\\ Tools/baton-hook cursor stop",
                Harness::Cursor,
                true,
            ),
            (
                "/moved/elsewhere/baton-hook codex pre-compact",
                Harness::Codex,
                true,
            ),
            ("/usr/bin/baton-hook codex stop", Harness::ClaudeCode, false),
            (
                "/usr/bin/not-baton-hook claude-code stop",
                Harness::ClaudeCode,
                false,
            ),
            ("echo baton-hook claude-code", Harness::ClaudeCode, false),
            ("/usr/bin/baton-hook", Harness::ClaudeCode, false),
            ("", Harness::Cursor, false),
        ];
        for (command, harness, expected) in table {
            assert_eq!(is_baton_command(harness, command), expected, "{command:?}");
        }
    }

    #[test]
    fn element_recognition_table() {
        let ours = "/b/baton-hook claude-code stop";
        let table = [
            (
                Harness::ClaudeCode,
                json!({"hooks": [{"type": "command", "command": ours}]}),
                true,
            ),
            (
                Harness::ClaudeCode,
                json!({"hooks": [{"command": ours}, {"command": "other-tool"}]}),
                false,
            ),
            (Harness::ClaudeCode, json!({"hooks": []}), false),
            (Harness::ClaudeCode, json!({"command": ours}), false),
            (
                Harness::Cursor,
                json!({"command": "/b/baton-hook cursor stop"}),
                true,
            ),
            (Harness::Cursor, json!({"command": "other-tool"}), false),
            (Harness::Cursor, json!("baton-hook cursor stop"), false),
        ];
        for (harness, element, expected) in table {
            assert_eq!(is_baton_element(harness, &element), expected, "{element}");
        }
    }

    #[test]
    fn the_nudge_changes_only_the_stop_command_of_uncapped_harnesses() {
        let plain = desired(Harness::Codex, "/b/baton-hook", false);
        let nudging = desired(Harness::Codex, "/b/baton-hook", true);
        let stop_command = |entries: &[Entry]| {
            let stop = entries.iter().find(|entry| entry.event == "Stop").unwrap();
            stop.element["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(stop_command(&plain), "/b/baton-hook codex stop");
        assert_eq!(stop_command(&nudging), "/b/baton-hook codex stop --nudge");
        let others = |entries: &[Entry]| {
            entries
                .iter()
                .filter(|entry| entry.event != "Stop")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(others(&plain), others(&nudging));
        assert_eq!(
            stop_command(&desired(Harness::ClaudeCode, "b", true)),
            "b claude-code stop"
        );
        let gemini_stop = |nudge: bool| {
            desired(Harness::Gemini, "b", nudge)
                .into_iter()
                .find(|entry| entry.event == "AfterAgent")
                .map(|entry| entry.element["hooks"][0]["command"].clone())
        };
        assert_eq!(gemini_stop(false), Some(json!("b gemini stop")));
        assert_eq!(gemini_stop(true), Some(json!("b gemini stop --nudge")));
    }

    #[test]
    fn copilot_entries_use_its_camel_case_names_and_seconds() {
        let entries = desired(Harness::Copilot, "/b/baton-hook", true);
        let events: Vec<&str> = entries.iter().map(|entry| entry.event).collect();
        assert_eq!(
            events,
            [
                "sessionStart",
                "agentStop",
                "sessionEnd",
                "preCompact",
                "userPromptSubmitted"
            ]
        );
        assert_eq!(
            entries[1].element,
            json!({"type": "command", "command": "/b/baton-hook copilot stop",
                "timeoutSec": 10}),
            "Copilot caps continuations at 8: no --nudge needed"
        );
        assert_eq!(format_version(Harness::Copilot), Some(json!(1)));
    }

    #[test]
    fn gemini_entries_use_its_event_names_milliseconds_and_no_source_matcher() {
        let entries = desired(Harness::Gemini, "/b/baton-hook", false);
        let events: Vec<&str> = entries.iter().map(|entry| entry.event).collect();
        assert_eq!(
            events,
            ["SessionStart", "AfterAgent", "SessionEnd", "BeforeAgent"]
        );
        let start = &entries[0].element;
        assert_eq!(start.get("matcher"), None, "{start}");
        assert_eq!(start["hooks"][0]["timeout"], 10_000);
        assert_eq!(start["hooks"][0]["name"], "baton-session-start");
        let nudging = desired(Harness::Gemini, "/b/baton-hook", true);
        assert_eq!(nudging[1].element["hooks"][0]["name"], "baton-stop");
        assert_eq!(entries[2].element["hooks"][0]["timeout"], 1_000);
    }

    #[test]
    fn every_entry_is_recognised_and_none_is_a_subagent_stop() {
        for harness in Harness::ALL {
            for nudge in [false, true] {
                for entry in desired(harness, "'/x y/baton-hook'", nudge) {
                    assert!(is_baton_element(harness, &entry.element), "{entry:?}");
                    assert!(!entry.event.to_lowercase().contains("subagent"));
                }
            }
        }
    }
}
