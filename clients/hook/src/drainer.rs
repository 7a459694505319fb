//! The detached drain: what makes a spooled call independent of any sidecar.
//!
//! Every hook run that leaves something in a spool (SessionEnd always does) starts
//! `baton-hook drain --detached` in its own process group and returns. Rules:
//! * One drainer at a time: it holds `spool/.drainer` (a file lock) while it works; a second
//!   one finds the lock taken and exits. After unlocking, the drainer looks at the spool once
//!   more and goes again if something landed meanwhile, so an append made while the lock was
//!   held is never left behind.
//! * It drains until the spool is empty, backing off between attempts the server could not
//!   take ([`crate::backoff`]: 1 s doubling to 60 s, jittered, never sooner than
//!   `Retry-After`), and waiting its turn while another drain (a sidecar's, one by hand) holds
//!   the spool.
//! * Bounded: it gives up after `BATON_HOOK_DRAIN_PATIENCE_MS` (default 5 minutes) with one
//!   log line; the next hook run starts another. It also stops when the state folder is gone.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::backoff;
use crate::config::Env;
use crate::context;
use crate::log;
use crate::spool::Spool;

const BASE: Duration = Duration::from_secs(1);
const CAP: Duration = Duration::from_secs(60);
/// How long to wait while another drain holds the spool.
const BUSY_WAIT: Duration = Duration::from_millis(200);

/// Starts a detached drainer when either spool holds anything.
pub fn start_if_needed(state_dir: &Path) {
    let pending =
        !Spool::in_state(state_dir).is_empty() || !Spool::usage_in_state(state_dir).is_empty();
    if pending {
        crate::sidecar::spawn_detached(&["drain", "--detached"]);
    }
}

fn patience(env: &Env) -> Duration {
    Duration::from_millis(env.number("BATON_HOOK_DRAIN_PATIENCE_MS", 300_000, 1_000, 3_600_000))
}

/// Runs the drainer until both spools are empty (the lifecycle calls first, then the usage
/// context's) or its patience runs out.
pub fn run(env: &Env) {
    let state_dir = env.state_dir();
    let spools = [
        (Spool::in_state(&state_dir), "spool_refused"),
        (Spool::usage_in_state(&state_dir), "usage_refused"),
    ];
    let give_up_at = Instant::now() + patience(env);
    loop {
        if !state_dir.is_dir() || crate::fsutil::private_dir(&spools[0].0.dir).is_err() {
            return;
        }
        let Ok(lock) = crate::fsutil::private_append(&spools[0].0.dir.join(".drainer")) else {
            return;
        };
        if lock.try_lock().is_err() {
            // The drainer holding it looks again after it lets go.
            return;
        }
        let finished = spools
            .iter()
            .all(|(spool, refused)| drain_until_empty(env, spool, refused, give_up_at));
        drop(lock);
        if !finished {
            log::line(&state_dir, "drain", "-", "drain_gave_up");
            return;
        }
        if spools.iter().all(|(spool, _)| spool.is_empty()) {
            return;
        }
    }
}

/// Drains with back-off; false when the patience ran out (or nothing can be sent).
fn drain_until_empty(env: &Env, spool: &Spool, refused: &str, give_up_at: Instant) -> bool {
    let state_dir = env.state_dir();
    let mut failures = 0;
    while !spool.is_empty() {
        if !spool.dir.is_dir() {
            return true;
        }
        let client = match context::client(env, Instant::now() + CAP) {
            Ok(client) => client,
            Err(code) => {
                log::line(&state_dir, "drain", "-", code);
                return false;
            }
        };
        let drained = spool.drain_all(&client, false, |status| {
            log::line(&state_dir, "drain", "-", &format!("{refused}_{status}"));
        });
        let wait = if drained.busy {
            BUSY_WAIT
        } else if drained.stopped {
            failures += 1;
            backoff::delay(failures, BASE, CAP, drained.retry_after, backoff::jitter())
        } else {
            failures = 0;
            continue;
        };
        if Instant::now() + wait > give_up_at {
            return false;
        }
        std::thread::sleep(wait);
    }
    true
}
