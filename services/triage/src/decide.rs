//! The handshake decisions of CONTRACT Part 2 tables F and G as pure functions, and the
//! effective status of DESIGN section 4 rule 3.
//!
//! Re-arm is evaluated where it is read: a `completed` run whose event listing holds an id
//! outside its watermark behaves, and reads back, as `idle`; the write that produced that event
//! never calls into triage. The watermark is a set of ids, never a timestamp or an id order, so
//! an event with an earlier uuidv7 that committed late still counts.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use crate::status::{Reason, Status};

/// The debounce and age-guard thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// `turnCount` at or above this admits an idle run (`BATON_TRIAGE__MIN_TURNS`, 3).
    pub min_turns: u32,
    /// Time since `opened_at` at or above this admits an idle run (`BATON_TRIAGE__MIN_ELAPSED`, 10 min).
    pub min_elapsed: Duration,
    /// A pending attempt younger than this is withheld (`BATON_TRIAGE__MIN_ATTEMPT_AGE`, 30 s).
    pub min_attempt_age: Duration,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            min_turns: 3,
            min_elapsed: Duration::minutes(10),
            min_attempt_age: Duration::seconds(30),
        }
    }
}

/// Triage's row as the decisions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunState {
    pub status: Status,
    pub attempt_id: Option<Uuid>,
    pub armed_at: Option<DateTime<Utc>>,
    pub watermark: Vec<Uuid>,
}

impl RunState {
    /// A run triage has never seen.
    pub fn never_seen() -> RunState {
        RunState {
            status: Status::Idle,
            attempt_id: None,
            armed_at: None,
            watermark: Vec::new(),
        }
    }
}

/// A run's visible event ids (its first 500, in id order) and whether it has more.
pub use baton_kit::grpc::run_events::RunEventIds as Listing;

/// The ids of `listing` outside `watermark` (the set difference, never an id comparison).
pub fn outside(watermark: &[Uuid], listing: &Listing) -> usize {
    let accounted: HashSet<&Uuid> = watermark.iter().collect();
    listing
        .ids
        .iter()
        .filter(|id| !accounted.contains(id))
        .count()
}

/// The status a run reads back as: `completed` with an untriaged event is `idle`.
pub fn effective_status(run: &RunState, listing: &Listing) -> Status {
    if run.status == Status::Completed && outside(&run.watermark, listing) > 0 {
        Status::Idle
    } else {
        run.status
    }
}

/// What a begin knows besides triage's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeginFacts {
    /// Registry's liveness at the request's instant (closed of any kind or stale is not live).
    pub live: bool,
    pub opened_at: DateTime<Utc>,
    pub now: DateTime<Utc>,
    /// Absent is 0.
    pub turn_count: u32,
    pub stop_hook_active: bool,
    pub listing: Listing,
}

/// What a begin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginDecision {
    /// 200 with `armed: false`; nothing written. `hand_back` names the attempt in flight
    /// (the `pending` decline only).
    Decline { reason: Reason, hand_back: bool },
    /// F7: status := overflowed, nothing else.
    Overflow,
    /// F8: a new attempt: status pending, watermark := every visible id, log appended.
    Arm,
}

/// Table F, first match wins.
pub fn decide_begin(run: &RunState, facts: &BeginFacts, thresholds: &Thresholds) -> BeginDecision {
    let decline = |reason| BeginDecision::Decline {
        reason,
        hand_back: false,
    };
    if !facts.live {
        return decline(Reason::NotLive);
    }
    match run.status {
        Status::Overflowed => return decline(Reason::Terminal),
        Status::Pending => {
            // Negative age (clock skew) reads as fresh.
            let fresh = run
                .armed_at
                .is_some_and(|armed_at| facts.now - armed_at < thresholds.min_attempt_age);
            if fresh && !facts.stop_hook_active {
                return decline(Reason::PendingFresh);
            }
            return BeginDecision::Decline {
                reason: Reason::Pending,
                hand_back: true,
            };
        }
        Status::Idle | Status::Completed | Status::Expired => {}
    }
    let untriaged = outside(&run.watermark, &facts.listing) > 0;
    if matches!(run.status, Status::Completed | Status::Expired) && !untriaged {
        return decline(Reason::NoSignal);
    }
    let substance = untriaged
        || facts.turn_count >= thresholds.min_turns
        || facts.now - facts.opened_at >= thresholds.min_elapsed;
    if !substance {
        return decline(Reason::Debounce);
    }
    if facts.listing.truncated {
        return BeginDecision::Overflow;
    }
    BeginDecision::Arm
}

/// What a complete does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompleteDecision {
    /// G1: not pending with exactly this attempt (a repeat complete too): 409, nothing written.
    Conflict,
    /// G2–G4.
    Finish(Finish),
}

/// The outcome of a finished attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub status: Status,
    pub event_count: usize,
    pub since_begin_count: usize,
    pub truncated: bool,
    /// The new watermark: every visible id (visibility only grows, so this is cumulative).
    pub watermark: Vec<Uuid>,
}

/// Table G. Not guarded on liveness.
pub fn decide_complete(run: &RunState, attempt_id: Uuid, listing: &Listing) -> CompleteDecision {
    if run.status != Status::Pending || run.attempt_id != Some(attempt_id) {
        return CompleteDecision::Conflict;
    }
    let since_begin_count = outside(&run.watermark, listing);
    let status = if listing.truncated {
        Status::Overflowed
    } else if since_begin_count == 0 {
        Status::Expired
    } else {
        Status::Completed
    };
    CompleteDecision::Finish(Finish {
        status,
        event_count: listing.ids.len(),
        since_begin_count,
        truncated: listing.truncated,
        watermark: listing.ids.clone(),
    })
}

/// Table H "claim": which statuses a closer may claim (overflowed is terminal).
pub fn claimable(status: Status) -> bool {
    matches!(
        status,
        Status::Idle | Status::Pending | Status::Expired | Status::Completed
    )
}

/// Table H "claim": the status a claim leaves; an abandoned handshake (pending on a closed run)
/// is retired to expired, so its token can never be finalized through the interactive fence.
pub fn status_after_claim(status: Status) -> Status {
    if status == Status::Pending {
        Status::Expired
    } else {
        status
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
