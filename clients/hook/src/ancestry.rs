//! Which process is the client: a walk up the hook's ancestry, as pure decisions over a
//! process table.
//!
//! Rules:
//! * `CLAUDE_PID`, when set, wins — but only for a live process that started no later than
//!   the hook itself: Claude Code set the variable and then started the hook, so a process
//!   that started after the hook holds a reused pid and is not the client.
//! * Otherwise the walk starts at the hook's parent and steps past shells and launch wrappers
//!   ([`WRAPPERS`]: `sh`, `dash`, `bash`, `env`, `nice`, `timeout`, `nohup`, `npx`, a `node`
//!   whose script is not a harness, ...) until it reaches a process that names the harness
//!   (per harness, [`names_harness`]): `claude`, `codex`, `cursor` / `cursor-agent`, `gemini`, or a
//!   node-hosted CLI whose `comm` is `node` but whose script path names one. Any other
//!   process ends the walk with no client: watching a process that is not the client (a test
//!   runner, a terminal) would keep a session live for the wrong reason, and watching a
//!   shell that exits with the hook would end liveness at once. No client means no sidecar;
//!   the lease alone decides.
//! * The client is recorded as (pid, start time), so a pid the kernel hands to another
//!   process later is never taken for it ([`same_process`]).

use crate::harness::Harness;

/// A process's start, as an opaque token: `/proc/<pid>/stat` field 22 (clock ticks since
/// boot) on Linux, `ps -o lstart=` elsewhere. Only ever compared for equality.
pub type StartTime = String;

/// One process as the walk sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    /// The kernel's short name (`comm`): for a script run through its shebang, the script's
    /// file name.
    pub comm: String,
    /// The executable's path, when known.
    pub exe: Option<String>,
    pub argv: Vec<String>,
    pub start: StartTime,
    /// A zombie (or dead) process.
    pub exited: bool,
}

/// The client process, as recorded for the sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub pid: u32,
    pub start: StartTime,
}

/// Processes that run a command for someone else: the walk steps past them.
pub const WRAPPERS: [&str; 22] = [
    "sh", "dash", "bash", "zsh", "ksh", "mksh", "fish", "busybox", "env", "nice", "ionice",
    "timeout", "nohup", "setsid", "stdbuf", "chrt", "taskset", "time", "flock", "npx", "npm",
    "pnpm",
];

/// Interpreters whose script decides what the process is.
pub const INTERPRETERS: [&str; 7] = ["node", "nodejs", "bun", "deno", "python", "python3", "tsx"];

/// The deepest walk: a process tree this deep between harness and hook is not a launch path.
pub const MAX_DEPTH: usize = 16;

/// `claude.exe`, `codex.js`, `Cursor` → `claude`, `codex`, `cursor`.
fn stem(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    for suffix in [".exe", ".js", ".cjs", ".mjs"] {
        if let Some(stripped) = base.strip_suffix(suffix) {
            return stripped.to_string();
        }
    }
    base
}

fn is_harness_name(harness: Harness, name: &str) -> bool {
    let name = stem(name);
    match harness {
        Harness::ClaudeCode => name == "claude",
        Harness::Codex => name == "codex",
        // cursor, cursor-agent, and the IDE's "Cursor Helper (Plugin)" processes.
        Harness::Cursor => name.starts_with("cursor"),
        // Gemini CLI relaunches itself: `node …/gemini` starts a second `node … …/gemini`,
        // which runs the hooks; the walk meets (and watches) that inner one first.
        Harness::Gemini => name == "gemini",
        // The native binary npm's loader starts; hooks are its direct children.
        Harness::Copilot => name == "copilot",
    }
}

/// The package folder a node-hosted CLI runs from names it too.
fn is_harness_package(harness: Harness, path: &str) -> bool {
    let path = path.to_ascii_lowercase();
    match harness {
        Harness::ClaudeCode => path.contains("/@anthropic-ai/claude-code"),
        Harness::Codex => path.contains("/@openai/codex"),
        Harness::Cursor => path.contains("/cursor-agent/") || path.contains("/cursor/"),
        Harness::Gemini => path.contains("/@google/gemini-cli"),
        Harness::Copilot => path.contains("/@github/copilot"),
    }
}

/// The script an interpreter runs: its first argument that is not an option.
fn script(info: &ProcInfo) -> Option<&str> {
    info.argv
        .iter()
        .skip(1)
        .map(String::as_str)
        .find(|arg| !arg.starts_with('-'))
}

fn program_names(info: &ProcInfo) -> impl Iterator<Item = &str> {
    [
        Some(info.comm.as_str()),
        info.exe.as_deref(),
        info.argv.first().map(String::as_str),
    ]
    .into_iter()
    .flatten()
}

fn is_interpreter(info: &ProcInfo) -> bool {
    program_names(info).any(|name| {
        let name = stem(name);
        INTERPRETERS.iter().any(|interpreter| name == *interpreter)
    })
}

/// True when `info` is the harness's own process.
pub fn names_harness(harness: Harness, info: &ProcInfo) -> bool {
    if is_interpreter(info) {
        return script(info).is_some_and(|script| {
            is_harness_name(harness, script) || is_harness_package(harness, script)
        });
    }
    // A shebang script's comm is its own name; the kernel cuts comm to 15 bytes.
    program_names(info).any(|name| is_harness_name(harness, name))
}

/// True when `info` only launched the hook for someone else.
pub fn is_wrapper(info: &ProcInfo) -> bool {
    // A node that is not the harness is a wrapper (npx, an npm bin shim).
    is_interpreter(info)
        || program_names(info).any(|name| {
            let name = stem(name);
            WRAPPERS.iter().any(|wrapper| name == *wrapper)
        })
}

/// Walks from `parent` up through `table` to the harness's process.
pub fn walk(
    harness: Harness,
    parent: u32,
    table: impl Fn(u32) -> Option<ProcInfo>,
) -> Option<Identity> {
    let mut pid = parent;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let info = table(pid)?;
        if info.exited {
            return None;
        }
        if names_harness(harness, &info) {
            return Some(Identity {
                pid: info.pid,
                start: info.start,
            });
        }
        if !is_wrapper(&info) {
            return None;
        }
        pid = info.ppid;
    }
    None
}

/// `CLAUDE_PID` as an identity: a live process that started no later than `hook_start`, the
/// hook's own start (ticks compare numerically; other tokens cannot be ordered and are
/// trusted).
pub fn claimed(info: Option<ProcInfo>, hook_start: Option<&str>) -> Option<Identity> {
    let info = info.filter(|info| !info.exited)?;
    let started_before = match (info.start.parse::<u64>(), hook_start.map(str::parse::<u64>)) {
        (Ok(claimed), Some(Ok(hook))) => claimed <= hook,
        // Without comparable numbers there is nothing to refute the variable with.
        _ => true,
    };
    started_before.then_some(Identity {
        pid: info.pid,
        start: info.start,
    })
}

/// True while the recorded client is the process now holding its pid.
pub fn same_process(recorded: &Identity, now: Option<&ProcInfo>) -> bool {
    now.is_some_and(|now| !now.exited && now.pid == recorded.pid && now.start == recorded.start)
}

#[cfg(test)]
#[path = "ancestry_tests.rs"]
mod tests;
