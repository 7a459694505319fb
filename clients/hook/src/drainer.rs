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

/// How long the usage spool's journal may wait for a drain started for another reason, when a
/// turn end is what would start one (issue 25). Every hook run records its delivery there; at
/// Stop, which the user waits on, a detached drainer per turn cost more than the rest of the
/// hook. So Stop leaves the journal to the next drain — the sidecar's, SessionEnd's, any hook
/// run with lifecycle calls spooled — unless it has waited this long.
pub const USAGE_BATCH_WINDOW: Duration = Duration::from_secs(60);

/// When a hook run starts a drainer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Anything spooled goes now.
    Now,
    /// Lifecycle calls go now; the usage journal waits up to [`USAGE_BATCH_WINDOW`].
    Batched,
}

/// Starts a detached drainer when either spool holds something due.
pub fn start_if_needed(state_dir: &Path, urgency: Urgency) {
    let lifecycle = !Spool::in_state(state_dir).is_empty();
    let usage = Spool::usage_in_state(state_dir);
    let usage_due = match urgency {
        Urgency::Now => !usage.is_empty(),
        Urgency::Batched => usage_due(
            usage.journal_age(std::time::SystemTime::now()),
            usage.batches().is_empty(),
        ),
    };
    if lifecycle || usage_due {
        crate::sidecar_launch::spawn_detached(&["drain", "--detached"]);
    }
}

/// Whether a batched run drains the usage spool (pure): a rotated batch is a drain left
/// unfinished and goes now; the journal goes once it has waited the window. `age` is `None`
/// when nothing is in the journal, and `Some(None)` when the file system cannot say when it
/// was created (then it goes now, as before batching).
pub fn usage_due(age: Option<Option<Duration>>, no_batches: bool) -> bool {
    if !no_batches {
        return true;
    }
    match age {
        None => false,
        Some(None) => true,
        Some(Some(age)) => age >= USAGE_BATCH_WINDOW,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_end_leaves_a_young_usage_journal_to_the_next_drain() {
        let young = Some(Some(Duration::from_secs(5)));
        let old = Some(Some(USAGE_BATCH_WINDOW));
        let table = [
            ("empty spool", None, true, false),
            ("young journal", young, true, false),
            ("journal past the window", old, true, true),
            ("creation time unknown", Some(None), true, true),
            ("a rotated batch left over", None, false, true),
            ("young journal and a left-over batch", young, false, true),
        ];
        for (case, age, no_batches, due) in table {
            assert_eq!(usage_due(age, no_batches), due, "{case}");
        }
    }
}
