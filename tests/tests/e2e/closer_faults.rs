//! The closer under faults: killed mid-pass, and a broker killed while sessions close.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinSet;
use uuid::Uuid;

use baton_tests::Baton;
use baton_tests::judge::FakeJudge;
use baton_tests::private_rabbitmq::PrivateRabbitmq;

use crate::closer::{close, commitment, heartbeat, open_briefed};

const DONE: &str = "Done: migrated the orders table to uuid keys and the suite passes.";

/// Counts finished passes and the closer's resolve events, per run and per commitment.
async fn tally(admin: &sqlx::PgPool) -> (i64, i64, i64) {
    let finished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM closer.passes WHERE state = 'finished'")
            .fetch_one(admin)
            .await
            .expect("passes");
    let completed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM closer.passes WHERE state = 'finished' AND outcome = 'completed'",
    )
    .fetch_one(admin)
    .await
    .expect("passes");
    let most_resolves: Option<i64> = sqlx::query_scalar(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM provenance.memory_events \
         WHERE event_kind = 'resolve' AND actor_kind = 'worker' GROUP BY memory_id) per_commitment",
    )
    .fetch_one(admin)
    .await
    .expect("events");
    (finished, completed, most_resolves.unwrap_or(0))
}

async fn wait_until_finished(admin: &sqlx::PgPool, expected: i64, timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let (finished, _, _) = tally(admin).await;
        if finished >= expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {finished} of {expected} passes finished"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Twenty SIGKILLs of the closer, each landing while a generation is in flight.
///
/// Which guarantee comes from where: "one pass row per run" is the `passes` primary key and
/// "a resolved commitment stays resolved once" is provenance's no-op resolve (tested directly in
/// `a_no_op_resolve_only_checks_ownership_and_never_touches_the_lease`); neither can fail here.
/// What this test proves is that the kills hit work and the work was redone: each kill is
/// made while the judge holds an unanswered request (so that generation's verdict is lost), the
/// judge must then be asked again at least once per lost generation, and still every run ends
/// with one completed pass. A closer that acked before its work was durable would lose runs; one
/// that never redid an interrupted pass would leave them unfinished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_closer_mid_pass_twenty_times_redoes_the_interrupted_work_and_loses_no_run() {
    const SESSIONS: usize = 200;
    const KILLS: usize = 20;
    /// The consumer's prefetch (`baton_kit::bus::consumer`): at most this many passes of one
    /// process are in flight, so one kill can interrupt at most this many generations.
    const PREFETCH: usize = 16;
    // A slow judge keeps passes in flight, so kills land mid-pass.
    let judge = FakeJudge::start(Duration::from_millis(300), false).await;
    let judge_env = [
        ("BATON_CLOSER__ENABLED", "true"),
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
    ];
    let baton = Baton::start_services(
        &["registry", "provenance", "triage", "gateway"],
        &[("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "100000")],
    )
    .await;
    let (_, client) = baton.tenant_client("crash").await;
    let admin = baton.admin().await;
    let mut commitments = Vec::new();
    for index in 0..SESSIONS {
        let session = format!("crash-{index}");
        let memory = commitment(
            &client,
            &format!("task-{index}"),
            &format!("Finish task number {index}"),
        )
        .await;
        open_briefed(&client, &session, &[(&memory, &format!("task-{index}"))]).await;
        heartbeat(&client, &session, "All done.").await;
        close(&client, &session).await;
        commitments.push(memory);
    }
    let mut closer = Some(baton.spawn_closer(&judge_env).await);
    let mut interrupted = 0;
    for _ in 0..KILLS {
        assert!(
            until_in_flight(&judge, Duration::from_secs(30)).await,
            "the closer asked the judge nothing: no pass to interrupt"
        );
        let pause = rand::rng().random_range(0..250);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let lost = judge.in_flight();
        closer.take().expect("running").kill().await;
        assert!(lost > 0, "the kill landed while a generation was in flight");
        interrupted += lost;
        // Let the killed process's connections close before the next one starts.
        tokio::time::sleep(Duration::from_millis(50)).await;
        closer = Some(baton.spawn_closer(&judge_env).await);
    }
    wait_until_finished(&admin, SESSIONS as i64, Duration::from_secs(180)).await;
    let (finished, completed, _) = tally(&admin).await;
    assert_eq!(finished, SESSIONS as i64, "every run finished");
    assert_eq!(completed, SESSIONS as i64, "and every one completed");
    let distinct_runs: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT session_run_id) FROM closer.passes")
            .fetch_one(&admin)
            .await
            .expect("runs");
    assert_eq!(distinct_runs, SESSIONS as i64, "no run lost");
    let unresolved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM provenance.commitments WHERE status <> 'resolved'",
    )
    .fetch_one(&admin)
    .await
    .expect("commitments");
    assert_eq!(unresolved, 0, "every briefed commitment ended resolved");
    let redone = judge.requests() - SESSIONS;
    assert!(
        redone >= interrupted,
        "each interrupted generation was asked again: {redone} extra requests for {interrupted} interrupted"
    );
    assert!(
        redone <= KILLS * PREFETCH,
        "repeats stay bounded by the kills: {redone} extra requests for {KILLS} kills"
    );
    println!(
        "kills: {KILLS}, generations interrupted: {interrupted}, judge requests beyond one per run: {redone}"
    );
    for memory in commitments.iter().take(5) {
        let answer = client.get(&format!("/api/v1/memories/{memory}")).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.body["commitment"]["status"], "resolved");
    }
}

/// Waits until the judge holds an unanswered request.
async fn until_in_flight(judge: &FakeJudge, timeout: Duration) -> bool {
    until_in_flight_at_least(judge, 1, timeout).await
}

/// Waits until the judge holds at least `count` unanswered requests.
async fn until_in_flight_at_least(judge: &FakeJudge, count: usize, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if judge.in_flight() >= count {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

/// Sessions closed by several clients at once while the broker is SIGKILLed and started again:
/// every close reaches the closer, and none is handled twice.
///
/// The kill lands while the closer holds deliveries mid-pass (the judge holds their requests
/// until the broker is dead, so they are unacknowledged) and while closes are still being
/// made, so the relay may have a batch on the wire unconfirmed. What makes it pass: each close commits with its outbox row
/// (the HTTP call never touches the broker), the relay deletes a row only after the broker's
/// publisher confirm (an unconfirmed one is published again, same message id), the queue is a
/// durable quorum queue and messages are persistent (a confirmed message survives the kill),
/// and the closer acks only after its pass is settled (an unacked delivery comes back). What
/// keeps the copies from being handled twice is the closer's inbox of message ids and the
/// finished pass it finds: the judge is asked again only for generations the kill cut short,
/// never for a run whose pass had settled, and each commitment is resolved once.
///
/// Broken by hand: the relay deleting its rows without awaiting the broker's confirms → "only
/// 54 of 60 passes finished" (six closes published into the dying broker were lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_closing_while_the_broker_is_killed_all_reach_the_closer_once_it_returns() {
    const SESSIONS: usize = 60;
    const CLOSING_TASKS: usize = 6;
    /// The consumer's prefetch: the most generations one broker kill can cut short.
    const PREFETCH: usize = 16;
    let mut broker = PrivateRabbitmq::start().await;
    // A held judge keeps passes (and their deliveries) in flight until the broker is dead.
    let judge = FakeJudge::start(Duration::from_millis(50), true).await;
    let amqp_url = broker.amqp_url();
    let baton = Baton::start_with(&[
        ("BATON_CLOSER__ENABLED", "true"),
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
        ("BATON_AMQP_URL", amqp_url.as_str()),
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "100000"),
    ])
    .await;
    let (_, client) = baton.tenant_client("broker").await;
    let admin = baton.admin().await;
    let mut runs = HashSet::new();
    for index in 0..SESSIONS {
        let session = format!("broker-{index}");
        let memory = commitment(
            &client,
            "orders-uuid",
            &format!("Migrate the orders table to uuid keys, shard {index}"),
        )
        .await;
        runs.insert(open_briefed(&client, &session, &[(&memory, "orders-uuid")]).await);
        heartbeat(&client, &session, DONE).await;
    }

    // Each task closes its first half, waits for the gate, then closes its second half.
    let closed = Arc::new(AtomicUsize::new(0));
    let (gate, gate_open) = tokio::sync::watch::channel(false);
    let mut closing = JoinSet::new();
    for task in 0..CLOSING_TASKS {
        let (client, closed, mut gate_open) = (client.clone(), closed.clone(), gate_open.clone());
        closing.spawn(async move {
            let mine: Vec<usize> = (task..SESSIONS).step_by(CLOSING_TASKS).collect();
            let (first, second) = mine.split_at(mine.len() / 2);
            for index in first {
                close(&client, &format!("broker-{index}")).await;
                closed.fetch_add(1, Ordering::SeqCst);
            }
            let _ = gate_open.wait_for(|open| *open).await;
            for index in second {
                close(&client, &format!("broker-{index}")).await;
                closed.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    assert!(
        until_in_flight_at_least(&judge, PREFETCH / 2, Duration::from_secs(60)).await,
        "the closer never held {} passes at the judge: no deliveries to cut",
        PREFETCH / 2
    );
    let _ = gate.send(true);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while closed.load(Ordering::SeqCst) < SESSIONS / 2 + CLOSING_TASKS {
        assert!(tokio::time::Instant::now() < deadline, "the closes stalled");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let unacked_at_kill = judge.in_flight();
    let closed_at_kill = closed.load(Ordering::SeqCst);
    broker.kill().await;
    // The held passes now finish while the broker is down: their acks cannot reach it.
    judge.release();
    while let Some(task) = closing.join_next().await {
        task.expect("every close answered while the broker was down");
    }
    let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.outbox")
        .fetch_one(&admin)
        .await
        .expect("outbox");
    // The relay learns of the kill only from a round that publishes and gets no confirm (it
    // gives up on it after its round timeout, 15 s).
    let relay_rounds_cut = logged(
        &baton,
        "outbox relay round failed; starting over",
        Duration::from_secs(40),
    )
    .await;
    println!(
        "closed before the kill: {closed_at_kill}, judge requests open at the kill: \
         {unacked_at_kill}, relay rounds cut: {relay_rounds_cut}, closes waiting in the outbox: \
         {waiting}"
    );
    assert!(
        unacked_at_kill > 0,
        "the kill landed while the closer held unacknowledged deliveries"
    );
    assert!(
        closed_at_kill < SESSIONS,
        "the kill landed while closes were still being made"
    );
    assert!(
        relay_rounds_cut > 0,
        "the relay had publishes without confirms when the broker died"
    );
    assert!(
        waiting > 0,
        "closes made during the outage wait in the outbox"
    );
    broker.restart().await;

    wait_until_finished(&admin, SESSIONS as i64, Duration::from_secs(120)).await;
    let per_run: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT session_run_id, count(*) FROM closer.passes GROUP BY session_run_id",
    )
    .fetch_all(&admin)
    .await
    .expect("passes");
    let arrived: HashSet<String> = per_run.iter().map(|(run, _)| run.to_string()).collect();
    assert_eq!(arrived, runs, "every session.closed arrived");
    let (finished, completed, most_resolves) = tally(&admin).await;
    assert_eq!(finished, SESSIONS as i64, "one finished pass per run");
    assert_eq!(completed, SESSIONS as i64, "and every one completed");
    assert_eq!(most_resolves, 1, "each commitment was resolved once");
    let handled: i64 = sqlx::query_scalar("SELECT count(*) FROM closer.inbox")
        .fetch_one(&admin)
        .await
        .expect("inbox");
    assert_eq!(handled, SESSIONS as i64, "one message id handled per close");
    let redone = judge.requests() - SESSIONS;
    println!("judge requests beyond one per run: {redone}");
    assert!(
        redone <= PREFETCH,
        "only generations the kill cut short were asked again: {redone} extra requests"
    );
    let outbox: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.outbox")
        .fetch_one(&admin)
        .await
        .expect("outbox");
    assert_eq!(outbox, 0, "the outbox drained");
}

/// How many times `message` was logged, once it was at least once (or 0 after `timeout`).
async fn logged(baton: &Baton, message: &str, timeout: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let count = baton
            .logs
            .json()
            .iter()
            .filter(|line| line["message"] == message)
            .count();
        if count > 0 || tokio::time::Instant::now() >= deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
