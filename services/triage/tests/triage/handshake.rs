//! The Stop handshake end to end: arm, write, complete; expiry; cumulative watermark; re-arm;
//! liveness; overflow; conflicts; concurrency.

use futures::future::join_all;
use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_kit::testing::WritesHeld;
use baton_provenance::testing::seed_events;
use baton_triage::status::{Reason, Status};

use crate::{AGENT, Harness, call, t};

#[tokio::test]
async fn a_full_round_trip_completes_with_the_write_it_produced() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "trip", None, None, t(0)).await;
    let first = harness.begin(tenant, "trip", t(1), Some(0), false).await;
    assert_eq!(
        (first.armed, first.reason),
        (false, Some(Reason::Debounce)),
        "turn 1 does not fire"
    );

    let armed = harness.begin(tenant, "trip", t(2), Some(3), false).await;
    assert!(armed.armed);
    assert_eq!(
        (armed.status, armed.run_id, armed.reason),
        (Status::Pending, run, None)
    );
    let attempt = armed.attempt_id.expect("attempt");

    harness.write(tenant, run, "the debrief note", t(3)).await;
    let done = harness.complete(tenant, "trip", attempt, t(4)).await;
    assert_eq!(
        (
            done.status,
            done.event_count,
            done.since_begin_count,
            done.truncated
        ),
        (Status::Completed, 1, 1, false)
    );
    assert_eq!(harness.state(tenant, run, t(5)).await, Status::Completed);

    let repeat = harness
        .triage
        .complete(&call(tenant, t(5)), AGENT, "trip", attempt)
        .await
        .expect_err("repeat");
    assert_eq!(repeat.code, ErrorCode::Conflict);
    assert_eq!(
        harness.state(tenant, run, t(5)).await,
        Status::Completed,
        "the first outcome stands"
    );

    let (log, count) = harness
        .triage
        .attempts(&call(tenant, t(5)), run)
        .await
        .expect("log");
    assert_eq!(count, 1);
    assert_eq!(log[0].outcome.as_deref(), Some("completed"));
    assert_eq!(log[0].finalized_at, Some(t(4)));
}

#[tokio::test]
async fn a_zero_write_continuation_expires_and_reenters_only_on_a_new_event() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "zero", None, None, t(0)).await;
    let armed = harness.begin(tenant, "zero", t(11), None, false).await;
    assert!(armed.armed, "ten minutes since open is substance enough");
    let done = harness
        .complete(tenant, "zero", armed.attempt_id.expect("attempt"), t(12))
        .await;
    assert_eq!((done.status, done.since_begin_count), (Status::Expired, 0));

    let nag = harness.begin(tenant, "zero", t(40), Some(99), false).await;
    assert_eq!(
        (nag.armed, nag.reason, nag.status),
        (false, Some(Reason::NoSignal), Status::Expired),
        "elapsed and turns never re-admit"
    );

    harness.write(tenant, run, "later work", t(41)).await;
    assert_eq!(
        harness.state(tenant, run, t(41)).await,
        Status::Expired,
        "expired stays expired"
    );
    let again = harness.begin(tenant, "zero", t(42), None, false).await;
    assert!(again.armed, "a new event re-admits it");
}

#[tokio::test]
async fn the_watermark_is_cumulative_and_a_write_onto_a_completed_run_reads_idle_and_rearms() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "cumulative", None, None, t(0)).await;
    harness
        .write(tenant, run, "before the first attempt", t(1))
        .await;
    let first = harness.begin(tenant, "cumulative", t(2), None, false).await;
    assert!(first.armed, "an untriaged event arms an idle run");
    harness
        .write(tenant, run, "during the first attempt", t(3))
        .await;
    let done = harness
        .complete(tenant, "cumulative", first.attempt_id.expect("id"), t(4))
        .await;
    assert_eq!(
        (done.status, done.event_count, done.since_begin_count),
        (Status::Completed, 2, 1)
    );

    let quiet = harness
        .begin(tenant, "cumulative", t(5), Some(10), false)
        .await;
    assert_eq!(quiet.reason, Some(Reason::NoSignal));

    harness.write(tenant, run, "after completion", t(6)).await;
    assert_eq!(
        harness.state(tenant, run, t(6)).await,
        Status::Idle,
        "reads back idle"
    );
    let second = harness.begin(tenant, "cumulative", t(7), None, false).await;
    assert!(second.armed, "and re-arms");
    harness
        .write(tenant, run, "during the second attempt", t(8))
        .await;
    let done = harness
        .complete(tenant, "cumulative", second.attempt_id.expect("id"), t(9))
        .await;
    assert_eq!(
        (done.event_count, done.since_begin_count),
        (4, 1),
        "only the new write counts"
    );
}

#[tokio::test]
async fn begin_on_a_closed_or_expired_run_is_not_live_and_leaves_the_lease_alone() {
    let (harness, tenant) = Harness::with_tenant().await;
    let closed = harness.open(tenant, "closed", None, None, t(0)).await;
    harness.close(tenant, "closed", t(1)).await;
    let stale = harness.open(tenant, "stale", None, None, t(0)).await;
    for (session, run, at) in [("closed", closed, t(2)), ("stale", stale, t(60 * 25))] {
        let before = harness.row(tenant, run).await;
        let answer = harness.begin(tenant, session, at, Some(50), true).await;
        assert_eq!(
            (answer.armed, answer.reason),
            (false, Some(Reason::NotLive)),
            "{session}"
        );
        assert_eq!(answer.attempt_id, None);
        let after = harness.row(tenant, run).await;
        assert_eq!(
            after, before,
            "{session}: no resurrection, no lease refresh, same epoch"
        );
    }
    let missing = harness
        .triage
        .begin(&call(tenant, t(1)), AGENT, "never-opened", None, false)
        .await
        .expect_err("404");
    assert_eq!(missing.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn the_age_guard_withholds_a_fresh_attempt_and_stop_hook_active_hands_it_back() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, "guard", None, None, t(0)).await;
    let armed = harness.begin(tenant, "guard", t(11), None, false).await;
    let attempt = armed.attempt_id.expect("attempt");
    let soon = t(11) + chrono::Duration::seconds(5);
    let fresh = harness.begin(tenant, "guard", soon, None, false).await;
    assert_eq!(
        (fresh.reason, fresh.attempt_id),
        (Some(Reason::PendingFresh), None),
        "withheld"
    );
    let active = harness.begin(tenant, "guard", soon, None, true).await;
    assert_eq!(
        (active.reason, active.attempt_id),
        (Some(Reason::Pending), Some(attempt))
    );
    let old = harness.begin(tenant, "guard", t(12), None, false).await;
    assert_eq!(
        (old.reason, old.attempt_id, old.status),
        (Some(Reason::Pending), Some(attempt), Status::Pending)
    );
    let wrong = harness
        .triage
        .complete(&call(tenant, t(12)), AGENT, "guard", Uuid::now_v7())
        .await
        .expect_err("409");
    assert_eq!(wrong.code, ErrorCode::Conflict);
}

#[tokio::test]
async fn overflow_at_begin_is_terminal() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "flood", None, None, t(0)).await;
    seed_events(&harness.admin, tenant, run, 501).await;
    let answer = harness.begin(tenant, "flood", t(1), None, false).await;
    assert_eq!(
        (answer.armed, answer.reason, answer.status),
        (false, Some(Reason::Overflowed), Status::Overflowed)
    );
    let again = harness.begin(tenant, "flood", t(2), None, false).await;
    assert_eq!(again.reason, Some(Reason::Terminal));
}

#[tokio::test]
async fn overflow_at_complete_stores_the_first_500() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "late-flood", None, None, t(0)).await;
    harness.write(tenant, run, "one", t(1)).await;
    let armed = harness.begin(tenant, "late-flood", t(2), None, false).await;
    seed_events(&harness.admin, tenant, run, 500).await;
    let done = harness
        .complete(tenant, "late-flood", armed.attempt_id.expect("id"), t(3))
        .await;
    assert_eq!(
        (
            done.status,
            done.event_count,
            done.since_begin_count,
            done.truncated
        ),
        (Status::Overflowed, 500, 499, true)
    );
    let watermark: i32 = sqlx::query_scalar("SELECT cardinality(watermark) FROM triage.runs")
        .fetch_one(&harness.admin)
        .await
        .expect("watermark");
    assert_eq!(watermark, 500);
}

/// Sixteen begins on one session at once; exactly one arms, the rest see its fresh attempt.
/// The racers are lined up at the attempt log (writes to it held until several wait), so a
/// begin that decided without the run's lock would arm beside the first.
async fn race_begins(harness: &Harness, tenant: Uuid, session_id: &str, minute: i64) {
    let held = WritesHeld::on(&harness.admin, "triage.attempts").await;
    let begins = (0..16).map(|_| {
        let triage = harness.triage.clone();
        let session_id = session_id.to_string();
        tokio::spawn(async move {
            triage
                .begin(&call(tenant, t(minute)), AGENT, &session_id, None, false)
                .await
        })
    });
    let (answers, ()) = tokio::join!(
        join_all(begins),
        held.release_once_waiting(&harness.admin, 2)
    );
    let answers: Vec<_> = answers
        .into_iter()
        .map(|joined| joined.expect("task").expect("begin"))
        .collect();
    let armed = answers.iter().filter(|answer| answer.armed).count();
    assert_eq!(armed, 1, "{answers:?}");
    for answer in answers.iter().filter(|answer| !answer.armed) {
        assert!(
            matches!(answer.reason, Some(Reason::PendingFresh)),
            "{answer:?}"
        );
    }
}

async fn attempts_logged(harness: &Harness) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM triage.attempts")
        .fetch_one(&harness.admin)
        .await
        .expect("count")
}

/// A run triage has never seen: the first begin creates its row, the others wait on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_begins_arm_exactly_one_attempt() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, "race", None, None, t(0)).await;
    race_begins(&harness, tenant, "race", 20).await;
    assert_eq!(attempts_logged(&harness).await, 1);
}

/// A run triage already holds (expired, then re-admitted by a new event): its row exists, so
/// only the row lock taken before deciding keeps the sixteen from each arming an attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_begins_on_a_held_run_arm_exactly_one_attempt() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "again", None, None, t(0)).await;
    let first = harness.begin(tenant, "again", t(11), None, false).await;
    let done = harness
        .complete(tenant, "again", first.attempt_id.expect("attempt"), t(12))
        .await;
    assert_eq!(done.status, Status::Expired);
    harness.write(tenant, run, "later work", t(13)).await;
    race_begins(&harness, tenant, "again", 14).await;
    assert_eq!(attempts_logged(&harness).await, 2);
}
