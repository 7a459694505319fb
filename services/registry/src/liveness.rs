//! How a session reads to a person watching it: live, idle, disconnected or closed.
//!
//! The lease (24 h) answers "may this run still be resumed and attributed"; it is far too long
//! to say whether anyone is there. Liveness answers that from two shorter signals: hook
//! activity (`last_seen_at`, floored by heartbeats, opens and writes) and the pulses of the
//! sidecar that watches each client process (its episodes). A missing end is normal — SIGKILL
//! fires no SessionEnd and Codex may send one 30 minutes late — so a session whose client went
//! away without an end reads `disconnected`, outcome unknown, within the window.
//!
//! A replayed heartbeat carries its observation time, and `last_seen_at` moves only to that
//! time, so an old replay is never fresh activity: it cannot make a session read live now.

use chrono::{DateTime, Duration, Utc};

use crate::session::{Lease, Liveness, Session};

/// Default liveness window: a killed client reads disconnected within two minutes.
pub const DEFAULT_WINDOW: std::time::Duration = std::time::Duration::from_secs(120);

/// The derived state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Live,
    Idle,
    Disconnected,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Live => "live",
            State::Idle => "idle",
            State::Disconnected => "disconnected",
            State::Closed => "closed",
        }
    }
}

/// The part of an episode the derivation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpisodeTimes {
    pub started_at: DateTime<Utc>,
    pub last_pulse_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// The rules, first match wins:
/// 1. closed, or the lease ran out → `Closed`;
/// 2. an episode that has not ended pulsed within the window → `Live`;
/// 3. the newest episode ended and no hook ran after it → `Disconnected` (the client went away
///    without an end: an end closes the row, which rule 1 catches);
/// 4. a hook ran within the window → `Live`;
/// 5. the newest episode stopped pulsing (not ended) → `Disconnected`;
/// 6. otherwise → `Idle` (quiet, and nothing says the client went away: no sidecar ever
///    reported, or its process is known to have ended cleanly).
pub fn derive(
    session: &Session,
    lease: Lease,
    episodes: &[EpisodeTimes],
    window: Duration,
    now: DateTime<Utc>,
) -> State {
    if lease.of(session, now) != Liveness::Live {
        return State::Closed;
    }
    let fresh = |instant: DateTime<Utc>| instant > now - window;
    if episodes
        .iter()
        .any(|episode| episode.ended_at.is_none() && fresh(episode.last_pulse_at))
    {
        return State::Live;
    }
    let newest = episodes.iter().max_by_key(|episode| episode.started_at);
    if let Some(ended_at) = newest.and_then(|episode| episode.ended_at)
        && session.last_seen_at <= ended_at
    {
        return State::Disconnected;
    }
    if fresh(session.last_seen_at) {
        return State::Live;
    }
    match newest {
        Some(episode) if episode.ended_at.is_none() => State::Disconnected,
        _ => State::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_kit::selector::Selector;
    use chrono::TimeZone;
    use uuid::Uuid;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("valid")
            + Duration::seconds(seconds)
    }

    fn session(last_seen: i64, closed: Option<i64>) -> Session {
        Session {
            id: Uuid::nil(),
            agent: "claude-code".into(),
            session_id: "s".into(),
            source: crate::session::Source::Startup,
            project: None,
            scope: None,
            selector: Selector::All {},
            opened_at: at(0),
            closed_at: closed.map(at),
            last_seen_at: at(last_seen),
            activation_epoch: 1,
            briefing_delivered_at: None,
            briefed_memories: Vec::new(),
        }
    }

    fn episode(started: i64, pulse: i64, ended: Option<i64>) -> EpisodeTimes {
        EpisodeTimes {
            started_at: at(started),
            last_pulse_at: at(pulse),
            ended_at: ended.map(at),
        }
    }

    #[test]
    fn derivation_table() {
        let lease = Lease::new(std::time::Duration::from_secs(24 * 3600));
        let window = Duration::seconds(120);
        let day = 24 * 3600;
        let table: Vec<(&str, Session, Vec<EpisodeTimes>, i64, State)> = vec![
            (
                "explicitly closed",
                session(10, Some(20)),
                vec![],
                30,
                State::Closed,
            ),
            (
                "lease ran out",
                session(10, None),
                vec![],
                10 + day,
                State::Closed,
            ),
            (
                "closed beats a fresh pulse",
                session(10, Some(20)),
                vec![episode(0, 29, None)],
                30,
                State::Closed,
            ),
            (
                "fresh pulse",
                session(0, None),
                vec![episode(0, 500, None)],
                600,
                State::Live,
            ),
            (
                "pulse just inside the window",
                session(0, None),
                vec![episode(0, 481, None)],
                600,
                State::Live,
            ),
            (
                "pulse exactly a window old",
                session(0, None),
                vec![episode(0, 480, None)],
                600,
                State::Disconnected,
            ),
            (
                "client killed: exit pulse, no end",
                session(100, None),
                vec![episode(0, 150, Some(150))],
                160,
                State::Disconnected,
            ),
            (
                "hook after the exit: another process",
                session(170, None),
                vec![episode(0, 150, Some(150))],
                200,
                State::Live,
            ),
            (
                "hook after the exit, now quiet",
                session(170, None),
                vec![episode(0, 150, Some(150))],
                400,
                State::Idle,
            ),
            (
                "no sidecar, fresh hook",
                session(590, None),
                vec![],
                600,
                State::Live,
            ),
            (
                "no sidecar, quiet",
                session(100, None),
                vec![],
                600,
                State::Idle,
            ),
            (
                "sidecar gone silent",
                session(100, None),
                vec![episode(0, 130, None)],
                600,
                State::Disconnected,
            ),
            (
                "old episode ended, new one pulsing",
                session(100, None),
                vec![episode(0, 150, Some(150)), episode(200, 590, None)],
                600,
                State::Live,
            ),
            (
                "replayed old heartbeat: last_seen stays old",
                session(130, None),
                vec![episode(0, 150, Some(150))],
                600,
                State::Disconnected,
            ),
        ];
        for (name, row, episodes, now, expected) in table {
            assert_eq!(
                derive(&row, lease, &episodes, window, at(now)),
                expected,
                "{name}"
            );
        }
    }
}
