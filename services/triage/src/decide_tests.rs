//! Tables F and G row by row, including the evaluation order and the age-guard boundary.

use chrono::TimeZone;

use super::*;

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
        .single()
        .expect("valid")
        + Duration::minutes(minutes)
}

fn ids(range: std::ops::Range<u128>) -> Vec<Uuid> {
    range.map(Uuid::from_u128).collect()
}

fn run(status: Status, watermark: Vec<Uuid>) -> RunState {
    RunState {
        status,
        attempt_id: (status == Status::Pending).then(|| Uuid::from_u128(999)),
        armed_at: (status == Status::Pending).then(|| t(30)),
        watermark,
    }
}

fn facts(listing: Vec<Uuid>) -> BeginFacts {
    BeginFacts {
        live: true,
        opened_at: t(28),
        now: t(30) + Duration::seconds(40),
        turn_count: 0,
        stop_hook_active: false,
        listing: Listing {
            ids: listing,
            truncated: false,
        },
    }
}

fn decline(reason: Reason) -> BeginDecision {
    BeginDecision::Decline {
        reason,
        hand_back: false,
    }
}

#[test]
fn begin_table_f_in_order() {
    let thresholds = Thresholds::default();
    let seen = ids(1..4);
    let with_new = ids(1..5);
    let not_live = BeginFacts {
        live: false,
        ..facts(with_new.clone())
    };
    let fresh_pending = BeginFacts {
        now: t(30) + Duration::seconds(10),
        ..facts(seen.clone())
    };
    let fresh_but_active = BeginFacts {
        stop_hook_active: true,
        ..fresh_pending.clone()
    };
    let turns = BeginFacts {
        turn_count: 3,
        ..facts(vec![])
    };
    let elapsed = BeginFacts {
        now: t(38),
        ..facts(vec![])
    };
    let flood = BeginFacts {
        listing: Listing {
            ids: ids(0..500),
            truncated: true,
        },
        ..facts(vec![])
    };
    let cases: Vec<(&str, RunState, BeginFacts, BeginDecision)> = vec![
        (
            "F1 not live precedes pending",
            run(Status::Pending, seen.clone()),
            not_live.clone(),
            decline(Reason::NotLive),
        ),
        (
            "F1 not live idle",
            run(Status::Idle, vec![]),
            not_live,
            decline(Reason::NotLive),
        ),
        (
            "F2 overflowed",
            run(Status::Overflowed, seen.clone()),
            facts(with_new.clone()),
            decline(Reason::Terminal),
        ),
        (
            "F3 pending fresh",
            run(Status::Pending, seen.clone()),
            fresh_pending,
            decline(Reason::PendingFresh),
        ),
        (
            "F4 pending fresh but stop hook active",
            run(Status::Pending, seen.clone()),
            fresh_but_active,
            BeginDecision::Decline {
                reason: Reason::Pending,
                hand_back: true,
            },
        ),
        (
            "F4 pending old enough",
            run(Status::Pending, seen.clone()),
            facts(seen.clone()),
            BeginDecision::Decline {
                reason: Reason::Pending,
                hand_back: true,
            },
        ),
        (
            "F5 completed no signal",
            run(Status::Completed, seen.clone()),
            facts(seen.clone()),
            decline(Reason::NoSignal),
        ),
        (
            "F5 expired no signal, even with turns",
            run(Status::Expired, seen.clone()),
            BeginFacts {
                turn_count: 50,
                ..facts(seen.clone())
            },
            decline(Reason::NoSignal),
        ),
        (
            "F6 idle without substance",
            run(Status::Idle, vec![]),
            facts(vec![]),
            decline(Reason::Debounce),
        ),
        (
            "F7 overflow",
            run(Status::Idle, vec![]),
            flood,
            BeginDecision::Overflow,
        ),
        (
            "F8 idle with an untriaged event",
            run(Status::Idle, vec![]),
            facts(ids(1..2)),
            BeginDecision::Arm,
        ),
        (
            "F8 idle with turns",
            run(Status::Idle, vec![]),
            turns,
            BeginDecision::Arm,
        ),
        (
            "F8 idle with elapsed time",
            run(Status::Idle, vec![]),
            elapsed,
            BeginDecision::Arm,
        ),
        (
            "F8 completed with a new event",
            run(Status::Completed, seen.clone()),
            facts(with_new.clone()),
            BeginDecision::Arm,
        ),
        (
            "F8 expired with a new event",
            run(Status::Expired, seen),
            facts(with_new),
            BeginDecision::Arm,
        ),
    ];
    for (name, state, facts, expected) in cases {
        assert_eq!(
            decide_begin(&state, &facts, &thresholds),
            expected,
            "{name}"
        );
    }
}

#[test]
fn age_guard_boundary() {
    let thresholds = Thresholds::default();
    let pending = run(Status::Pending, vec![]);
    let at = |seconds: i64| BeginFacts {
        now: t(30) + Duration::seconds(seconds),
        ..facts(vec![])
    };
    let pending_decline = BeginDecision::Decline {
        reason: Reason::Pending,
        hand_back: true,
    };
    assert_eq!(
        decide_begin(&pending, &at(29), &thresholds),
        decline(Reason::PendingFresh)
    );
    assert_eq!(
        decide_begin(&pending, &at(30), &thresholds),
        pending_decline,
        "exactly the minimum age is old enough"
    );
    assert_eq!(
        decide_begin(&pending, &at(-5), &thresholds),
        decline(Reason::PendingFresh),
        "negative age reads as fresh"
    );
    let unknown_age = RunState {
        armed_at: None,
        ..pending
    };
    assert_eq!(
        decide_begin(&unknown_age, &at(1), &thresholds),
        pending_decline,
        "unknown age is not fresh"
    );
}

#[test]
fn elapsed_and_turn_thresholds_are_inclusive() {
    let thresholds = Thresholds::default();
    let idle = run(Status::Idle, vec![]);
    let just_under = BeginFacts {
        now: t(38) - Duration::milliseconds(1),
        turn_count: 2,
        ..facts(vec![])
    };
    assert_eq!(
        decide_begin(&idle, &just_under, &thresholds),
        decline(Reason::Debounce)
    );
    let at_ten = BeginFacts {
        now: t(38),
        ..just_under.clone()
    };
    assert_eq!(
        decide_begin(&idle, &at_ten, &thresholds),
        BeginDecision::Arm
    );
}

#[test]
fn complete_table_g() {
    let attempt = Uuid::from_u128(999);
    let armed = run(Status::Pending, ids(1..4));
    let listing = |range, truncated| Listing {
        ids: ids(range),
        truncated,
    };
    assert_eq!(
        decide_complete(&armed, Uuid::from_u128(1), &listing(1..4, false)),
        CompleteDecision::Conflict,
        "G1 wrong attempt"
    );
    assert_eq!(
        decide_complete(
            &run(Status::Expired, vec![]),
            attempt,
            &listing(1..4, false)
        ),
        CompleteDecision::Conflict,
        "G1 not pending"
    );

    let CompleteDecision::Finish(overflow) =
        decide_complete(&armed, attempt, &listing(0..500, true))
    else {
        panic!("G2 finishes");
    };
    assert_eq!(
        (
            overflow.status,
            overflow.event_count,
            overflow.since_begin_count,
            overflow.truncated
        ),
        (Status::Overflowed, 500, 497, true)
    );
    assert_eq!(overflow.watermark.len(), 500);

    let CompleteDecision::Finish(expired) = decide_complete(&armed, attempt, &listing(1..4, false))
    else {
        panic!("G3 finishes");
    };
    assert_eq!(
        (
            expired.status,
            expired.event_count,
            expired.since_begin_count
        ),
        (Status::Expired, 3, 0)
    );

    let CompleteDecision::Finish(completed) =
        decide_complete(&armed, attempt, &listing(1..6, false))
    else {
        panic!("G4 finishes");
    };
    assert_eq!(
        (
            completed.status,
            completed.event_count,
            completed.since_begin_count
        ),
        (Status::Completed, 5, 2)
    );
    assert_eq!(
        completed.watermark,
        ids(1..6),
        "cumulative: every visible id"
    );
}

#[test]
fn since_begin_is_a_set_difference_not_an_id_order() {
    let attempt = Uuid::from_u128(999);
    let armed = RunState {
        watermark: vec![Uuid::from_u128(10), Uuid::from_u128(20)],
        ..run(Status::Pending, vec![])
    };
    // A late-committing write with an EARLIER id than everything in the watermark.
    let listing = Listing {
        ids: vec![Uuid::from_u128(5), Uuid::from_u128(10), Uuid::from_u128(20)],
        truncated: false,
    };
    let CompleteDecision::Finish(finish) = decide_complete(&armed, attempt, &listing) else {
        panic!("finishes");
    };
    assert_eq!(
        (finish.status, finish.since_begin_count),
        (Status::Completed, 1)
    );
}

#[test]
fn completed_with_an_untriaged_event_reads_as_idle() {
    let completed = run(Status::Completed, ids(1..3));
    let same = Listing {
        ids: ids(1..3),
        truncated: false,
    };
    let more = Listing {
        ids: ids(1..4),
        truncated: false,
    };
    assert_eq!(effective_status(&completed, &same), Status::Completed);
    assert_eq!(effective_status(&completed, &more), Status::Idle);
    let expired = run(Status::Expired, ids(1..3));
    assert_eq!(
        effective_status(&expired, &more),
        Status::Expired,
        "expired stays expired"
    );
}

#[test]
fn closer_claim_and_eligibility_rows() {
    assert!(claimable(Status::Idle) && claimable(Status::Pending));
    assert!(claimable(Status::Expired) && claimable(Status::Completed));
    assert!(!claimable(Status::Overflowed));
    assert_eq!(status_after_claim(Status::Pending), Status::Expired);
    for status in [Status::Idle, Status::Expired, Status::Completed] {
        assert_eq!(status_after_claim(status), status);
    }
}
