//! Tables A–D row by row.

use chrono::{Duration, TimeZone};

use super::*;

const LEASE_HOURS: i64 = 24;

fn lease() -> Lease {
    Lease::new(std::time::Duration::from_secs(LEASE_HOURS as u64 * 3600))
}

fn t(hours: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("valid")
        + Duration::hours(hours)
}

fn briefed() -> Vec<BriefedMemory> {
    vec![BriefedMemory {
        id: Uuid::nil(),
        topic: "ship".to_string(),
        status: "open".to_string(),
    }]
}

fn command(source: Source) -> OpenCommand {
    OpenCommand {
        agent: "claude-code".to_string(),
        session_id: "s-1".to_string(),
        source,
        project: Some("baton".to_string()),
        scope: Some("work".to_string()),
        selector: Selector::Scope {
            scope: "work".to_string(),
        },
        briefed_memories: None,
        follows_session_id: None,
    }
}

/// A row opened at t(0), last seen at t(10).
fn row() -> Session {
    let mut session = new_session(Uuid::nil(), &command(Source::Startup), t(0));
    session.last_seen_at = t(10);
    session.activation_epoch = 3;
    session
}

#[derive(Clone, Copy, Debug)]
enum State {
    Live,
    Stale,
    Explicit,
    Implicit,
}

/// The row in a given state, with "now" to evaluate it at.
fn in_state(state: State) -> (Session, DateTime<Utc>) {
    let base = row();
    match state {
        State::Live => (base, t(12)),
        State::Stale => (base, t(10 + LEASE_HOURS + 1)),
        State::Explicit => (
            Session {
                closed_at: Some(t(11)),
                ..base
            },
            t(12),
        ),
        State::Implicit => (
            Session {
                closed_at: Some(t(10 + LEASE_HOURS + 1)),
                ..base
            },
            t(10 + LEASE_HOURS + 2),
        ),
    }
}

#[test]
fn open_table_a() {
    let changed_project = OpenCommand {
        project: Some("other".to_string()),
        ..command(Source::Startup)
    };
    let with_briefing = OpenCommand {
        briefed_memories: Some(briefed()),
        ..command(Source::Startup)
    };
    let resume_with_briefing = OpenCommand {
        briefed_memories: Some(briefed()),
        project: None,
        ..command(Source::Resume)
    };
    let cases: Vec<(&str, Option<State>, OpenCommand, OpenDecision)> = vec![
        (
            "A1 absent startup",
            None,
            command(Source::Startup),
            OpenDecision::Insert,
        ),
        (
            "A2 absent resume",
            None,
            command(Source::Resume),
            OpenDecision::Insert,
        ),
        (
            "A3 live startup differ",
            Some(State::Live),
            changed_project.clone(),
            OpenDecision::Conflict,
        ),
        (
            "A3 stale startup differ",
            Some(State::Stale),
            changed_project.clone(),
            OpenDecision::Conflict,
        ),
        (
            "A3 explicit startup differ",
            Some(State::Explicit),
            changed_project.clone(),
            OpenDecision::Conflict,
        ),
        (
            "A3 implicit startup differ",
            Some(State::Implicit),
            changed_project,
            OpenDecision::Conflict,
        ),
        (
            "A4 live startup equal",
            Some(State::Live),
            command(Source::Startup),
            OpenDecision::Refresh,
        ),
        (
            "A4 live startup equal with key",
            Some(State::Live),
            with_briefing.clone(),
            OpenDecision::Refresh,
        ),
        (
            "A5 live resume",
            Some(State::Live),
            resume_with_briefing.clone(),
            OpenDecision::Activate,
        ),
        (
            "A6 explicit startup",
            Some(State::Explicit),
            command(Source::Startup),
            OpenDecision::Reopen {
                restamp_briefing: false,
            },
        ),
        (
            "A6 implicit startup key",
            Some(State::Implicit),
            with_briefing.clone(),
            OpenDecision::Reopen {
                restamp_briefing: true,
            },
        ),
        (
            "A6 stale startup key",
            Some(State::Stale),
            with_briefing,
            OpenDecision::Reopen {
                restamp_briefing: true,
            },
        ),
        (
            "A7 explicit resume",
            Some(State::Explicit),
            resume_with_briefing.clone(),
            OpenDecision::Reopen {
                restamp_briefing: false,
            },
        ),
        (
            "A7 implicit resume",
            Some(State::Implicit),
            command(Source::Resume),
            OpenDecision::Reopen {
                restamp_briefing: false,
            },
        ),
        (
            "A7 stale resume",
            Some(State::Stale),
            resume_with_briefing,
            OpenDecision::Reopen {
                restamp_briefing: false,
            },
        ),
    ];
    for (name, state, open, expected) in cases {
        let (session, now) = match state {
            Some(state) => {
                let (session, now) = in_state(state);
                (Some(session), now)
            }
            None => (None, t(12)),
        };
        assert_eq!(
            decide_open(session.as_ref(), &open, now, lease()),
            expected,
            "{name}"
        );
    }
}

#[test]
fn open_insert_stamps_briefing_only_when_the_key_is_present() {
    let without = new_session(Uuid::nil(), &command(Source::Startup), t(1));
    assert_eq!(without.briefing_delivered_at, None);
    assert!(without.briefed_memories.is_empty());
    let empty = OpenCommand {
        briefed_memories: Some(vec![]),
        ..command(Source::Resume)
    };
    let stamped = new_session(Uuid::nil(), &empty, t(1));
    assert_eq!(stamped.briefing_delivered_at, Some(t(1)));
    assert_eq!(stamped.activation_epoch, 1);
    assert_eq!(stamped.source, Source::Resume);
}

#[test]
fn selector_comparison_is_typed() {
    let (session, now) = in_state(State::Live);
    let personal = OpenCommand {
        selector: Selector::Scope {
            scope: "personal".to_string(),
        },
        ..command(Source::Startup)
    };
    assert_eq!(
        decide_open(Some(&session), &personal, now, lease()),
        OpenDecision::Conflict
    );
    let absent_scope = OpenCommand {
        scope: None,
        ..command(Source::Startup)
    };
    assert_eq!(
        decide_open(Some(&session), &absent_scope, now, lease()),
        OpenDecision::Conflict
    );
}

#[test]
fn open_transitions() {
    let (live, now) = in_state(State::Live);
    let refreshed = transition_open(&live, OpenDecision::Refresh, &command(Source::Startup), now);
    assert_eq!(refreshed.last_seen_at, now);
    assert_eq!(refreshed.activation_epoch, live.activation_epoch);

    let activated = transition_open(&live, OpenDecision::Activate, &command(Source::Resume), now);
    assert_eq!(activated.activation_epoch, live.activation_epoch + 1);
    assert_eq!(activated.closed_at, None);
    assert_eq!(activated.opened_at, live.opened_at);

    let (closed, later) = in_state(State::Explicit);
    let with_briefing = OpenCommand {
        briefed_memories: Some(briefed()),
        ..command(Source::Startup)
    };
    let restamped = transition_open(
        &closed,
        OpenDecision::Reopen {
            restamp_briefing: true,
        },
        &with_briefing,
        later,
    );
    assert_eq!(restamped.closed_at, None);
    assert_eq!(restamped.activation_epoch, closed.activation_epoch + 1);
    assert_eq!(restamped.briefing_delivered_at, Some(later));
    assert_eq!(restamped.briefed_memories, briefed());

    let untouched = transition_open(
        &closed,
        OpenDecision::Reopen {
            restamp_briefing: false,
        },
        &with_briefing,
        later,
    );
    assert_eq!(
        untouched.briefing_delivered_at,
        closed.briefing_delivered_at
    );
    assert_eq!(untouched.briefed_memories, closed.briefed_memories);
}

#[test]
fn heartbeat_table_b() {
    let cases = [
        (State::Live, HeartbeatDecision::Refresh),
        (State::Stale, HeartbeatDecision::Resurrect),
        (State::Implicit, HeartbeatDecision::Resurrect),
        (State::Explicit, HeartbeatDecision::Resurrect),
    ];
    for (state, expected) in cases {
        let (session, now) = in_state(state);
        let decision = decide_heartbeat(&session, now, lease());
        assert_eq!(decision, expected, "{state:?}");
        let after = transition_heartbeat(&session, decision, now);
        assert_eq!(after.closed_at, None, "{state:?}");
        assert_eq!(
            after.last_seen_at,
            now.max(session.last_seen_at),
            "{state:?}"
        );
        let epoch_step = i64::from(expected == HeartbeatDecision::Resurrect);
        assert_eq!(
            after.activation_epoch,
            session.activation_epoch + epoch_step,
            "{state:?}"
        );
    }
}

#[test]
fn two_heartbeats_that_saw_the_row_dead_advance_the_epoch_once() {
    let (stale, now) = in_state(State::Stale);
    let first = transition_heartbeat(&stale, decide_heartbeat(&stale, now, lease()), now);
    // The second heartbeat re-reads under the lock and finds the row live again.
    let second = transition_heartbeat(&first, decide_heartbeat(&first, now, lease()), now);
    assert_eq!(second.activation_epoch, stale.activation_epoch + 1);
}

#[test]
fn floor_never_moves_backwards() {
    assert_eq!(floor(t(5), t(3)), t(5));
    assert_eq!(floor(t(3), t(5)), t(5));
}

#[test]
fn close_table_c() {
    let (live, now) = in_state(State::Live);
    assert_eq!(decide_close(&live), CloseDecision::Stamp);
    let closed = transition_close(&live, CloseDecision::Stamp, now);
    assert_eq!(closed.closed_at, Some(now));
    assert_eq!(closed.last_seen_at, live.last_seen_at);
    assert_eq!(closed.activation_epoch, live.activation_epoch);

    let (stale, later) = in_state(State::Stale);
    assert_eq!(decide_close(&stale), CloseDecision::Stamp);
    let late_close = transition_close(&stale, CloseDecision::Stamp, later);
    // A close stamped after the lease ran out lands outside the window: implicit.
    assert_eq!(lease().of(&late_close, later), Liveness::ClosedImplicitly);

    for state in [State::Explicit, State::Implicit] {
        let (session, now) = in_state(state);
        assert_eq!(decide_close(&session), CloseDecision::AlreadyClosed);
        assert_eq!(
            transition_close(&session, CloseDecision::AlreadyClosed, now),
            session
        );
    }
}

#[test]
fn resurrection_effects_table_d() {
    let (closed, now) = in_state(State::Implicit);
    let back = resurrect(&closed, now);
    assert_eq!(back.closed_at, None);
    assert_eq!(back.last_seen_at, now);
    assert_eq!(back.activation_epoch, closed.activation_epoch + 1);
    assert_eq!(back.briefed_memories, closed.briefed_memories);
    assert_eq!(back.briefing_delivered_at, closed.briefing_delivered_at);
    assert_eq!(
        (
            &back.opened_at,
            &back.source,
            &back.project,
            &back.scope,
            &back.selector
        ),
        (
            &closed.opened_at,
            &closed.source,
            &closed.project,
            &closed.scope,
            &closed.selector
        )
    );
}

#[test]
fn attach_table_e() {
    let cases = [
        (State::Live, AttachDecision::Floor),
        (State::Stale, AttachDecision::Resurrect),
        (State::Implicit, AttachDecision::Resurrect),
        (State::Explicit, AttachDecision::Unattributed),
    ];
    for (state, expected) in cases {
        let (session, now) = in_state(state);
        let decision = decide_attach(&session, now, lease());
        assert_eq!(decision, expected, "{state:?}");
        let after = transition_attach(&session, decision, now);
        match decision {
            AttachDecision::Floor => {
                assert_eq!(after.last_seen_at, now);
                assert_eq!(after.activation_epoch, session.activation_epoch);
            }
            AttachDecision::Resurrect => {
                assert_eq!(after.closed_at, None);
                assert_eq!(after.activation_epoch, session.activation_epoch + 1);
            }
            AttachDecision::Unattributed => assert_eq!(after, session, "nothing written"),
        }
    }
}

#[test]
fn pulse_instant_is_clamped_to_the_sessions_open_and_now() {
    // (observed, opened_at, now, expected)
    let table = [
        (t(5), t(3), t(8), t(5)),
        (t(0), t(3), t(8), t(3)),
        (t(9), t(3), t(8), t(8)),
        (t(5), t(9), t(8), t(8)),
    ];
    for (observed, opened_at, now, expected) in table {
        assert_eq!(
            pulse_instant(observed, opened_at, now),
            expected,
            "{observed}"
        );
    }
}

#[test]
fn replay_instant_is_clamped_to_last_seen_and_now() {
    // (observed, last_seen, now, expected)
    let table = [
        (t(5), t(3), t(8), t(5)),
        (t(1), t(3), t(8), t(3)),
        (t(9), t(3), t(8), t(8)),
        (t(3), t(3), t(3), t(3)),
    ];
    for (observed, last_seen, now, expected) in table {
        assert_eq!(
            replay_instant(observed, last_seen, now),
            expected,
            "{observed}"
        );
    }
}

#[test]
fn replayed_heartbeat_table() {
    // The row was last seen at t(10); closed explicitly at t(11) or implicitly at t(35).
    let (explicit, _) = in_state(State::Explicit);
    let (implicit, _) = in_state(State::Implicit);
    let (live, _) = in_state(State::Live);
    let table = [
        (
            "observed before the explicit close",
            &explicit,
            t(10),
            HeartbeatDecision::Superseded,
        ),
        (
            "observed exactly at the close",
            &explicit,
            t(11),
            HeartbeatDecision::Superseded,
        ),
        (
            "observed after the explicit close",
            &explicit,
            t(12),
            HeartbeatDecision::Resurrect,
        ),
        (
            "observed before the sweep closed it",
            &implicit,
            t(30),
            HeartbeatDecision::Superseded,
        ),
        (
            "observed after the sweep",
            &implicit,
            t(36),
            HeartbeatDecision::Resurrect,
        ),
        ("live row", &live, t(11), HeartbeatDecision::Refresh),
        (
            "open row, observed after its lease ran out",
            &live,
            t(10 + LEASE_HOURS + 1),
            HeartbeatDecision::Resurrect,
        ),
    ];
    for (name, row, at, expected) in table {
        let decision = decide_replayed_heartbeat(row, at, lease());
        assert_eq!(decision, expected, "{name}");
        let after = transition_heartbeat(row, decision, at);
        if decision == HeartbeatDecision::Superseded {
            assert_eq!(&after, row, "{name}: a superseded replay writes nothing");
        } else {
            assert_eq!(after.last_seen_at, at.max(row.last_seen_at), "{name}");
        }
    }
}
