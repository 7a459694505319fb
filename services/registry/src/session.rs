//! The session row and how it reads at an instant.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use baton_kit::selector::Selector;

/// How a session was activated when its row was inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Startup,
    Resume,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Startup => "startup",
            Source::Resume => "resume",
        }
    }

    pub fn parse(text: &str) -> Option<Source> {
        match text {
            "startup" => Some(Source::Startup),
            "resume" => Some(Source::Resume),
            _ => None,
        }
    }
}

/// A commitment shown to the agent at startup, as stamped on open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefedMemory {
    pub id: Uuid,
    pub topic: String,
    pub status: String,
}

/// One `registry.agent_sessions` row (the excerpt is read only by the closer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: Uuid,
    pub agent: String,
    pub session_id: String,
    pub source: Source,
    pub project: Option<String>,
    pub scope: Option<String>,
    pub selector: Selector,
    pub opened_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub last_seen_at: DateTime<Utc>,
    pub activation_epoch: i64,
    pub briefing_delivered_at: Option<DateTime<Utc>>,
    pub briefed_memories: Vec<BriefedMemory>,
}

/// How a row reads at `now` (CONTRACT Part 2 notation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// `closed_at IS NULL AND last_seen_at > now − lease`.
    Live,
    /// `closed_at IS NULL AND last_seen_at <= now − lease`: lease ran out, not swept yet.
    Stale,
    /// Closed while the lease was live: `closed_at <= last_seen_at + lease` (inclusive). Writes
    /// stay unattributed; heartbeat and open still resurrect.
    ClosedExplicitly,
    /// Closed after the lease ran out (the sweep, or a late close).
    ClosedImplicitly,
}

impl Liveness {
    /// Closed or stale: a heartbeat, open or attaching write brings it back.
    pub fn is_dead(self) -> bool {
        self != Liveness::Live
    }
}

/// The lease arithmetic every decision shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub duration: Duration,
}

impl Lease {
    pub fn new(duration: std::time::Duration) -> Lease {
        Lease {
            duration: Duration::from_std(duration).unwrap_or(Duration::hours(24)),
        }
    }

    /// Classifies a row from its two timestamps.
    pub fn liveness(
        &self,
        closed_at: Option<DateTime<Utc>>,
        last_seen_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Liveness {
        match closed_at {
            Some(closed_at) if closed_at <= last_seen_at + self.duration => {
                Liveness::ClosedExplicitly
            }
            Some(_) => Liveness::ClosedImplicitly,
            None if last_seen_at > now - self.duration => Liveness::Live,
            None => Liveness::Stale,
        }
    }

    pub fn of(&self, session: &Session, now: DateTime<Utc>) -> Liveness {
        self.liveness(session.closed_at, session.last_seen_at, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hours: i64, millis: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("valid")
            + Duration::hours(hours)
            + Duration::milliseconds(millis)
    }

    #[test]
    fn liveness_rows() {
        let lease = Lease::new(std::time::Duration::from_secs(24 * 3600));
        let seen = at(0, 0);
        let table = [
            // (closed_at, now, expected)
            (None, at(23, 0), Liveness::Live),
            (None, at(24, -1), Liveness::Live),
            (None, at(24, 0), Liveness::Stale),
            (None, at(30, 0), Liveness::Stale),
            (Some(at(1, 0)), at(2, 0), Liveness::ClosedExplicitly),
            (Some(at(24, 0)), at(40, 0), Liveness::ClosedExplicitly),
            (Some(at(24, 1)), at(40, 0), Liveness::ClosedImplicitly),
            (Some(at(25, 0)), at(25, 0), Liveness::ClosedImplicitly),
        ];
        for (closed_at, now, expected) in table {
            assert_eq!(
                lease.liveness(closed_at, seen, now),
                expected,
                "closed_at={closed_at:?} now={now}"
            );
        }
    }
}
