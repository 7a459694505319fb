//! The liveness sidecar: one detached process per (session, client process) that pulses while
//! the client lives and sends a last "process exited" pulse when it dies.
//!
//! No hook fires periodically in any harness, and SIGKILL fires no end at all, so a process
//! watching the client is the only honest liveness source (seed 004). SessionStart starts the
//! sidecar after its lifecycle call (the open or reopen the pulses depend on) and only when it
//! found the client ([`crate::ancestry`]); with no client there is no sidecar and the lease
//! alone decides. The sidecar claims a file named after the session and the client process
//! (created exclusively, so two SessionStarts racing still leave one sidecar) and:
//! * sends its first pulse at once; the client version is probed on a thread and rides on a
//!   later pulse, so the probe never delays the episode;
//! * checks every 250 ms that the client is still the recorded process — same pid *and* same
//!   start time, so a recycled pid does not keep the episode live;
//! * pulses every `BATON_HOOK_PULSE_INTERVAL_MS` (30 s); a 429, a 5xx or no answer backs off
//!   ([`crate::backoff`], honouring `Retry-After`, capped at [`BACKOFF_CAP`] so a retry still
//!   lands inside the liveness window);
//! * drains the spool when it holds anything;
//! * after each pulse, tails its session's transcript (`--transcript-path`) through the
//!   session's checkpoints and uploads what is new ([`crate::upload::session`]): bounded by
//!   one client deadline per pulse (what does not fit goes on the next), skipped while an
//!   ingest holds the upload lock, and never a reason to stop pulsing;
//! * stops when the client exits, when its file is removed (uninstall), or when the server says
//!   the session closed (after `/clear`) — except that in its first [`OPEN_GRACE`] a "closed"
//!   answer is retried up to [`EARLY_CLOSED_RETRIES`] times first: right after the open it
//!   followed, "closed" is a stale read, not an end.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::ancestry::Identity;
use crate::backoff;
use crate::claims::{claim, claim_path, holder};
use crate::config::{self, Env};
use crate::context;
use crate::http::Client;
use crate::log;
use crate::process;
use crate::spool::{Entry, Spool};

pub use crate::sidecar_launch::{Args, ensure, parse_args};

const PULSE: &str = "/api/v1/agent-sessions/pulse";
const POLL: Duration = Duration::from_millis(250);
/// How long after the sidecar starts a "closed" answer is doubted.
pub const OPEN_GRACE: Duration = Duration::from_secs(3);
/// How many "closed" answers in a row the grace retries before believing one.
pub const EARLY_CLOSED_RETRIES: u32 = 5;
const EARLY_CLOSED_WAIT: Duration = Duration::from_millis(400);
/// The longest back-off between pulses: two tries inside the 120 s liveness window.
pub const BACKOFF_CAP: Duration = Duration::from_secs(55);

/// How a pulse went.
enum Pulsed {
    Open,
    Closed,
    /// The key was refused: pulsing again would not help.
    Refused,
    /// An answer that will not change by waiting longer (a 404 before the spooled open lands).
    Unanswered,
    /// 429, 5xx or no answer: back off, at least for the `Retry-After` the server named.
    Later(Option<Duration>),
}

/// True when a "closed" answer ends the episode: always once the grace after the sidecar's
/// start is over, and within it only after [`EARLY_CLOSED_RETRIES`] retries said the same.
pub fn believe_closed(since_start: Duration, closed_in_a_row: u32) -> bool {
    since_start >= OPEN_GRACE || closed_in_a_row > EARLY_CLOSED_RETRIES
}

/// The machine's display label, only when its owner set one: the host id is a digest on
/// purpose, so the hostname is never sent unless asked for.
const HOST_LABEL: &str = "BATON_HOOK_HOST_LABEL";

/// The label as sent: trimmed, control characters refused (the server would refuse the whole
/// pulse), at most 255 characters.
fn host_label(value: Option<&str>) -> Option<String> {
    let label = value?.trim();
    (!label.is_empty() && !label.chars().any(char::is_control))
        .then(|| label.chars().take(255).collect())
}

struct Sidecar {
    env: Env,
    state_dir: PathBuf,
    args: Args,
    client: Identity,
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
        if let Some(label) = host_label(self.env.get(HOST_LABEL)) {
            body["hostLabel"] = json!(label);
        }
        body
    }

    fn http(&self) -> Option<Client> {
        context::client(&self.env, Instant::now() + Duration::from_secs(5)).ok()
    }

    fn pulse(&self, end_reason: Option<&str>) -> Pulsed {
        let body = self.body(end_reason);
        let answer = self.http().map(|client| client.post(PULSE, &body));
        let pulsed = match answer {
            Some(Ok(answer)) if answer.ok() => {
                return if answer.text("liveness") == Some("closed") {
                    Pulsed::Closed
                } else {
                    Pulsed::Open
                };
            }
            Some(Ok(answer)) if matches!(answer.status, 401 | 403) => return Pulsed::Refused,
            Some(Ok(answer)) => {
                self.log(&format!("pulse_status_{}", answer.status));
                if !backoff::retryable(answer.status) {
                    return Pulsed::Unanswered;
                }
                Pulsed::Later(answer.retry_after)
            }
            _ => Pulsed::Later(None),
        };
        if end_reason.is_some() {
            // The last pulse must arrive: the drain delivers it with its time.
            let entry = Entry::new(PULSE, body);
            if let Err(error) = Spool::in_state(&self.state_dir).append(&entry) {
                self.log(error.code());
            }
        }
        pulsed
    }

    /// Uploads what is new in the session's transcript; failures are one log line each.
    fn tail(&self) {
        let Some(path) = &self.args.transcript_path else {
            return;
        };
        let Some(client) = self.http() else {
            return;
        };
        let summary = crate::upload::session::upload(
            &self.state_dir,
            &client,
            &self.args.agent,
            &self.args.session_id,
            Path::new(path),
            false,
        );
        for (status, code) in summary.map(|s| s.failures).unwrap_or_default() {
            self.log(&format!("usage_refused_{status}_{code}"));
        }
    }

    fn drain(&self) {
        let spools = [
            (Spool::in_state(&self.state_dir), "spool_refused"),
            (Spool::usage_in_state(&self.state_dir), "usage_refused"),
        ];
        for (spool, refused) in spools {
            if spool.is_empty() {
                continue;
            }
            let Some(client) = self.http() else {
                return;
            };
            let drained = spool.drain(&client, false, |status| {
                self.log(&format!("{refused}_{status}"))
            });
            if drained.stopped {
                // The drainer backs off and keeps at it (and runs final flushes); this
                // sidecar goes on pulsing.
                crate::drainer::start_if_needed(&self.state_dir, crate::drainer::Urgency::Now);
                return;
            }
        }
    }
}

/// Runs the sidecar until its client exits, its session closes, or its claim is removed.
pub fn run(env: Env, args: Args) {
    let state_dir = env.state_dir();
    let start = args
        .client_start
        .clone()
        .or_else(|| crate::proctable::read(args.client_pid).map(|info| info.start));
    let Some(start) = start else {
        return;
    };
    let client = Identity {
        pid: args.client_pid,
        start,
    };
    let path = claim_path(&state_dir, &args.agent, &args.session_id, &client);
    if !claim(&path) {
        return;
    }
    let versions = probe_version(&args, &state_dir);
    let mut sidecar = Sidecar {
        episode_id: uuid::Uuid::now_v7().to_string(),
        host_id: process::host_id(),
        version: args.client_version.clone(),
        env,
        state_dir,
        args,
        client,
    };
    watch(&mut sidecar, &path, versions);
    if holder(&path) == Some(std::process::id()) {
        let _ = std::fs::remove_file(&path);
    }
}

/// Resolves the client version on a thread (`<exe> --version` can take seconds).
fn probe_version(args: &Args, state_dir: &Path) -> Option<Receiver<String>> {
    if args.client_version.is_some() {
        return None;
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    let (pid, state_dir) = (args.client_pid, state_dir.to_path_buf());
    std::thread::spawn(move || {
        let exe = process::executable(pid)?;
        let version = process::version_of(&exe, &state_dir, Duration::from_secs(3))?;
        sender.send(version).ok()
    });
    Some(receiver)
}

fn watch(sidecar: &mut Sidecar, path: &Path, versions: Option<Receiver<String>>) {
    let interval = config::pulse_interval(&sidecar.env);
    let started = Instant::now();
    let mut next_pulse = started;
    let (mut failures, mut closed_in_a_row) = (0, 0);
    loop {
        if let Some(version) = versions.as_ref().and_then(|rx| rx.try_recv().ok()) {
            sidecar.version = Some(version);
            // A version learned late rides on a pulse now (the server fills it in) — unless
            // the server asked to wait: back-off wins.
            if failures == 0 {
                next_pulse = next_pulse.min(Instant::now());
            }
        }
        if holder(path) != Some(std::process::id()) {
            sidecar.pulse(Some("stopped"));
            return;
        }
        if !process::still_running(&sidecar.client) {
            sidecar.tail();
            sidecar.drain();
            sidecar.pulse(Some("process_exited"));
            sidecar.drain();
            return;
        }
        if Instant::now() >= next_pulse {
            let pulsed = sidecar.pulse(None);
            let mut wait = interval;
            match pulsed {
                Pulsed::Closed => {
                    closed_in_a_row += 1;
                    if believe_closed(started.elapsed(), closed_in_a_row) {
                        sidecar.pulse(Some("session_closed"));
                        return;
                    }
                    wait = EARLY_CLOSED_WAIT.min(interval);
                }
                Pulsed::Refused => return,
                Pulsed::Open | Pulsed::Unanswered => {
                    (failures, closed_in_a_row) = (0, 0);
                }
                Pulsed::Later(retry_after) => {
                    failures += 1;
                    let jitter = backoff::jitter();
                    wait = backoff::delay(failures, interval, BACKOFF_CAP, retry_after, jitter);
                }
            }
            sidecar.drain();
            sidecar.tail();
            next_pulse = Instant::now() + wait;
        }
        std::thread::sleep(POLL.min(interval));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_label_is_sent_only_when_set_and_clean() {
        let long = "x".repeat(300);
        let table = [
            (None, None),
            (Some(""), None),
            (Some("  "), None),
            (Some(" laptop "), Some("laptop".to_string())),
            (Some("a\u{7}b"), None),
            (Some(long.as_str()), Some("x".repeat(255))),
        ];
        for (value, expected) in table {
            assert_eq!(host_label(value), expected, "{value:?}");
        }
    }

    #[test]
    fn a_closed_answer_right_after_the_start_is_retried_before_it_ends_the_episode() {
        let second = Duration::from_secs(1);
        let cases = [
            (
                "first answer, just started: retry",
                Duration::ZERO,
                1,
                false,
            ),
            (
                "still inside the grace, retries left",
                2 * second,
                EARLY_CLOSED_RETRIES,
                false,
            ),
            (
                "retries used up inside the grace",
                second,
                EARLY_CLOSED_RETRIES + 1,
                true,
            ),
            ("the grace is over: believed at once", OPEN_GRACE, 1, true),
            (
                "long after the start (/clear): believed at once",
                600 * second,
                1,
                true,
            ),
        ];
        for (name, since_start, closed, expected) in cases {
            assert_eq!(believe_closed(since_start, closed), expected, "{name}");
        }
    }
}
