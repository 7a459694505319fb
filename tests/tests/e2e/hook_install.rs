//! `baton-hook install` / `uninstall` with the real binary, on settings files that already hold
//! other tools' hooks, for all three harnesses.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;

use baton_tests::hook::HookHome;

/// Other tools' hooks, in each harness's format, laid out the way people leave them.
const CLAUDE_SETTINGS: &str = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"Stop\": [\n            {\n                \"hooks\": [\n                    { \"type\": \"command\", \"command\": \"~/.local/bin/notify-done\" }\n                ]\n            }\n        ],\n        \"PreToolUse\": [\n            { \"matcher\": \"Bash\", \"hooks\": [ { \"type\": \"command\", \"command\": \"guard.sh\" } ] }\n        ]\n    },\n    \"permissions\": { \"allow\": [\"Bash(git status)\"] }\n}\n";
const CODEX_HOOKS: &str = "{\"description\":\"team hooks\",\"hooks\":{\"SessionStart\":[{\"matcher\":\"startup\",\"hooks\":[{\"type\":\"command\",\"command\":\"/opt/tool/hello\",\"timeout\":5}]}]}}";
const CURSOR_HOOKS: &str = "{\r\n  \"version\": 1,\r\n  \"hooks\": {\r\n    \"afterFileEdit\": [\r\n      { \"command\": \"./hooks/format.sh\" }\r\n    ],\r\n    \"stop\": [\r\n      { \"command\": \"./hooks/audit.sh\", \"loop_limit\": null }\r\n    ]\r\n  }\r\n}";

async fn setup(home: &HookHome, args: &[&str]) -> (bool, String) {
    let output = home
        .command(args)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("baton-hook ran");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn commands(settings: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let Some(events) = settings["hooks"].as_object() else {
        return found;
    };
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            let handlers = group
                .get("hooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_else(|| vec![group.clone()]);
            for handler in handlers {
                if let Some(command) = handler["command"].as_str()
                    && command.contains("baton-hook")
                {
                    found.push(format!(
                        "{event}: {}",
                        command.split_once(' ').map_or("", |(_, rest)| rest)
                    ));
                }
            }
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn install_twice_then_uninstall_gives_back_every_byte_for_all_three_harnesses() {
    let cases = [
        (
            "claude-code",
            ".claude/settings.json",
            CLAUDE_SETTINGS,
            vec![
                "PreCompact: claude-code pre-compact",
                "SessionEnd: claude-code session-end",
                "SessionStart: claude-code session-start",
                "Stop: claude-code stop",
                "UserPromptSubmit: claude-code user-prompt-submit",
            ],
            "folder",
        ),
        (
            "codex",
            ".codex/hooks.json",
            CODEX_HOOKS,
            vec![
                "PreCompact: codex pre-compact",
                "SessionEnd: codex session-end",
                "SessionStart: codex session-start",
                "Stop: codex stop",
                "UserPromptSubmit: codex user-prompt-submit",
            ],
            "/hooks",
        ),
        (
            "cursor",
            ".cursor/hooks.json",
            CURSOR_HOOKS,
            vec![
                "preCompact: cursor pre-compact",
                "sessionEnd: cursor session-end",
                "sessionStart: cursor session-start",
                "stop: cursor stop",
            ],
            "workspace",
        ),
    ];
    for (harness, relative, original, expected, trust_word) in cases {
        let home = HookHome::new("http://127.0.0.1:9", "unused");
        let path = home.path(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, original).expect("original");

        let (ok, printed) = setup(&home, &["install", "--harness", harness]).await;
        assert!(ok, "{harness}: {printed}");
        assert!(
            printed.contains(trust_word),
            "{harness}: prints the trust step: {printed}"
        );
        let installed = std::fs::read_to_string(&path).expect("installed");
        let parsed: Value = serde_json::from_str(&installed).expect("still JSON");
        assert_eq!(commands(&parsed), expected, "{harness}");
        assert!(!installed.contains("SubagentStop") && !installed.contains("subagentStop"));
        let original_value: Value = serde_json::from_str(original).expect("original JSON");
        for (event, groups) in original_value["hooks"].as_object().expect("hooks") {
            let before = groups.as_array().expect("array");
            let after = parsed["hooks"][event].as_array().expect("array");
            assert_eq!(
                &after[..before.len()],
                &before[..],
                "{harness} {event}: others first, unchanged, in order"
            );
        }

        let (ok, _) = setup(&home, &["install", "--harness", harness]).await;
        assert!(ok);
        assert_eq!(
            std::fs::read_to_string(&path).expect("again"),
            installed,
            "{harness}: idempotent"
        );

        let (ok, printed) = setup(&home, &["uninstall", "--harness", harness]).await;
        assert!(ok, "{printed}");
        assert_eq!(
            std::fs::read(&path).expect("after"),
            original.as_bytes(),
            "{harness}: byte-identical"
        );
    }
}

#[tokio::test]
async fn codex_registers_the_stop_nudge_only_on_request_and_project_scope_works() {
    let home = HookHome::new("http://127.0.0.1:9", "unused");
    let project = home.path("repo");
    std::fs::create_dir_all(&project).expect("repo");
    let dir = project.to_str().expect("utf-8");
    let scope = [
        "--harness",
        "codex",
        "--scope",
        "project",
        "--project-dir",
        dir,
    ];
    let (ok, _) = setup(&home, &[&["install"][..], &scope, &["--nudge"]].concat()).await;
    assert!(ok);
    let path = project.join(".codex/hooks.json");
    let parsed: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("created")).expect("json");
    assert!(commands(&parsed).contains(&"Stop: codex stop --nudge".to_string()));
    assert_eq!(
        parsed.as_object().expect("root").keys().collect::<Vec<_>>(),
        vec!["hooks"],
        "Codex refuses other root keys"
    );
    let (ok, _) = setup(&home, &[&["uninstall"][..], &scope].concat()).await;
    assert!(ok);
    assert!(!path.exists(), "a file install created is removed");
    assert!(
        !project.join(".codex").exists(),
        "and the folder it created"
    );
}

#[tokio::test]
async fn a_settings_file_that_is_a_symbolic_link_is_refused_untouched() {
    let home = HookHome::new("http://127.0.0.1:9", "unused");
    let real = home.path("dotfiles/settings.json");
    std::fs::create_dir_all(real.parent().expect("parent")).expect("dir");
    std::fs::write(&real, CLAUDE_SETTINGS).expect("real");
    std::fs::create_dir_all(home.path(".claude")).expect("dir");
    std::os::unix::fs::symlink(&real, home.path(".claude/settings.json")).expect("link");
    let output = home
        .command(&["install", "--harness", "claude-code"])
        .output()
        .await
        .expect("ran");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("symbolic link"),
        "{output:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&real).expect("real"),
        CLAUDE_SETTINGS
    );
}

#[tokio::test]
async fn uninstall_leaves_no_sidecar_running_and_a_later_close_still_arrives() {
    let baton = baton_tests::Baton::start().await;
    let (tenant, api) = baton.tenant_client("uninstall").await;
    // A stand-in client process the sidecar watches.
    let mut client = Command::new("sleep")
        .arg("600")
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("client");
    let pid = client.id().expect("pid");
    let mut home = HookHome::new(&baton.base_url, &tenant.api_key);
    home.set("BATON_HOOK_SIDECAR", "on");
    home.set("CLAUDE_PID", &pid.to_string());
    let (ok, _) = setup(&home, &["install", "--harness", "claude-code"]).await;
    assert!(ok);
    let start = json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"});
    let printed = home
        .run(&["claude-code", "session-start"], &start)
        .await
        .json()
        .expect("context");
    let context = printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    let at = context.find("sessionRunId = ").expect("run id") + 15;
    let run_id = context[at..at + 36].to_string();
    let claims = home.state_dir().join("sidecars");
    let started = Instant::now();
    let sidecar: u32 = loop {
        let pid = std::fs::read_dir(&claims)
            .ok()
            .and_then(|mut entries| entries.next())
            .and_then(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
            .and_then(|text| text.trim().parse().ok());
        if let Some(pid) = pid {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sidecar started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(std::path::Path::new(&format!("/proc/{sidecar}")).exists());
    let (ok, printed) = setup(&home, &["uninstall", "--harness", "claude-code"]).await;
    assert!(ok);
    assert!(printed.contains("stopped 1 liveness sidecar"), "{printed}");
    let gone = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    };
    assert!(gone(sidecar), "no sidecar left");
    assert!(std::fs::read_dir(&claims).map_or(true, |mut entries| entries.next().is_none()));
    assert!(!home.path(".claude/settings.json").exists());

    // The running client keeps the hooks it loaded: its SessionEnd spools a close, and with no
    // sidecar left to drain it the hook's own detached drain delivers it.
    let end =
        json!({"session_id": "s", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"});
    home.run(&["claude-code", "session-end"], &end).await;
    let started = Instant::now();
    loop {
        let row = api.get(&format!("/api/v1/agent-sessions/{run_id}")).await;
        if row.body["closedAt"].is_string() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the close never arrived: {:?}",
            row.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(home.spooled().is_empty());
    let _ = client.kill().await;
    assert!(
        std::fs::metadata(home.state_dir())
            .expect("state")
            .permissions()
            .mode()
            & 0o077
            == 0
    );
}
