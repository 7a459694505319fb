//! CONTRACT table E against registry and provenance on real Postgres.

use futures::future::join_all;
use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_provenance::link::Provenance as WriteProvenance;
use baton_provenance::memory::{ActorKind, CommitmentStatus, MemoryType};
use baton_provenance::service::Written;
use baton_registry::session::Liveness;

use crate::{Harness, call, memory, t};

fn note(content: &str) -> baton_provenance::validate::NewMemory {
    memory(MemoryType::Note, "attach", content, Some("baton"))
}

/// Writes a note at hour `hours` naming `run` as its provenance; the write must succeed.
async fn write_in(
    harness: &Harness,
    tenant: Uuid,
    hours: i64,
    content: &str,
    run: Uuid,
) -> Written {
    harness
        .remember(
            &call(tenant, t(hours)),
            &note(content),
            WriteProvenance::Given(run),
        )
        .await
        .expect("the write succeeds")
}

#[tokio::test]
async fn foreign_and_unknown_run_ids_fail_the_write_and_persist_nothing() {
    let harness = Harness::new().await;
    let (owner, other) = (Uuid::now_v7(), Uuid::now_v7());
    let foreign_run = harness.open(other, "theirs", Some("baton"), t(0)).await;
    for run in [foreign_run, Uuid::now_v7()] {
        let error = harness
            .remember(&call(owner, t(1)), &note("x"), WriteProvenance::Given(run))
            .await
            .expect_err("400");
        assert_eq!(error.code, ErrorCode::InvalidInput);
    }
    assert_eq!(harness.count("memories").await, 0);
    assert_eq!(harness.count("events").await, 0);
    let theirs = harness.row(other, foreign_run).await;
    assert_eq!(
        theirs.last_seen_at,
        t(0),
        "the other tenant's lease is untouched"
    );
}

#[tokio::test]
async fn an_explicitly_closed_run_leaves_the_write_unattributed_and_the_row_alone() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "closed", Some("baton"), t(0)).await;
    harness.close(tenant, "closed", t(1)).await;
    let written = write_in(&harness, tenant, 2, "after close", run).await;
    assert_eq!(written.stamp, None);
    assert_eq!(
        harness.events(tenant).await,
        vec![(written.memory_id, "create".to_string(), None)]
    );
    let row = harness.row(tenant, run).await;
    assert_eq!(
        (row.closed_at, row.last_seen_at, row.activation_epoch),
        (Some(t(1)), t(0), 1)
    );
}

#[tokio::test]
async fn a_live_run_is_attached_and_its_lease_floored() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "live", Some("baton"), t(0)).await;
    let written = write_in(&harness, tenant, 3, "live", run).await;
    assert_eq!(written.stamp, Some(run));
    let events = harness.events(tenant).await;
    assert_eq!(
        events,
        vec![(
            written.memory_id,
            "create".to_string(),
            Some(run.to_string())
        )]
    );
    let row = harness.row(tenant, run).await;
    assert_eq!((row.last_seen_at, row.activation_epoch), (t(3), 1));
}

#[tokio::test]
async fn stale_and_implicitly_closed_runs_resurrect_then_attach() {
    let (harness, tenant) = Harness::with_tenant().await;
    let stale = harness.open(tenant, "stale", Some("baton"), t(0)).await;
    let written = write_in(&harness, tenant, 30, "after a night", stale).await;
    assert_eq!(written.stamp, Some(stale));
    let row = harness.row(tenant, stale).await;
    assert_eq!(
        (row.closed_at, row.last_seen_at, row.activation_epoch),
        (None, t(30), 2)
    );

    let swept = harness.open(tenant, "swept", Some("baton"), t(0)).await;
    // A close landing past the lease reads as implicit, as the sweep's does.
    harness.close(tenant, "swept", t(26)).await;
    let row = harness.row(tenant, swept).await;
    assert_eq!(
        harness.registry.lease().of(&row, t(27)),
        Liveness::ClosedImplicitly
    );
    let written = write_in(&harness, tenant, 27, "after the sweep", swept).await;
    assert_eq!(written.stamp, Some(swept));
    let row = harness.row(tenant, swept).await;
    assert_eq!((row.closed_at, row.activation_epoch), (None, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_writes_on_a_stale_run_resurrect_it_once() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "race", Some("baton"), t(0)).await;
    let writes = (0..2).map(|index| {
        let provenance = harness.provenance.clone();
        tokio::spawn(async move {
            provenance
                .remember(
                    &call(tenant, t(30)),
                    &note(&format!("writer {index}")),
                    ActorKind::UserApi,
                    WriteProvenance::Given(run),
                )
                .await
        })
    });
    for joined in join_all(writes).await {
        assert_eq!(joined.expect("task").expect("write").stamp, Some(run));
    }
    let row = harness.row(tenant, run).await;
    assert_eq!(row.activation_epoch, 2, "epoch + 1 exactly once");
}

#[tokio::test]
async fn the_single_open_default_attaches_only_a_sole_live_run_of_the_project() {
    let (harness, tenant) = Harness::with_tenant().await;
    let at = call(tenant, t(1));
    let none = harness
        .remember(&at, &note("zero runs"), WriteProvenance::Default)
        .await
        .expect("write");
    assert_eq!(none.stamp, None, "zero live runs: unattributed");

    let only = harness.open(tenant, "one", Some("baton"), t(0)).await;
    harness.open(tenant, "elsewhere", Some("other"), t(0)).await;
    let one = harness
        .remember(&at, &note("one run"), WriteProvenance::Default)
        .await
        .expect("write");
    assert_eq!(one.stamp, Some(only), "exactly one live run of the project");
    let row = harness.row(tenant, only).await;
    assert_eq!(
        row.last_seen_at,
        t(1),
        "the attached run's lease is floored"
    );

    harness.open(tenant, "two", Some("baton"), t(0)).await;
    let two = harness
        .remember(&at, &note("two runs"), WriteProvenance::Default)
        .await
        .expect("write");
    assert_eq!(two.stamp, None, "two live runs: unattributed");

    let unprojected = harness
        .write(&call(tenant, t(1)), MemoryType::Note, "n", "no project")
        .await
        .expect("write");
    assert_eq!(
        unprojected.stamp, None,
        "NULL project matches only NULL-project runs"
    );
}

#[tokio::test]
async fn an_upper_case_run_id_is_stored_lower_case() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "case", Some("baton"), t(0)).await;
    let upper = run.to_string().to_uppercase();
    let provenance = baton_provenance::link::Provenance::from_proto(Some(
        &baton_proto::provenance::v1::WriteProvenance {
            source: Some(
                baton_proto::provenance::v1::write_provenance::Source::SessionRunId(upper),
            ),
        },
    ))
    .expect("valid");
    harness
        .remember(&call(tenant, t(1)), &note("case"), provenance)
        .await
        .expect("write");
    let stored: String =
        sqlx::query_scalar("SELECT payload->>'sessionRunId' FROM provenance.memory_events")
            .fetch_one(&harness.admin)
            .await
            .expect("payload");
    assert_eq!(stored, run.to_string());
    assert_eq!(stored, stored.to_lowercase());
}

#[tokio::test]
async fn a_no_op_resolve_only_checks_ownership_and_never_touches_the_lease() {
    let harness = Harness::new().await;
    let (tenant, other) = (Uuid::now_v7(), Uuid::now_v7());
    let run = harness.open(tenant, "noop", Some("baton"), t(0)).await;
    let foreign = harness.open(other, "theirs", Some("baton"), t(0)).await;
    let commitment = harness
        .remember(
            &call(tenant, t(0)),
            &memory(MemoryType::Commitment, "c", "ship it", Some("baton")),
            WriteProvenance::Default,
        )
        .await
        .expect("write");
    harness
        .transition(
            &call(tenant, t(1)),
            commitment.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Default,
        )
        .await
        .expect("resolve");
    let before = harness.row(tenant, run).await;
    let events_before = harness.count("events").await;

    let again = harness
        .transition(
            &call(tenant, t(5)),
            commitment.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Given(run),
        )
        .await
        .expect("no-op");
    assert!(!again.changed);
    assert_eq!(again.status, "resolved");
    let after = harness.row(tenant, run).await;
    assert_eq!(
        after.last_seen_at, before.last_seen_at,
        "no attach, no lease refresh"
    );
    assert_eq!(harness.count("events").await, events_before, "no event");

    let error = harness
        .transition(
            &call(tenant, t(5)),
            commitment.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Given(foreign),
        )
        .await
        .expect_err("foreign run");
    assert_eq!(error.code, ErrorCode::InvalidInput);
}

#[tokio::test]
async fn pre_resolved_provenance_never_attaches_or_resurrects() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "closer", Some("baton"), t(0)).await;
    harness.close(tenant, "closer", t(30)).await;
    let written = harness
        .provenance
        .remember(
            &call(tenant, t(31)),
            &note("closer write"),
            ActorKind::Worker,
            WriteProvenance::PreResolved(run),
        )
        .await
        .expect("write");
    assert_eq!(written.stamp, Some(run));
    let row = harness.row(tenant, run).await;
    assert_eq!(
        (row.closed_at, row.activation_epoch),
        (Some(t(30)), 1),
        "still closed, same epoch"
    );
}
