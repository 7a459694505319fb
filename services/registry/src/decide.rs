//! The session decisions of CONTRACT Part 2 tables A–D as pure functions.
//!
//! Each takes the row as it stands (read under its row lock), the request and "now", and returns
//! what to do; [`transition`] turns a decision into the row to write. The store applies the
//! result inside the same transaction that holds the lock, so no concurrent update is lost.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::selector::Selector;

use crate::session::{BriefedMemory, Lease, Liveness, Session, Source};

/// A validated open request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCommand {
    pub agent: String,
    pub session_id: String,
    pub source: Source,
    pub project: Option<String>,
    pub scope: Option<String>,
    pub selector: Selector,
    /// Present (even empty) is the briefing delivery signal.
    pub briefed_memories: Option<Vec<BriefedMemory>>,
    /// The session this one follows in the same process (/clear); linked only on insert.
    pub follows_session_id: Option<String>,
}

/// What an open does (table A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenDecision {
    /// A1/A2: no row yet.
    Insert,
    /// A3: a startup whose project, scope or selector differ from the row's. Nothing written.
    Conflict,
    /// A4: duplicate delivery of a live startup: floor the lease, nothing else.
    Refresh,
    /// A5: resume of a live row: new activation (epoch + 1), not a reopen.
    Activate,
    /// A6/A7: startup or resume of a closed or stale row.
    Reopen { restamp_briefing: bool },
}

/// Table A, rows A1–A7.
pub fn decide_open(
    row: Option<&Session>,
    command: &OpenCommand,
    now: DateTime<Utc>,
    lease: Lease,
) -> OpenDecision {
    let Some(row) = row else {
        return OpenDecision::Insert;
    };
    let startup = command.source == Source::Startup;
    if startup && !same_facets(row, command) {
        return OpenDecision::Conflict;
    }
    match (lease.of(row, now), command.source) {
        (Liveness::Live, Source::Startup) => OpenDecision::Refresh,
        (Liveness::Live, Source::Resume) => OpenDecision::Activate,
        (_, Source::Startup) => OpenDecision::Reopen {
            restamp_briefing: command.briefed_memories.is_some(),
        },
        (_, Source::Resume) => OpenDecision::Reopen {
            restamp_briefing: false,
        },
    }
}

/// Project and scope compare with absent ≡ NULL; selectors compare as typed values, so key
/// order never matters.
fn same_facets(row: &Session, command: &OpenCommand) -> bool {
    row.project == command.project && row.scope == command.scope && row.selector == command.selector
}

/// What a heartbeat does to an existing row (table B; an absent row is a 404 upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeartbeatDecision {
    /// Live: floor the lease.
    Refresh,
    /// Stale, implicitly or explicitly closed: "a stale close is transient".
    Resurrect,
    /// A replay observed at or before the row's close: it happened before the end, so it
    /// changes nothing (and never reopens what the end closed).
    Superseded,
}

/// Table B.
pub fn decide_heartbeat(row: &Session, now: DateTime<Utc>, lease: Lease) -> HeartbeatDecision {
    if lease.of(row, now).is_dead() {
        HeartbeatDecision::Resurrect
    } else {
        HeartbeatDecision::Refresh
    }
}

/// A replayed heartbeat (one carrying `observedAt`), decided at its clamped instant `at`.
pub fn decide_replayed_heartbeat(
    row: &Session,
    at: DateTime<Utc>,
    lease: Lease,
) -> HeartbeatDecision {
    match row.closed_at {
        Some(closed_at) if floor(row.last_seen_at, at) <= closed_at => {
            HeartbeatDecision::Superseded
        }
        _ => decide_heartbeat(row, at, lease),
    }
}

/// The instant a replayed observation takes effect: `observed` clamped to
/// `[last_seen_at, now]`. A replay can neither move the lease past "now" nor pretend to be
/// older than activity the row already saw.
pub fn replay_instant(
    observed: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    observed.min(now).max(last_seen_at)
}

/// The instant a sidecar pulse takes effect: `observed` clamped to `[opened_at, now]`. A
/// pulse cannot start an episode before the session existed (`0001-01-01` would backdate it),
/// nor after now.
pub fn pulse_instant(
    observed: DateTime<Utc>,
    opened_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    observed.min(now).max(opened_at.min(now))
}

/// What a close does (table C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseDecision {
    /// `closed_at` null (live or stale): stamp it now; last_seen, excerpt and epoch untouched.
    Stamp,
    /// Already closed: answer the first close's timestamp, write nothing.
    AlreadyClosed,
}

/// Table C.
pub fn decide_close(row: &Session) -> CloseDecision {
    if row.closed_at.is_some() {
        CloseDecision::AlreadyClosed
    } else {
        CloseDecision::Stamp
    }
}

/// What a write carrying this run's id does to it (table E, rows with an id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachDecision {
    /// Live: attach and floor the lease.
    Floor,
    /// Stale or implicitly closed: resurrect (table D), then attach, in one transaction.
    Resurrect,
    /// Explicitly closed: the write succeeds unattributed; that protection never expires.
    Unattributed,
}

/// Table E for a run the tenant owns (a foreign or unknown id never reaches here: the write
/// fails upstream).
pub fn decide_attach(row: &Session, now: DateTime<Utc>, lease: Lease) -> AttachDecision {
    match lease.of(row, now) {
        Liveness::Live => AttachDecision::Floor,
        Liveness::Stale | Liveness::ClosedImplicitly => AttachDecision::Resurrect,
        Liveness::ClosedExplicitly => AttachDecision::Unattributed,
    }
}

/// The row after an attach decision.
pub fn transition_attach(row: &Session, decision: AttachDecision, now: DateTime<Utc>) -> Session {
    match decision {
        AttachDecision::Floor => Session {
            last_seen_at: floor(row.last_seen_at, now),
            ..row.clone()
        },
        AttachDecision::Resurrect => resurrect(row, now),
        AttachDecision::Unattributed => row.clone(),
    }
}

/// `floor(x)`: the lease never moves backwards.
pub fn floor(last_seen_at: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
    last_seen_at.max(now)
}

/// Table D: the effects every resurrection path shares. Briefing fields, identity and opened_at
/// are untouched; the epoch advances exactly once.
pub fn resurrect(row: &Session, now: DateTime<Utc>) -> Session {
    Session {
        closed_at: None,
        last_seen_at: floor(row.last_seen_at, now),
        activation_epoch: row.activation_epoch + 1,
        ..row.clone()
    }
}

/// The row a new session inserts (A1/A2).
pub fn new_session(id: Uuid, command: &OpenCommand, now: DateTime<Utc>) -> Session {
    Session {
        id,
        agent: command.agent.clone(),
        session_id: command.session_id.clone(),
        source: command.source,
        project: command.project.clone(),
        scope: command.scope.clone(),
        selector: command.selector.clone(),
        opened_at: now,
        closed_at: None,
        last_seen_at: now,
        activation_epoch: 1,
        briefing_delivered_at: command.briefed_memories.as_ref().map(|_| now),
        briefed_memories: command.briefed_memories.clone().unwrap_or_default(),
    }
}

/// The row after an open decision on an existing row (A4–A7). `Conflict` and `Insert` leave it
/// unchanged: they never reach the update.
pub fn transition_open(
    row: &Session,
    decision: OpenDecision,
    command: &OpenCommand,
    now: DateTime<Utc>,
) -> Session {
    match decision {
        OpenDecision::Insert | OpenDecision::Conflict => row.clone(),
        OpenDecision::Refresh => Session {
            last_seen_at: floor(row.last_seen_at, now),
            ..row.clone()
        },
        OpenDecision::Activate => Session {
            last_seen_at: floor(row.last_seen_at, now),
            activation_epoch: row.activation_epoch + 1,
            ..row.clone()
        },
        OpenDecision::Reopen { restamp_briefing } => {
            let reopened = resurrect(row, now);
            match (&command.briefed_memories, restamp_briefing) {
                (Some(briefed), true) => Session {
                    briefing_delivered_at: Some(now),
                    briefed_memories: briefed.clone(),
                    ..reopened
                },
                _ => reopened,
            }
        }
    }
}

/// The row after a heartbeat decision.
pub fn transition_heartbeat(
    row: &Session,
    decision: HeartbeatDecision,
    now: DateTime<Utc>,
) -> Session {
    match decision {
        HeartbeatDecision::Refresh => Session {
            last_seen_at: floor(row.last_seen_at, now),
            ..row.clone()
        },
        HeartbeatDecision::Resurrect => resurrect(row, now),
        HeartbeatDecision::Superseded => row.clone(),
    }
}

/// The row after a close decision.
pub fn transition_close(row: &Session, decision: CloseDecision, now: DateTime<Utc>) -> Session {
    match decision {
        CloseDecision::Stamp => Session {
            closed_at: Some(now),
            ..row.clone()
        },
        CloseDecision::AlreadyClosed => row.clone(),
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
