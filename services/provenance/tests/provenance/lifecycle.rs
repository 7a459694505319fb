//! Revise, resolve and archive: the events each write inserts, all carrying the same payload,
//! and the commitment transition table.

use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_kit::testing::WritesHeld;
use baton_provenance::link::Provenance as WriteProvenance;
use baton_provenance::memory::{CommitmentStatus, MemoryStatus, MemoryType};
use baton_provenance::writes::EdgeIntent;

use crate::{Harness, call, memory, t};

#[tokio::test]
async fn revise_emits_create_and_supersede_plus_the_implicit_commitment_event() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "revise", Some("baton"), t(0)).await;
    let at = call(tenant, t(1));
    let original = harness
        .remember(
            &at,
            &memory(
                MemoryType::Commitment,
                "ship",
                "ship by friday",
                Some("baton"),
            ),
            WriteProvenance::Given(run),
        )
        .await
        .expect("remember");

    // Commitment into commitment: carried (the predecessor's commitment resolves).
    let carried = harness
        .revise(
            &at,
            original.memory_id,
            &memory(
                MemoryType::Commitment,
                "ship",
                "ship by monday",
                Some("baton"),
            ),
            EdgeIntent::Supersedes,
            WriteProvenance::Given(run),
        )
        .await
        .expect("revise");
    let kinds: Vec<(Uuid, String, Option<String>)> = harness.events(tenant).await;
    let stamp = Some(run.to_string());
    assert_eq!(
        kinds[1..].to_vec(),
        vec![
            (carried.memory_id, "create".to_string(), stamp.clone()),
            (original.memory_id, "supersede".to_string(), stamp.clone()),
            (original.memory_id, "resolve".to_string(), stamp.clone()),
        ]
    );
    let successor = harness
        .provenance
        .memory(tenant, carried.memory_id)
        .await
        .expect("successor");
    assert_eq!(
        successor.commitment.expect("carried").status,
        CommitmentStatus::Open
    );
    let predecessor = harness
        .provenance
        .memory(tenant, original.memory_id)
        .await
        .expect("predecessor");
    assert_eq!(predecessor.status, MemoryStatus::Superseded);
    assert_eq!(predecessor.superseded_by, Some(carried.memory_id));

    // Commitment into a decision: demoted (the predecessor's commitment expires, event archive).
    let demoted = harness
        .revise(
            &at,
            carried.memory_id,
            &memory(
                MemoryType::Decision,
                "ship",
                "we ship monday",
                Some("baton"),
            ),
            EdgeIntent::Updates,
            WriteProvenance::Given(run),
        )
        .await
        .expect("revise");
    let kinds = harness.events(tenant).await;
    assert_eq!(
        kinds[4..].to_vec(),
        vec![
            (demoted.memory_id, "create".to_string(), stamp.clone()),
            (carried.memory_id, "supersede".to_string(), stamp.clone()),
            (carried.memory_id, "archive".to_string(), stamp),
        ]
    );

    // A note into a note: just create + supersede.
    let plain = harness
        .write(&at, MemoryType::Note, "n", "one")
        .await
        .expect("note");
    let before = harness.events(tenant).await.len();
    harness
        .revise(
            &at,
            plain.memory_id,
            &memory(MemoryType::Note, "n", "two", None),
            EdgeIntent::Supersedes,
            WriteProvenance::Default,
        )
        .await
        .expect("revise");
    assert_eq!(harness.events(tenant).await.len(), before + 2);

    let refusals = [
        (
            "already superseded",
            plain.memory_id,
            "three",
            ErrorCode::Conflict,
        ),
        (
            "unknown predecessor",
            Uuid::now_v7(),
            "x",
            ErrorCode::NotFound,
        ),
    ];
    for (case, predecessor, content, code) in refusals {
        let error = harness
            .revise(
                &at,
                predecessor,
                &memory(MemoryType::Note, "n", content, None),
                EdgeIntent::Supersedes,
                WriteProvenance::Default,
            )
            .await
            .expect_err(case);
        assert_eq!(error.code, code, "{case}");
    }
}

#[tokio::test]
async fn the_commitment_transition_table_holds_against_the_database() {
    let (harness, tenant) = Harness::with_tenant().await;
    let at = call(tenant, t(1));
    let commitment = harness
        .write(&at, MemoryType::Commitment, "c", "do the thing")
        .await
        .expect("remember");
    let id = commitment.memory_id;
    let steps = [
        (CommitmentStatus::Waiting, Ok("waiting")),
        (CommitmentStatus::Resolved, Ok("resolved")),
        (CommitmentStatus::Waiting, Err(ErrorCode::InvalidTransition)),
        (CommitmentStatus::Expired, Err(ErrorCode::InvalidTransition)),
        (CommitmentStatus::Open, Ok("open")),
        (CommitmentStatus::Expired, Ok("expired")),
        (
            CommitmentStatus::Resolved,
            Err(ErrorCode::InvalidTransition),
        ),
        (CommitmentStatus::Open, Ok("open")),
    ];
    for (target, expected) in steps {
        let result = harness
            .transition(&at, id, target, WriteProvenance::Default)
            .await;
        match expected {
            Ok(status) => {
                let answer = result.expect("allowed");
                assert_eq!(answer.status, status);
                assert_eq!(
                    answer.commitment_id,
                    commitment.commitment_id.expect("commitment")
                );
            }
            Err(code) => assert_eq!(result.expect_err("refused").code, code, "{target:?}"),
        }
    }
    let kinds: Vec<String> = harness
        .events(tenant)
        .await
        .into_iter()
        .map(|(_, kind, _)| kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            "create",
            "revise",
            "resolve",
            "unresolve",
            "archive",
            "unresolve"
        ]
    );

    let note = harness
        .write(&at, MemoryType::Note, "n", "not a commitment")
        .await
        .expect("note");
    let error = harness
        .transition(
            &at,
            note.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Default,
        )
        .await
        .expect_err("no commitment");
    assert_eq!(error.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn resolving_a_blocker_archives_it_and_archive_is_404_once_done() {
    let (harness, tenant) = Harness::with_tenant().await;
    let at = call(tenant, t(1));
    let blocker = harness
        .write(&at, MemoryType::Blocker, "b", "waiting on review")
        .await
        .expect("remember");
    let resolved = harness
        .transition(
            &at,
            blocker.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Default,
        )
        .await
        .expect("resolve");
    assert_eq!(
        (resolved.commitment_id, resolved.status.as_str()),
        (blocker.memory_id, "archived")
    );
    let note = harness
        .write(&at, MemoryType::Note, "n", "archive me")
        .await
        .expect("remember");
    harness.archive(&at, note.memory_id).await.expect("archive");
    for id in [note.memory_id, blocker.memory_id, Uuid::now_v7()] {
        let error = harness.archive(&at, id).await.expect_err("gone");
        assert_eq!(error.code, ErrorCode::NotFound);
    }
}

#[tokio::test]
async fn a_live_duplicate_is_409_and_an_archived_one_is_not() {
    let (harness, tenant) = Harness::with_tenant().await;
    let at = call(tenant, t(1));
    let first = harness
        .write(&at, MemoryType::Fact, "db", "postgres 15")
        .await
        .expect("remember");
    let duplicate = harness
        .write(&at, MemoryType::Fact, "db", "postgres 15")
        .await
        .expect_err("duplicate");
    assert_eq!(duplicate.code, ErrorCode::DuplicateMemory);
    harness
        .write(&at, MemoryType::Note, "db", "postgres 15")
        .await
        .expect("another type is not a duplicate");
    harness
        .archive(&at, first.memory_id)
        .await
        .expect("archive");
    harness
        .write(&at, MemoryType::Fact, "db", "postgres 15")
        .await
        .expect("the archived one is not live");
}

#[tokio::test]
async fn the_runtime_role_cannot_update_or_delete_an_event() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness
        .write(&call(tenant, t(1)), MemoryType::Note, "n", "append only")
        .await
        .expect("remember");
    for (verb, statement) in [
        (
            "UPDATE",
            "UPDATE provenance.memory_events SET event_kind = 'archive'",
        ),
        ("DELETE", "DELETE FROM provenance.memory_events"),
    ] {
        let mut transaction = baton_kit::db::begin_tenant(&harness.runtime_pool, tenant)
            .await
            .expect("begin");
        let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM provenance.memory_events")
            .fetch_one(&mut *transaction)
            .await
            .expect("select is allowed");
        assert_eq!(
            visible, 1,
            "{verb}: the event is visible to the runtime role"
        );
        let result = sqlx::query(statement).execute(&mut *transaction).await;
        assert!(result.is_err(), "{verb} must fail");
        transaction.rollback().await.expect("rollback");
    }
    assert_eq!(harness.count("events").await, 1);
}

/// Two resolves of one commitment at once (lined up: the first is held at its event insert
/// while the second waits for the memory's lock). The second decides from what the first left,
/// resolved, and does nothing: one resolve event, one answer that changed something. A
/// commitment moves without touching its memory's row, so the locked read has to read the
/// commitment again after the wait; deciding from the read taken before it, the second would
/// record a second resolve of a commitment already resolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_resolves_of_one_commitment_at_once_record_one_resolve() {
    let (harness, tenant) = Harness::with_tenant().await;
    let at = call(tenant, t(1));
    let commitment = harness
        .write(&at, MemoryType::Commitment, "c", "ship the migration")
        .await
        .expect("remember");
    let resolve = || {
        harness.transition(
            &at,
            commitment.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Default,
        )
    };
    let held = WritesHeld::on(&harness.admin, "provenance.memory_events").await;
    let (first, second, ()) = tokio::join!(
        resolve(),
        resolve(),
        held.release_once_waiting(&harness.admin, 2)
    );
    let answers = [first.expect("first"), second.expect("second")];
    assert_eq!(
        answers.iter().filter(|answer| answer.changed).count(),
        1,
        "{answers:?}"
    );
    assert!(answers.iter().all(|answer| answer.status == "resolved"));
    let resolves = harness
        .events(tenant)
        .await
        .into_iter()
        .filter(|(_, kind, _)| kind == "resolve")
        .count();
    assert_eq!(resolves, 1);
}
