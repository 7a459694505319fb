//! What became of a commitment after a session, read from provenance's trail of its
//! status-changing events (resolve, unresolve, archive with actor and run, oldest first).
//!
//! Rules:
//! - **Undone**: the closer's resolve of a commitment for run R is the `resolve` event by actor
//!   `worker` stamped with R (the last one at or before the verdict's `resolved_at` when there
//!   are several, else the last). It is undone when a later `unresolve` by a user
//!   (`user_dashboard`, `user_api`, `user_mcp`) comes before any later `resolve`: a reopen
//!   after someone else resolved it again undoes that resolve, not the closer's.
//! - **Fate of a briefed commitment** in run R: the first `resolve` stamped with R decides —
//!   by `worker` it was the closer, by anyone else the agent itself (its writes carry the
//!   run). With none, a commitment whose status is `open` or `waiting` is still open; any
//!   other case (resolved outside the session, expired, not a commitment, gone) is `Other`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// One status-changing event of a memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailEvent {
    pub kind: String,
    pub actor: String,
    pub run: Option<Uuid>,
    pub at: DateTime<Utc>,
}

/// A memory's commitment status now and its trail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trail {
    pub memory_id: Uuid,
    /// Empty when not a commitment.
    pub status: String,
    pub events: Vec<TrailEvent>,
}

/// What became of a briefed commitment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    ByAgent,
    ByCloser,
    StillOpen,
    Other,
}

const WORKER: &str = "worker";

fn is_user(actor: &str) -> bool {
    matches!(actor, "user_dashboard" | "user_api" | "user_mcp")
}

/// When a user undid the closer's resolve for `run` (resolved at `resolved_at`), if one did.
pub fn undone_at(
    events: &[TrailEvent],
    run: Uuid,
    resolved_at: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let closer_resolves: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| event.kind == "resolve" && event.actor == WORKER)
        .filter(|(_, event)| event.run == Some(run))
        .map(|(index, _)| index)
        .collect();
    let before = closer_resolves
        .iter()
        .rev()
        .find(|index| resolved_at.is_none_or(|at| events[**index].at <= at));
    let start = *before.or(closer_resolves.last())?;
    events[start + 1..]
        .iter()
        .take_while(|event| event.kind != "resolve")
        .find(|event| event.kind == "unresolve" && is_user(&event.actor))
        .map(|event| event.at)
}

/// What became of `trail`'s commitment briefed to `run` (`None`: provenance has no such memory).
pub fn fate(trail: Option<&Trail>, run: Uuid) -> Fate {
    let Some(trail) = trail else {
        return Fate::Other;
    };
    let first = trail
        .events
        .iter()
        .find(|event| event.kind == "resolve" && event.run == Some(run));
    match first {
        Some(event) if event.actor == WORKER => Fate::ByCloser,
        Some(_) => Fate::ByAgent,
        None if matches!(trail.status.as_str(), "open" | "waiting") => Fate::StillOpen,
        None => Fate::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: u32) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&format!("2026-01-01T00:{minute:02}:00Z"))
            .expect("instant")
            .with_timezone(&Utc)
    }

    fn event(kind: &str, actor: &str, run: Option<Uuid>, minute: u32) -> TrailEvent {
        TrailEvent {
            kind: kind.to_string(),
            actor: actor.to_string(),
            run,
            at: at(minute),
        }
    }

    const R: Uuid = Uuid::from_u128(1);
    const OTHER: Uuid = Uuid::from_u128(2);

    #[test]
    fn a_user_reopen_after_the_closers_resolve_undoes_it_and_nothing_else_does() {
        let cases: Vec<(&str, Vec<TrailEvent>, Option<u32>)> = vec![
            (
                "user reopens",
                vec![
                    event("resolve", "worker", Some(R), 1),
                    event("unresolve", "user_api", None, 5),
                ],
                Some(5),
            ),
            (
                "reopened over MCP",
                vec![
                    event("resolve", "worker", Some(R), 1),
                    event("unresolve", "user_mcp", None, 6),
                ],
                Some(6),
            ),
            (
                "never reopened",
                vec![event("resolve", "worker", Some(R), 1)],
                None,
            ),
            (
                "a reopen before the closer resolved",
                vec![
                    event("unresolve", "user_api", None, 0),
                    event("resolve", "worker", Some(R), 1),
                ],
                None,
            ),
            (
                "the closer resolved another run's",
                vec![
                    event("resolve", "worker", Some(OTHER), 1),
                    event("unresolve", "user_api", None, 5),
                ],
                None,
            ),
            (
                "the agent resolved, not the closer",
                vec![
                    event("resolve", "user_api", Some(R), 1),
                    event("unresolve", "user_api", None, 5),
                ],
                None,
            ),
            (
                "reopened by the system, not a user",
                vec![
                    event("resolve", "worker", Some(R), 1),
                    event("unresolve", "system", None, 5),
                ],
                None,
            ),
            (
                "a reopen of someone else's later resolve",
                vec![
                    event("resolve", "worker", Some(R), 1),
                    event("unresolve", "worker", None, 2),
                    event("resolve", "user_api", None, 3),
                    event("unresolve", "user_api", None, 5),
                ],
                None,
            ),
        ];
        for (name, events, expected) in cases {
            assert_eq!(
                undone_at(&events, R, Some(at(1))),
                expected.map(at),
                "{name}"
            );
        }
    }

    #[test]
    fn the_resolve_matching_the_verdict_is_the_last_one_at_or_before_its_instant() {
        let events = vec![
            event("resolve", "worker", Some(R), 1),
            event("unresolve", "user_api", None, 2),
            event("resolve", "worker", Some(R), 3),
        ];
        assert_eq!(undone_at(&events, R, Some(at(1))), Some(at(2)));
        assert_eq!(undone_at(&events, R, Some(at(3))), None);
        assert_eq!(undone_at(&events, R, None), None, "no instant: the last");
    }

    #[test]
    fn the_first_resolve_stamped_with_the_run_says_who_completed_a_briefed_commitment() {
        let trail = |status: &str, events: Vec<TrailEvent>| Trail {
            memory_id: Uuid::from_u128(9),
            status: status.to_string(),
            events,
        };
        let cases = vec![
            (
                "closer",
                trail("resolved", vec![event("resolve", "worker", Some(R), 1)]),
                Fate::ByCloser,
            ),
            (
                "agent",
                trail("resolved", vec![event("resolve", "user_mcp", Some(R), 1)]),
                Fate::ByAgent,
            ),
            (
                "agent, then undone and resolved by a later closer pass",
                trail(
                    "resolved",
                    vec![
                        event("resolve", "user_api", Some(R), 1),
                        event("unresolve", "user_api", None, 2),
                        event("resolve", "worker", Some(R), 3),
                    ],
                ),
                Fate::ByAgent,
            ),
            ("open", trail("open", vec![]), Fate::StillOpen),
            ("waiting", trail("waiting", vec![]), Fate::StillOpen),
            (
                "resolved outside the session",
                trail("resolved", vec![event("resolve", "user_api", None, 1)]),
                Fate::Other,
            ),
            (
                "resolved in another session",
                trail(
                    "resolved",
                    vec![event("resolve", "user_api", Some(OTHER), 1)],
                ),
                Fate::Other,
            ),
            ("expired", trail("expired", vec![]), Fate::Other),
            ("not a commitment", trail("", vec![]), Fate::Other),
        ];
        for (name, trail, expected) in cases {
            assert_eq!(fate(Some(&trail), R), expected, "{name}");
        }
        assert_eq!(fate(None, R), Fate::Other, "gone");
    }
}
