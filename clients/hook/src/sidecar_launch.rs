//! Starting the sidecar: who to watch, and the command line that tells it.
//!
//! SessionStart calls [`ensure`] after its lifecycle call. It finds the client
//! ([`crate::process::client`]); with none found it logs one line and starts nothing. A claim
//! held by a live sidecar for the same session and client means one already watches. The
//! sidecar is started detached (its own process group, no stdio, never waited for) with the
//! client's pid *and* start time, which it checks on every poll.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::claims::{claim_path, holder};
use crate::context::Hook;
use crate::dotted_version;
use crate::harness::Harness;
use crate::process;

/// What the sidecar is told on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub agent: String,
    pub session_id: String,
    pub client_pid: u32,
    /// The client's start time as recorded at SessionStart (read now when absent).
    pub client_start: Option<String>,
    pub client: String,
    pub host_client: Option<String>,
    pub client_version: Option<String>,
    /// The session's transcript (SessionStart's `transcript_path`): tailed on each pulse.
    pub transcript_path: Option<String>,
}

/// Starts `baton-hook <args>` detached: its own process group, no stdio, never waited for.
pub fn spawn_detached(args: &[&str]) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}

/// Makes sure a sidecar watches this session's client process (unless
/// `BATON_HOOK_SIDECAR=off`, for hosts where a detached process is unwelcome: liveness then
/// rests on hook activity alone). Called after the lifecycle call.
pub fn ensure(hook: &Hook, session_id: &str, transcript_path: Option<&str>) {
    if hook.env.get("BATON_HOOK_SIDECAR") == Some("off") {
        return;
    }
    let Some(client) = process::client(&hook.env, hook.harness) else {
        // Watching the shell that launched the hook would end liveness with the hook.
        hook.log("client_not_found");
        return;
    };
    let path = claim_path(&hook.state_dir, hook.agent(), session_id, &client);
    if holder(&path).is_some_and(process::alive) {
        return;
    }
    let pid = client.pid.to_string();
    let mut args = vec![
        "sidecar",
        "--agent",
        hook.agent(),
        "--session-id",
        session_id,
        "--client-pid",
        &pid,
        "--client-start",
        &client.start,
        "--client",
        hook.format.name(),
    ];
    if hook.format != hook.harness {
        args.extend(["--host-client", hook.harness.name()]);
    }
    let version = environment_version(hook);
    if let Some(version) = version.as_deref() {
        args.extend(["--client-version", version]);
    }
    if let Some(path) = transcript_path {
        args.extend(["--transcript-path", path]);
    }
    spawn_detached(&args);
}

/// The variable in which a host states its own version to its hooks: Cursor's
/// `CURSOR_VERSION`, Copilot CLI's `COPILOT_CLI_BINARY_VERSION`. Others are asked by the
/// sidecar (`<executable> --version`).
fn version_variable(host: Harness) -> Option<&'static str> {
    match host {
        Harness::Cursor => Some("CURSOR_VERSION"),
        Harness::Copilot => Some("COPILOT_CLI_BINARY_VERSION"),
        Harness::ClaudeCode | Harness::Codex | Harness::Gemini => None,
    }
}

fn environment_version(hook: &Hook) -> Option<String> {
    hook.env
        .get(version_variable(hook.harness)?)
        .and_then(dotted_version::parse_version)
}

/// Parses `sidecar --agent A --session-id S --client-pid P [--client-start T] --client C
/// [--host-client H] [--client-version V] [--transcript-path P]`.
pub fn parse_args(args: &[String]) -> Option<Args> {
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|index| args.get(index + 1))
            .cloned()
    };
    Some(Args {
        agent: value("--agent")?,
        session_id: value("--session-id")?,
        client_pid: value("--client-pid")?.parse().ok().filter(|pid| *pid > 1)?,
        client_start: value("--client-start"),
        client: value("--client")?,
        host_client: value("--host-client"),
        client_version: value("--client-version"),
        transcript_path: value("--transcript-path"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let args: Vec<String> = [
            "--agent",
            "cursor",
            "--session-id",
            "s 1",
            "--client-pid",
            "42",
            "--client",
            "claude-code",
            "--host-client",
            "cursor",
            "--transcript-path",
            "/h/.claude/projects/-w/s 1.jsonl",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let parsed = parse_args(&args).expect("valid");
        assert_eq!(parsed.session_id, "s 1");
        assert_eq!(parsed.client_pid, 42);
        assert_eq!(parsed.host_client.as_deref(), Some("cursor"));
        assert_eq!(parsed.client_start, None);
        assert_eq!(
            parsed.transcript_path.as_deref(),
            Some("/h/.claude/projects/-w/s 1.jsonl")
        );
        assert_eq!(parse_args(&args[..4]), None);
    }
}
