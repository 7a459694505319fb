//! The liveness sidecar: one detached process per (session, client process) that pulses while
//! the client lives and sends a last "process exited" pulse when it dies.
//!
//! No hook fires periodically in any harness, and SIGKILL fires no end at all, so a process
//! watching the client is the only honest liveness source (seed 004). The sidecar claims a
//! file named after the session and the client pid (created exclusively, so two SessionStarts
//! racing still leave one sidecar), polls the client every 250 ms, pulses every
//! `BATON_HOOK_PULSE_INTERVAL_MS` (30 s), drains the spool when it holds anything, and stops
//! when the client exits, when the server says the session closed (after `/clear`), or when
//! its file is removed (uninstall).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::claims::{claim, claim_path, holder};
use crate::config::{self, Env};
use crate::context::{self, Hook};
use crate::harness::Harness;
use crate::http::Client;
use crate::log;
use crate::process;
use crate::spool::{Entry, Spool};

const PULSE: &str = "/api/v1/agent-sessions/pulse";
const POLL: Duration = Duration::from_millis(250);

/// What the sidecar is told on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub agent: String,
    pub session_id: String,
    pub client_pid: u32,
    pub client: String,
    pub host_client: Option<String>,
    pub client_version: Option<String>,
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
/// rests on hook activity alone).
pub fn ensure(hook: &Hook, session_id: &str) {
    if hook.env.get("BATON_HOOK_SIDECAR") == Some("off") {
        return;
    }
    let client_pid = process::client_pid(&hook.env);
    let path = claim_path(&hook.state_dir, hook.agent(), session_id, client_pid);
    if holder(&path).is_some_and(process::alive) {
        return;
    }
    let pid = client_pid.to_string();
    let mut args = vec![
        "sidecar",
        "--agent",
        hook.agent(),
        "--session-id",
        session_id,
        "--client-pid",
        &pid,
        "--client",
        hook.format.name(),
    ];
    if hook.format != hook.harness {
        args.extend(["--host-client", hook.harness.name()]);
    }
    let version = cursor_version(hook);
    if let Some(version) = version.as_deref() {
        args.extend(["--client-version", version]);
    }
    spawn_detached(&args);
}

/// Cursor puts its version in the payload's environment (`CURSOR_VERSION`).
fn cursor_version(hook: &Hook) -> Option<String> {
    if hook.harness != Harness::Cursor {
        return None;
    }
    hook.env
        .get("CURSOR_VERSION")
        .and_then(process::parse_version)
}

/// Parses `sidecar --agent A --session-id S --client-pid P --client C [--host-client H]
/// [--client-version V]`.
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
        client: value("--client")?,
        host_client: value("--host-client"),
        client_version: value("--client-version"),
    })
}

/// How a pulse went.
enum Pulsed {
    Open,
    Closed,
    /// The key was refused: pulsing again would not help.
    Refused,
    Unanswered,
}

struct Sidecar {
    env: Env,
    state_dir: PathBuf,
    args: Args,
    episode_id: String,
    host_id: String,
    version: Option<String>,
}

impl Sidecar {
    fn log(&self, code: &str) {
        log::line(&self.state_dir, "sidecar", &self.args.agent, code);
    }

    fn body(&self, end_reason: Option<&str>) -> Value {
        let mut body = json!({
            "agent": self.args.agent, "sessionId": self.args.session_id,
            "episodeId": self.episode_id, "client": self.args.client, "hostId": self.host_id,
            "pid": self.args.client_pid, "observedAt": crate::clock::iso_now(),
        });
        if let Some(host) = &self.args.host_client {
            body["hostClient"] = json!(host);
        }
        if let Some(version) = &self.version {
            body["clientVersion"] = json!(version);
        }
        if let Some(reason) = end_reason {
            body["endReason"] = json!(reason);
        }
        body
    }

    fn client(&self) -> Option<Client> {
        context::client(&self.env, Instant::now() + Duration::from_secs(5)).ok()
    }

    fn pulse(&self, end_reason: Option<&str>) -> Pulsed {
        let body = self.body(end_reason);
        let answer = self.client().map(|client| client.post(PULSE, &body));
        match answer {
            Some(Ok(answer)) if answer.ok() => {
                if answer.text("liveness") == Some("closed") {
                    Pulsed::Closed
                } else {
                    Pulsed::Open
                }
            }
            Some(Ok(answer)) if matches!(answer.status, 401 | 403) => Pulsed::Refused,
            Some(Ok(answer)) => {
                self.log(&format!("pulse_status_{}", answer.status));
                Pulsed::Unanswered
            }
            _ => {
                if end_reason.is_some() {
                    // The last pulse must arrive: the drain delivers it with its time.
                    let entry = Entry {
                        path: PULSE.into(),
                        body,
                    };
                    if let Err(error) = Spool::in_state(&self.state_dir).append(&entry) {
                        self.log(error.code());
                    }
                }
                Pulsed::Unanswered
            }
        }
    }

    fn drain(&self) {
        let spool = Spool::in_state(&self.state_dir);
        if spool.is_empty() {
            return;
        }
        if let Some(client) = self.client() {
            spool.drain(&client, |status| {
                self.log(&format!("spool_refused_{status}"))
            });
        }
    }
}

/// Runs the sidecar until its client exits, its session closes, or its claim is removed.
pub fn run(env: Env, args: Args) {
    let state_dir = env.state_dir();
    let path = claim_path(&state_dir, &args.agent, &args.session_id, args.client_pid);
    if !claim(&path) {
        return;
    }
    let version = args.client_version.clone().or_else(|| {
        let exe = process::executable(args.client_pid)?;
        process::version_of(&exe, &state_dir, Duration::from_secs(3))
    });
    let sidecar = Sidecar {
        episode_id: uuid::Uuid::now_v7().to_string(),
        host_id: process::host_id(),
        env,
        state_dir,
        args,
        version,
    };
    watch(&sidecar, &path);
    if holder(&path) == Some(std::process::id()) {
        let _ = std::fs::remove_file(&path);
    }
}

fn watch(sidecar: &Sidecar, path: &Path) {
    let interval = config::pulse_interval(&sidecar.env);
    let mut next_pulse = Instant::now();
    loop {
        if holder(path) != Some(std::process::id()) {
            sidecar.pulse(Some("stopped"));
            return;
        }
        if !process::alive(sidecar.args.client_pid) {
            sidecar.drain();
            sidecar.pulse(Some("process_exited"));
            sidecar.drain();
            return;
        }
        if Instant::now() >= next_pulse {
            sidecar.drain();
            match sidecar.pulse(None) {
                Pulsed::Closed => {
                    sidecar.pulse(Some("session_closed"));
                    return;
                }
                Pulsed::Refused => return,
                Pulsed::Open | Pulsed::Unanswered => {}
            }
            next_pulse = Instant::now() + interval;
        }
        std::thread::sleep(POLL.min(interval));
    }
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
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let parsed = parse_args(&args).expect("valid");
        assert_eq!(parsed.session_id, "s 1");
        assert_eq!(parsed.client_pid, 42);
        assert_eq!(parsed.host_client.as_deref(), Some("cursor"));
        assert_eq!(parse_args(&args[..4]), None);
    }
}
