use std::collections::HashMap;

use super::*;

fn proc(pid: u32, ppid: u32, comm: &str, exe: &str, argv: &[&str]) -> ProcInfo {
    ProcInfo {
        pid,
        ppid,
        comm: comm.to_string(),
        exe: Some(exe.to_string()),
        argv: argv.iter().map(|arg| arg.to_string()).collect(),
        start: format!("{}", 1000 + pid),
        exited: false,
    }
}

fn table(rows: Vec<ProcInfo>) -> HashMap<u32, ProcInfo> {
    rows.into_iter().map(|row| (row.pid, row)).collect()
}

/// A case: its name, the harness, the process table, the hook's parent, the client expected.
type Case = (
    &'static str,
    Harness,
    HashMap<u32, ProcInfo>,
    u32,
    Option<u32>,
);

const HOOK_CMD: &str = "/usr/bin/baton-hook codex session-start";

#[test]
fn the_walk_steps_past_shells_and_wrappers_to_the_harness() {
    let claude_native = proc(
        50,
        10,
        "claude",
        "/opt/n/@anthropic-ai/claude-code/bin/claude.exe",
        &["claude", "-p"],
    );
    let claude_node = proc(
        50,
        10,
        "node",
        "/usr/bin/node",
        &[
            "node",
            "--no-warnings",
            "/opt/n/@anthropic-ai/claude-code/cli.js",
        ],
    );
    let codex = proc(
        50,
        10,
        "codex",
        "/opt/n/@openai/codex-linux-x64/vendor/bin/codex",
        &["codex", "exec"],
    );
    let codex_wrapper = proc(
        40,
        10,
        "node",
        "/usr/bin/node",
        &["node", "/opt/n/.bin/codex"],
    );
    let cursor_agent = proc(
        50,
        10,
        "cursor-agent",
        "/opt/c/cursor-agent",
        &["cursor-agent"],
    );
    let cursor_ide = proc(
        50,
        10,
        "Cursor Helper (",
        "/usr/share/cursor/cursor",
        &["/usr/share/cursor/cursor", "--type=utility"],
    );
    // Gemini CLI 0.61.0 as observed: `node …/.bin/gemini` relaunches itself as
    // `node --max-old-space-size=N …/.bin/gemini`, which runs `bash -c COMMAND` (exec'd away).
    let gemini_outer = proc(
        40,
        10,
        "node",
        "/usr/bin/node",
        &["node", "/opt/n/.bin/gemini", "-p", "hi"],
    );
    let gemini_inner = proc(
        50,
        40,
        "node",
        "/usr/bin/node",
        &[
            "/usr/bin/node",
            "--max-old-space-size=12052",
            "/opt/n/.bin/gemini",
            "-p",
            "hi",
        ],
    );
    let gemini_bundle = proc(
        50,
        10,
        "node",
        "/usr/bin/node",
        &["node", "/opt/n/@google/gemini-cli/bundle/gemini.js"],
    );
    // A shebang script named after the harness: comm is its name, exe the shell.
    let codex_script = proc(50, 10, "codex", "/usr/bin/dash", &["/bin/sh", "/t/codex"]);
    let dash = |pid, ppid| {
        proc(
            pid,
            ppid,
            "sh",
            "/usr/bin/dash",
            &["/bin/sh", "-c", HOOK_CMD],
        )
    };
    let env = |pid, ppid| {
        proc(
            pid,
            ppid,
            "env",
            "/usr/bin/env",
            &["env", "A=1", "baton-hook"],
        )
    };
    let timeout = |pid, ppid| proc(pid, ppid, "timeout", "/usr/bin/timeout", &["timeout", "5"]);
    let npx = |pid, ppid| proc(pid, ppid, "npm exec", "/usr/bin/node", &["npm exec", "x"]);
    let runner = proc(
        50,
        10,
        "cargo-nextest",
        "/usr/bin/cargo-nextest",
        &["cargo-nextest"],
    );
    let terminal = proc(10, 1, "tmux: server", "/usr/bin/tmux", &["tmux"]);
    let with = |client: &ProcInfo, chain: Vec<ProcInfo>| {
        let mut rows = vec![client.clone(), terminal.clone()];
        rows.extend(chain);
        table(rows)
    };
    let cases: Vec<Case> = vec![
        (
            "direct child of claude",
            Harness::ClaudeCode,
            with(&claude_native, vec![]),
            50,
            Some(50),
        ),
        (
            "claude through a non-exec'ing dash",
            Harness::ClaudeCode,
            with(&claude_native, vec![dash(60, 50)]),
            60,
            Some(50),
        ),
        (
            "node-hosted claude through sh, env and timeout",
            Harness::ClaudeCode,
            with(
                &claude_node,
                vec![dash(60, 50), env(61, 60), timeout(62, 61)],
            ),
            62,
            Some(50),
        ),
        (
            "codex direct",
            Harness::Codex,
            with(&codex, vec![]),
            50,
            Some(50),
        ),
        (
            "codex native under its node wrapper: the native one",
            Harness::Codex,
            table(vec![
                proc(50, 40, "codex", "/opt/codex", &["codex"]),
                codex_wrapper.clone(),
                terminal.clone(),
            ]),
            50,
            Some(50),
        ),
        (
            "codex through sh and npx",
            Harness::Codex,
            with(&codex, vec![npx(59, 50), dash(60, 59)]),
            60,
            Some(50),
        ),
        (
            "a stand-in codex script through sh",
            Harness::Codex,
            with(&codex_script, vec![dash(60, 50)]),
            60,
            Some(50),
        ),
        (
            "gemini: the relaunched inner node, not the outer one",
            Harness::Gemini,
            table(vec![
                gemini_inner.clone(),
                gemini_outer.clone(),
                terminal.clone(),
                dash(60, 50),
            ]),
            60,
            Some(50),
        ),
        (
            "gemini run from its package's bundle",
            Harness::Gemini,
            with(&gemini_bundle, vec![]),
            50,
            Some(50),
        ),
        (
            "a gemini process is not Claude Code's client",
            Harness::ClaudeCode,
            with(&gemini_inner, vec![dash(60, 50)]),
            60,
            None,
        ),
        (
            "cursor-agent through sh",
            Harness::Cursor,
            with(&cursor_agent, vec![dash(60, 50)]),
            60,
            Some(50),
        ),
        (
            "the Cursor IDE's helper",
            Harness::Cursor,
            with(&cursor_ide, vec![dash(60, 50)]),
            60,
            Some(50),
        ),
        (
            "the other harness's process is not this client",
            Harness::Cursor,
            with(&claude_native, vec![dash(60, 50)]),
            60,
            None,
        ),
        (
            "a test runner is not a client: no client, not the runner",
            Harness::Codex,
            with(&runner, vec![dash(60, 50)]),
            60,
            None,
        ),
        (
            "the walk never passes a non-wrapper to reach a harness above it",
            Harness::Codex,
            table(vec![
                codex.clone(),
                proc(55, 50, "vim", "/usr/bin/vim", &["vim"]),
                dash(60, 55),
                terminal.clone(),
            ]),
            60,
            None,
        ),
        (
            "a shell already gone: no client",
            Harness::Codex,
            with(&codex, vec![]),
            60,
            None,
        ),
        (
            "init is never the client",
            Harness::Codex,
            table(vec![]),
            1,
            None,
        ),
    ];
    for (name, harness, rows, parent, expected) in cases {
        let found = walk(harness, parent, |pid| rows.get(&pid).cloned());
        assert_eq!(
            found.as_ref().map(|identity| identity.pid),
            expected,
            "{name}"
        );
        if let Some(found) = found {
            assert_eq!(
                found.start, rows[&found.pid].start,
                "{name}: start recorded"
            );
        }
    }
}

#[test]
fn a_walk_through_a_cycle_or_a_zombie_ends() {
    let rows = table(vec![
        proc(60, 61, "sh", "/bin/sh", &["sh"]),
        proc(61, 60, "bash", "/bin/bash", &["bash"]),
    ]);
    assert_eq!(
        walk(Harness::Codex, 60, |pid| rows.get(&pid).cloned()),
        None
    );
    let mut zombie = proc(50, 10, "codex", "/opt/codex", &["codex"]);
    zombie.exited = true;
    let rows = table(vec![zombie]);
    assert_eq!(
        walk(Harness::Codex, 50, |pid| rows.get(&pid).cloned()),
        None
    );
}

#[test]
fn claude_pid_counts_only_for_a_live_process_started_before_the_hook() {
    let claude = proc(50, 10, "claude", "/opt/claude", &["claude"]);
    let mut dead = claude.clone();
    dead.exited = true;
    let cases = [
        (
            "started before the hook",
            Some(claude.clone()),
            Some("2000"),
            Some(50),
        ),
        (
            "started at the same tick",
            Some(claude.clone()),
            Some("1050"),
            Some(50),
        ),
        (
            "a pid reused after the hook started",
            Some(claude.clone()),
            Some("1049"),
            None,
        ),
        ("gone", None, Some("2000"), None),
        ("a zombie", Some(dead), Some("2000"), None),
        (
            "no comparable start: trusted",
            Some(claude.clone()),
            None,
            Some(50),
        ),
    ];
    for (name, info, hook_start, expected) in cases {
        let identity = claimed(info, hook_start);
        assert_eq!(identity.map(|identity| identity.pid), expected, "{name}");
    }
}

#[test]
fn a_recorded_client_is_the_same_process_only_with_the_same_start() {
    let recorded = Identity {
        pid: 50,
        start: "1050".to_string(),
    };
    let same = proc(50, 10, "codex", "/opt/codex", &["codex"]);
    let mut recycled = same.clone();
    recycled.start = "9999".to_string();
    let mut zombie = same.clone();
    zombie.exited = true;
    let cases = [
        ("the same process", Some(same), true),
        ("a recycled pid: another start time", Some(recycled), false),
        ("a zombie", Some(zombie), false),
        ("gone", None, false),
    ];
    for (name, now, expected) in cases {
        assert_eq!(same_process(&recorded, now.as_ref()), expected, "{name}");
    }
}
