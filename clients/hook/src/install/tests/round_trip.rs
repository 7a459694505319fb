//! install → install → uninstall gives back the original bytes, for every harness and layout.

use std::fs;

use serde_json::Value;

use super::{COMMAND, Fixture, baton_elements};
use crate::harness::Harness;
use crate::install::{Outcome, install, uninstall};

/// Original files, with `EVENT` (the stop event), `OTHER_EVENT` and `OTHER` (another tool's
/// element) filled in per harness.
const ORIGINALS: &[(&str, &str)] = &[
    ("empty object", "{}"),
    ("empty object and newline", "{}\n"),
    ("empty object with a space", "{ }\n"),
    (
        "root keys only",
        "{\n  \"description\": \"team hooks\"\n}\n",
    ),
    (
        "other event, two spaces",
        "{\n  \"hooks\": {\n    \"OTHER_EVENT\": [\n      OTHER\n    ]\n  }\n}\n",
    ),
    (
        "same event, four spaces",
        "{\n    \"hooks\": {\n        \"EVENT\": [\n            OTHER\n        ]\n    }\n}\n",
    ),
    (
        "tabs and an empty array",
        "{\n\t\"hooks\": {\n\t\t\"EVENT\": [\n\t\t\tOTHER\n\t\t],\n\t\t\"OTHER_EVENT\": []\n\t}\n}\n",
    ),
    (
        "crlf",
        "{\r\n  \"hooks\": {\r\n    \"OTHER_EVENT\": [\r\n      OTHER\r\n    ]\r\n  }\r\n}\r\n",
    ),
    (
        "no trailing newline",
        "{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"EVENT\": [\n      OTHER\n    ]\n  }\n}",
    ),
    (
        "one line",
        "{\"hooks\":{\"EVENT\":[OTHER],\"OTHER_EVENT\":[OTHER]}}",
    ),
    (
        "one line, spaced",
        "{\"version\": 1, \"hooks\": {\"EVENT\": [OTHER]}}",
    ),
    (
        "empty containers",
        "{\n  \"hooks\": {\n    \"EVENT\": [ ]\n  },\n  \"other\": true\n}\n",
    ),
    ("empty hooks", "{\n  \"hooks\": {}\n}"),
];

fn fill(harness: Harness, template: &str) -> String {
    let (event, other_event, other) = match harness {
        Harness::Cursor => ("stop", "preToolUse", r#"{"command": "other-tool check"}"#),
        Harness::Copilot => (
            "agentStop",
            "preToolUse",
            r#"{"type": "command", "bash": "other-tool check"}"#,
        ),
        _ => (
            "Stop",
            "PreToolUse",
            r#"{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool check"}]}"#,
        ),
    };
    template
        .replace("OTHER_EVENT", other_event)
        .replace("EVENT", event)
        .replace("OTHER", other)
}

fn named(harness: Harness, name: &str) -> String {
    let (_, template) = ORIGINALS.iter().find(|(known, _)| *known == name).unwrap();
    fill(harness, template)
}

fn root_keys(text: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(text).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn install_twice_then_uninstall_restores_every_original() {
    for harness in Harness::ALL {
        let mut cases: Vec<(&str, Option<String>)> = vec![("missing file", None)];
        cases.extend(
            ORIGINALS
                .iter()
                .map(|(name, text)| (*name, Some(fill(harness, text)))),
        );
        for (name, original) in cases {
            let case = format!("{} / {name}", harness.name());
            let fixture = Fixture::new(harness, original.as_deref());
            assert_eq!(
                install(&fixture.target, &fixture.options).unwrap(),
                Outcome::Installed,
                "{case}"
            );
            let installed = fixture.text().unwrap();
            let parsed: Value = serde_json::from_str(&installed).unwrap_or_else(|error| {
                panic!("{case}: installed file is not JSON ({error}):\n{installed}")
            });
            for entry in fixture.wanted() {
                let ours = baton_elements(harness, &parsed, entry.event);
                assert_eq!(ours, vec![entry.element.clone()], "{case}: {}", entry.event);
            }
            assert!(!installed.to_lowercase().contains("subagent"), "{case}");
            let before = original.clone().unwrap_or_default();
            assert_eq!(
                installed.matches("other-tool check").count(),
                before.matches("other-tool check").count(),
                "{case}"
            );
            assert_looks_native(&case, &before, &installed);
            let before_keys = if original.is_some() {
                root_keys(&before)
            } else {
                vec![]
            };
            let added: Vec<String> = root_keys(&installed)
                .into_iter()
                .filter(|key| !before_keys.contains(key))
                .collect();
            let mut expected_added = Vec::new();
            let had = |key: &str| before_keys.iter().any(|known| known == key);
            let versioned = matches!(harness, Harness::Cursor | Harness::Copilot);
            if versioned && !had("version") && !had("hooks") {
                expected_added.push("version");
            }
            if !had("hooks") {
                expected_added.push("hooks");
            }
            assert_eq!(added, expected_added, "{case}");

            assert_eq!(
                install(&fixture.target, &fixture.options).unwrap(),
                Outcome::AlreadyInstalled,
                "{case}"
            );
            assert_eq!(
                fixture.text().unwrap(),
                installed,
                "{case}: second install changed bytes"
            );

            let state_dir = &fixture.options.state_dir;
            assert_eq!(
                uninstall(&fixture.target, state_dir).unwrap(),
                Outcome::Uninstalled,
                "{case}"
            );
            assert_eq!(
                fixture.text(),
                original,
                "{case}: uninstall did not restore the bytes"
            );
            assert!(
                !fixture.manifest_path().exists(),
                "{case}: manifest left behind"
            );
            if original.is_none() {
                assert!(
                    !fixture.path().parent().unwrap().exists(),
                    "{case}: directory left behind"
                );
            }
        }
    }
}

/// Inserted text follows the file's line endings and indentation; other tools' text is intact.
fn assert_looks_native(case: &str, before: &str, installed: &str) {
    if before.contains("\r\n") {
        assert_eq!(
            installed.matches('\n').count(),
            installed.matches("\r\n").count(),
            "{case}"
        );
    }
    if before.contains("\n\t") {
        assert!(
            !installed.contains("\n "),
            "{case}: spaces in a tab-indented file"
        );
    }
    if !before.is_empty() && !before.contains('\n') && before != "{}" {
        assert!(
            !installed.contains('\n'),
            "{case}: line breaks in a one-line file"
        );
    }
    let other_groups = [
        "{\"matcher\": \"Bash\"",
        "{\"command\": \"other-tool check\"}",
    ];
    for group in other_groups {
        assert_eq!(
            installed.matches(group).count(),
            before.matches(group).count(),
            "{case}"
        );
    }
}

#[test]
fn a_new_claude_file_is_pretty_printed() {
    let fixture = Fixture::new(Harness::ClaudeCode, None);
    install(&fixture.target, &fixture.options).unwrap();
    let group = |event: &str, matcher: &str, word: &str, timeout: u32| {
        format!(
            "    \"{event}\": [\n      {{\n{matcher}        \"hooks\": [\n          {{\n            \
             \"type\": \"command\",\n            \"command\": \"{COMMAND} claude-code {word}\",\n            \
             \"timeout\": {timeout}\n          }}\n        ]\n      }}\n    ]"
        )
    };
    let matcher = "        \"matcher\": \"startup|resume|clear|compact\",\n";
    let expected = format!(
        "{{\n  \"hooks\": {{\n{},\n{},\n{},\n{},\n{}\n  }}\n}}\n",
        group("SessionStart", matcher, "session-start", 10),
        group("Stop", "", "stop", 10),
        group("SessionEnd", "", "session-end", 1),
        group("PreCompact", "", "pre-compact", 5),
        group("UserPromptSubmit", "", "user-prompt-submit", 2),
    );
    assert_eq!(fixture.text().unwrap(), expected);
}

#[test]
fn other_tools_entries_keep_their_text_and_order() {
    let original = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \
                    \"command\": \"first\"}]},\n      {\"hooks\":[{\"command\":\"second\"}]}\n    ],\n    \
                    \"Notification\": [{\"hooks\": [{\"command\": \"third\"}]}]\n  }\n}\n";
    let fixture = Fixture::new(Harness::ClaudeCode, Some(original));
    install(&fixture.target, &fixture.options).unwrap();
    let installed = fixture.text().unwrap();
    let stop_others = "{\"hooks\": [{\"type\": \"command\", \"command\": \"first\"}]},\n      \
                       {\"hooks\":[{\"command\":\"second\"}]}";
    let notification = "\"Notification\": [{\"hooks\": [{\"command\": \"third\"}]}]";
    assert!(installed.contains(stop_others), "{installed}");
    assert!(installed.contains(notification), "{installed}");
    let baton_stop = installed.find("claude-code stop").unwrap();
    assert!(
        installed.find("second").unwrap() < baton_stop,
        "Baton's group goes last"
    );
}

#[test]
fn codex_nudge_is_registered_only_on_request() {
    let original = named(Harness::Codex, "same event, four spaces");
    let mut fixture = Fixture::new(Harness::Codex, Some(&original));
    install(&fixture.target, &fixture.options).unwrap();
    let plain = fixture.text().unwrap();
    assert!(plain.contains(&format!("\"{COMMAND} codex stop\"")));
    assert!(!plain.contains("--nudge"));

    fixture.options.nudge = true;
    assert_eq!(
        install(&fixture.target, &fixture.options).unwrap(),
        Outcome::Installed
    );
    let nudging = fixture.text().unwrap();
    assert!(nudging.contains(&format!("\"{COMMAND} codex stop --nudge\"")));
    assert!(!nudging.contains(&format!("\"{COMMAND} codex stop\"")));
    let parsed: Value = serde_json::from_str(&nudging).unwrap();
    assert_eq!(baton_elements(Harness::Codex, &parsed, "Stop").len(), 1);
    assert_eq!(parsed["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_eq!(root_keys(&nudging), ["hooks"]);

    uninstall(&fixture.target, &fixture.options.state_dir).unwrap();
    assert_eq!(fixture.text().unwrap(), original);
}

#[test]
fn a_moved_binary_is_recognised_and_updated() {
    let original = "{\n  \"hooks\": {}\n}\n";
    let mut fixture = Fixture::new(Harness::Cursor, Some(original));
    fixture.options.command = "/old/place/baton-hook".to_string();
    install(&fixture.target, &fixture.options).unwrap();
    fixture.options.command = COMMAND.to_string();
    assert_eq!(
        install(&fixture.target, &fixture.options).unwrap(),
        Outcome::Installed
    );
    let moved = fixture.text().unwrap();
    assert!(!moved.contains("/old/place"), "{moved}");
    assert_eq!(moved.matches("baton-hook cursor").count(), 4);
    uninstall(&fixture.target, &fixture.options.state_dir).unwrap();
    assert_eq!(fixture.text().unwrap(), original);
}

#[test]
fn partial_and_duplicated_entries_are_brought_to_the_wanted_set() {
    let ours = format!(
        "{{\"hooks\": [{{\"type\": \"command\", \"command\": \"{COMMAND} claude-code stop\", \"timeout\": 10}}]}}"
    );
    let original = format!(
        "{{\n  \"hooks\": {{\n    \"Stop\": [\n      {ours},\n      {ours}\n    ]\n  }}\n}}\n"
    );
    let fixture = Fixture::new(Harness::ClaudeCode, Some(&original));
    assert_eq!(
        install(&fixture.target, &fixture.options).unwrap(),
        Outcome::Installed
    );
    let installed = fixture.text().unwrap();
    assert!(installed.starts_with(&format!(
        "{{\n  \"hooks\": {{\n    \"Stop\": [\n      {ours}\n    ],\n"
    )));
    let parsed: Value = serde_json::from_str(&installed).unwrap();
    for entry in fixture.wanted() {
        assert_eq!(
            baton_elements(Harness::ClaudeCode, &parsed, entry.event).len(),
            1
        );
    }
}

#[test]
fn uninstall_without_a_manifest_removes_entries_but_keeps_containers() {
    let fixture = Fixture::new(Harness::ClaudeCode, Some("{}\n"));
    install(&fixture.target, &fixture.options).unwrap();
    fs::remove_file(fixture.manifest_path()).unwrap();
    assert_eq!(
        uninstall(&fixture.target, &fixture.options.state_dir).unwrap(),
        Outcome::Uninstalled
    );
    let left = fixture.text().unwrap();
    assert!(!left.contains("baton-hook"), "{left}");
    let parsed: Value = serde_json::from_str(&left).unwrap();
    assert_eq!(parsed["hooks"]["Stop"], Value::Array(vec![]));
}

#[test]
fn uninstall_without_baton_entries_changes_nothing() {
    let original = named(Harness::ClaudeCode, "other event, two spaces");
    let fixture = Fixture::new(Harness::ClaudeCode, Some(&original));
    let state_dir = &fixture.options.state_dir;
    assert_eq!(
        uninstall(&fixture.target, state_dir).unwrap(),
        Outcome::NotInstalled
    );
    assert_eq!(fixture.text().unwrap(), original);
    let missing = Fixture::new(Harness::Codex, None);
    let outcome = uninstall(&missing.target, &missing.options.state_dir).unwrap();
    assert_eq!(outcome, Outcome::NotInstalled);
    assert!(missing.text().is_none());
}
