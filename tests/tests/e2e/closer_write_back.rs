//! The closer killed inside a pass's resolve → write-back window (issue 26, R5).
//!
//! No hook in the closer holds it there: the test's admin connection holds a row lock the next
//! statement of the pass needs, waits until Postgres shows that statement blocked behind it
//! (`pg_blocking_pids`), SIGKILLs the closer, releases the lock and starts a fresh one.

use std::future::Future;
use std::time::Duration;

use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use baton_tests::Baton;
use baton_tests::judge::FakeJudge;

use crate::closer::{close, commitment, heartbeat, open_briefed, settled_pass};

const DONE: &str = "Done: all three parts shipped and the suite passes.";

/// A lock the test's admin connection holds, and that connection's backend pid.
pub struct Held {
    transaction: Transaction<'static, Postgres>,
    pub pid: i32,
}

impl Held {
    /// Takes `statement` (a `LOCK TABLE` or a `SELECT … FOR …` on `row`) in a transaction left
    /// open.
    pub async fn take(admin: &PgPool, statement: &'static str, row: Option<Uuid>) -> Held {
        let mut transaction = admin.begin().await.expect("begin");
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *transaction)
            .await
            .expect("pid");
        let query = sqlx::query(statement);
        let query = match row {
            Some(id) => query.bind(id),
            None => query,
        };
        query.execute(&mut *transaction).await.expect("lock");
        Held { transaction, pid }
    }

    /// How many backends wait on this lock right now.
    pub async fn waiters(&self, admin: &PgPool) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        )
        .bind(self.pid)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity")
    }

    pub async fn release(self) {
        self.transaction.rollback().await.expect("release");
    }
}

/// Polls `check` until it holds; fails naming `what` after `timeout`.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never saw: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The closer's resolve events on `memories`, as provenance recorded them.
pub async fn resolves(admin: &PgPool, memories: &[Uuid]) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM provenance.memory_events \
         WHERE event_kind = 'resolve' AND actor_kind = 'worker' AND memory_id = ANY($1)",
    )
    .bind(memories)
    .fetch_one(admin)
    .await
    .expect("memory_events")
}

/// Moves the pass on from `gate` to a lock it takes later: once the pass waits at `gate`, takes
/// `next` (a statement and its row, as [`Held::take`]), releases `gate`, and answers `next`
/// held once every resolve of `memories` is made and the pass waits at `next` (`step` names it).
async fn hold_further(
    admin: &PgPool,
    memories: &[Uuid],
    wait: Duration,
    gate: Held,
    next: (&'static str, Option<Uuid>),
    step: &str,
) -> Held {
    let lock = &gate;
    wait_until("the pass waiting at the gate", wait, || async move {
        lock.waiters(admin).await > 0
    })
    .await;
    let held = Held::take(admin, next.0, next.1).await;
    gate.release().await;
    let lock = &held;
    let what = format!("every resolve made and {step} waiting");
    wait_until(&what, wait, || async move {
        resolves(admin, memories).await == memories.len() as i64 && lock.waiters(admin).await > 0
    })
    .await;
    held
}

/// Where a run's closer is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillPoint {
    /// Two resolves made, the third waiting in provenance: no write-back yet.
    MidResolve,
    /// Every resolve made and triage's write-back landed; the pass row's settle waits.
    AtSettle,
    /// Every resolve made in provenance, the third one's verdict mark waiting: the verdicts say
    /// two resolves.
    AtMark,
}

/// Twelve SIGKILLs, each inside a pass's window between its resolves and its final write-back
/// (`store::settle`), taking turns at three points: during the resolves (two of three made, the
/// third held at its provenance row), between the third resolve and its verdict's mark (the
/// verdict row held), and at the settle itself (triage's write-back already in, the
/// `closer.passes` row held). A fresh closer picks up the returned message each time.
///
/// What makes it pass:
/// - killed mid-resolve, the re-run claims again and asks the judge again, and the live re-read
///   before each resolve skips the commitments already resolved: each gets exactly one resolve
///   event (provenance's no-op resolve backs this up);
/// - killed before the third resolve's mark, the re-run finds that commitment resolved by its
///   own run's worker and counts it (`pass/resolve.rs`); without that it marked it `skipped`
///   and the pass reported 2 of its 3 resolves (broken by hand);
/// - killed at the settle, `Passes::recovered` sees triage holding this pass's own attempt
///   completed and settles the pass `completed` without asking the judge again. Without it the
///   re-run finds the run not eligible (its watermark covers every event) and the pass ends
///   `not-eligible`; nothing else settles a pass `completed` without a generation, so "completed
///   and the judge not asked again" is the trace of `recovered()` having run (broken by hand,
///   run 0 settled `("finished", "not-eligible")`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_closer_between_its_resolves_and_its_write_back_resolves_each_commitment_once_and_recovers()
 {
    const RUNS: usize = 12;
    const PARTS: usize = 3;
    let judge = FakeJudge::start(Duration::ZERO, false).await;
    let judge_env = [
        ("BATON_CLOSER__ENABLED", "true"),
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
    ];
    let baton = Baton::start_services(&["registry", "provenance", "triage", "gateway"], &[]).await;
    let (_, client) = baton.tenant_client("window").await;
    let admin = &baton.admin().await;
    let wait = Duration::from_secs(60);
    let mut closer = baton.spawn_closer(&judge_env).await;
    let mut every_memory = Vec::new();
    let (mut recovered, mut redone) = (0, 0);
    for index in 0..RUNS {
        let session = format!("window-{index}");
        let mut memories = Vec::new();
        for part in 0..PARTS {
            let topic = format!("task-{index}-{part}");
            let content = format!("Ship part {part} of task {index}");
            memories.push(commitment(&client, &topic, &content).await);
        }
        let briefed: Vec<(&str, &str)> = memories.iter().map(|id| (id.as_str(), "task")).collect();
        let run = open_briefed(&client, &session, &briefed).await;
        heartbeat(&client, &session, DONE).await;
        let ids: &Vec<Uuid> = &memories
            .iter()
            .map(|id| id.parse().expect("uuid"))
            .collect();
        let asked_before = judge.requests();
        let point = [
            KillPoint::AtSettle,
            KillPoint::MidResolve,
            KillPoint::AtMark,
        ][index % 3];
        let held = match point {
            KillPoint::MidResolve => {
                let third = ids[PARTS - 1];
                let held = Held::take(
                    admin,
                    "SELECT 1 FROM provenance.memories WHERE id = $1 FOR UPDATE",
                    Some(third),
                )
                .await;
                close(&client, &session).await;
                let lock = &held;
                wait_until(
                    "two resolves made, the third waiting",
                    wait,
                    || async move {
                        resolves(admin, &ids[..PARTS - 1]).await == (PARTS - 1) as i64
                            && lock.waiters(admin).await > 0
                    },
                )
                .await;
                held
            }
            KillPoint::AtMark => {
                // The first resolve is held at its provenance row: the verdicts are recorded by
                // then, so the third's verdict row can be taken before any resolve is made.
                let gate = Held::take(
                    admin,
                    "SELECT 1 FROM provenance.memories WHERE id = $1 FOR UPDATE",
                    Some(ids[0]),
                )
                .await;
                close(&client, &session).await;
                let third_mark = (
                    "SELECT 1 FROM closer.verdicts WHERE memory_id = $1 FOR UPDATE",
                    Some(ids[PARTS - 1]),
                );
                hold_further(admin, ids, wait, gate, third_mark, "the third's mark").await
            }
            KillPoint::AtSettle => {
                // The claim updates the pass row too, so the row is held only once the claim is
                // recorded: until then the pass waits at its verdict (the table is locked).
                let gate =
                    Held::take(admin, "LOCK TABLE closer.verdicts IN SHARE MODE", None).await;
                close(&client, &session).await;
                let settle = (
                    "SELECT 1 FROM closer.passes WHERE session_run_id = $1 FOR NO KEY UPDATE",
                    Some(run.parse().expect("uuid")),
                );
                let held = hold_further(admin, ids, wait, gate, settle, "the settle").await;
                let status: String =
                    sqlx::query_scalar("SELECT status FROM triage.runs WHERE session_run_id = $1")
                        .bind(run.parse::<Uuid>().expect("uuid"))
                        .fetch_one(admin)
                        .await
                        .expect("triage run");
                assert_eq!(
                    status, "completed",
                    "triage's write-back landed before the kill"
                );
                held
            }
        };
        closer.kill().await;
        held.release().await;
        closer = baton.spawn_closer(&judge_env).await;
        let (state, outcome, _) = settled_pass(admin, &run, 1, wait).await;
        assert_eq!(
            (state.as_str(), outcome.as_str()),
            ("finished", "completed"),
            "run {index}, killed {point:?}: the fresh closer finished the pass"
        );
        let asked_again = judge.requests() - asked_before - 1;
        match point {
            KillPoint::AtSettle => {
                assert_eq!(
                    asked_again, 0,
                    "run {index}: recovered from its own write-back, no new generation"
                );
                recovered += 1;
            }
            KillPoint::MidResolve | KillPoint::AtMark => {
                assert_eq!(
                    asked_again, 1,
                    "run {index}: the interrupted pass was redone"
                );
                redone += 1;
            }
        }
        every_memory.extend(ids.iter().copied());
    }
    let per_commitment: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT memory_id, count(*) FROM provenance.memory_events \
         WHERE event_kind = 'resolve' AND actor_kind = 'worker' GROUP BY memory_id",
    )
    .fetch_all(admin)
    .await
    .expect("memory_events");
    assert_eq!(
        per_commitment.len(),
        every_memory.len(),
        "every commitment was resolved"
    );
    for (memory, count) in &per_commitment {
        assert_eq!(*count, 1, "commitment {memory} received {count} resolves");
    }
    let passes: Vec<(String, Option<String>, i32)> =
        sqlx::query_as("SELECT state, outcome, resolved FROM closer.passes")
            .fetch_all(admin)
            .await
            .expect("passes");
    assert_eq!(passes.len(), RUNS, "one pass row per run");
    assert!(
        passes
            .iter()
            .all(|(state, outcome, _)| state == "finished"
                && outcome.as_deref() == Some("completed")),
        "every run ended with one completed pass: {passes:?}"
    );
    // A pass reports every commitment it resolved, across the attempt the kill cut and the one
    // that finished (recovered or redone), as its verdicts record them.
    assert!(
        passes
            .iter()
            .all(|(_, _, resolved)| *resolved == PARTS as i32),
        "each pass counts its {PARTS} resolves: {passes:?}"
    );
    println!("kills: {RUNS}, recovered from their own write-back: {recovered}, redone: {redone}");
}
