//! Uploading this machine's usage to the usage context (issue 16): identifiers and counts
//! from the transcripts, never their text.
//!
//! A run reads the corpus (through the transcript checkpoints), builds each session's facts
//! ([`facts`]), keeps what the ledger has not seen acknowledged ([`ledger`]), splits it into
//! batches inside the contract's bounds ([`plan`]), sends them in order ([`send`]) and records
//! what was acknowledged. `baton-hook ingest` runs it over every transcript; the sidecar runs it
//! over its own session on each pulse; the drain runs it for a session's final flush.

pub mod deliveries;
pub mod facts;
pub mod ledger;
pub mod plan;
pub mod send;
pub mod session;
pub mod wire;

#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;

use std::path::Path;

use baton_transcripts::Corpus;
use serde_json::Value;

use crate::http::{Answer, Failure};
use ledger::Ledger;
use plan::Limits;
use send::Verdict;
use wire::DeliveryFact;

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub sessions: u64,
    /// Sessions with nothing new.
    pub sessions_unchanged: u64,
    pub rows_sent: u64,
    /// Usage rows the server has acknowledged already, not sent.
    pub rows_unchanged: u64,
    pub deliveries_sent: u64,
    pub batches_sent: u64,
    /// Facts outside the contract's bounds, left out.
    pub invalid: u64,
    /// `(status, error code)` of each batch the server refused or could not take.
    pub failures: Vec<(u16, String)>,
    /// The server could not be reached or could not take a batch now: the rest waits.
    pub stopped: bool,
}

/// Uploads what of `corpus` (and `deliveries`) the ledger at `ledger_path` has not seen
/// acknowledged. `resend` ignores the ledger.
pub fn run(
    corpus: &Corpus,
    deliveries: Vec<DeliveryFact>,
    ledger_path: &Path,
    host_id: &str,
    resend: bool,
    post: impl FnMut(&Value) -> Result<Answer, Failure>,
) -> Summary {
    let built = facts::build(corpus, chrono::Utc::now().timestamp_millis());
    let mut ledger = Ledger::load(ledger_path);
    let nothing_sent = Ledger::default();
    let basis = if resend { &nothing_sent } else { &ledger };
    let mut summary = Summary {
        sessions: built.sessions.len() as u64,
        invalid: built.invalid,
        ..Summary::default()
    };
    let mut deltas = Vec::new();
    for session in &built.sessions {
        match basis.delta(session) {
            Some(delta) => {
                summary.rows_unchanged += (session.usage.len() - delta.usage.len()) as u64;
                deltas.push(delta);
            }
            None => {
                summary.sessions_unchanged += 1;
                summary.rows_unchanged += session.usage.len() as u64;
            }
        }
    }
    let planned = plan::plan(
        host_id,
        Some(env!("CARGO_PKG_VERSION")),
        deltas,
        deliveries,
        Limits::default(),
    );
    if planned.is_empty() {
        return summary;
    }
    let verdicts = send::send_all(&planned, post, |plan, verdict| {
        if *verdict == Verdict::Accepted {
            summary.batches_sent += 1;
            summary.rows_sent += plan.batch.usage.len() as u64;
            summary.deliveries_sent += plan.batch.deliveries.len() as u64;
        }
    });
    let answered: Vec<bool> = verdicts.iter().map(|v| *v == Verdict::Accepted).collect();
    for verdict in &verdicts {
        match verdict {
            Verdict::Accepted => {}
            Verdict::Refused(status, code) => summary
                .failures
                .push((*status, code.clone().unwrap_or_else(|| "refused".into()))),
            Verdict::Later(status, code) => {
                summary.failures.push((*status, code.clone()));
                summary.stopped = true;
            }
        }
    }
    ledger.acknowledge(&planned, &answered);
    // A batch refused as naming what the server does not have (404: its store was reset, or
    // a fact went missing) makes the ledger forget those sessions: the next run sends them
    // whole again, which the server absorbs.
    let mut forgot = false;
    for (plan, verdict) in planned.iter().zip(&verdicts) {
        if matches!(verdict, Verdict::Refused(404, _)) {
            for key in plan
                .usage
                .iter()
                .map(|(key, _, _)| key)
                .chain(plan.facts.iter().map(|(key, _)| key))
            {
                forgot |= ledger.sessions.remove(key).is_some();
            }
        }
    }
    if forgot || answered.iter().any(|ok| *ok) {
        // The ledger only saves work: failing to write it re-sends next time, harmlessly.
        let _ = ledger.save(ledger_path);
    }
    summary
}

/// The upload lock (`usage/.lock`): one run at a time updates the ledger. `wait` blocks until
/// it is free; otherwise a busy lock answers `None` (a sidecar pulse skips its upload).
pub fn lock(state_dir: &Path, wait: bool) -> Option<std::fs::File> {
    let dir = state_dir.join("usage");
    crate::fsutil::private_dir(&dir).ok()?;
    let file = crate::fsutil::private_append(&dir.join(".lock")).ok()?;
    let locked = if wait {
        file.lock().is_ok()
    } else {
        file.try_lock().is_ok()
    };
    locked.then_some(file)
}
