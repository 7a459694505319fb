//! Tables A–D against the database, row by row.

use baton_kit::error::ErrorCode;
use baton_kit::selector::Selector;
use baton_registry::session::{BriefedMemory, Liveness, Source};
use uuid::Uuid;

use crate::{Harness, resume, startup, t};

fn briefed() -> Vec<BriefedMemory> {
    vec![BriefedMemory {
        id: Uuid::now_v7(),
        topic: "finish the migration".to_string(),
        status: "open".to_string(),
    }]
}

#[tokio::test]
async fn a1_startup_inserts_and_stamps_briefing_only_with_the_key() {
    let (harness, tenant) = Harness::with_tenant().await;
    let plain = harness.open(tenant, &startup("a1"), t(0)).await;
    assert!(plain.created && !plain.reopened);
    assert_eq!(plain.session.activation_epoch, 1);
    assert_eq!(plain.session.briefing_delivered_at, None);

    let mut stamped = startup("a1-key");
    stamped.briefed_memories = Some(vec![]);
    let opened = harness.open(tenant, &stamped, t(0)).await;
    assert_eq!(
        opened.session.briefing_delivered_at,
        Some(t(0)),
        "[] counts as delivered"
    );
}

#[tokio::test]
async fn a2_resume_of_an_unknown_key_inserts_a_resume_row() {
    let harness = Harness::new().await;
    let opened = harness.open(Uuid::now_v7(), &resume("a2"), t(0)).await;
    assert!(opened.created);
    assert_eq!(opened.session.source, Source::Resume);
}

#[tokio::test]
async fn a3_startup_with_changed_facets_is_a_conflict_and_writes_nothing() {
    let (harness, tenant) = Harness::with_tenant().await;
    let first = harness.open(tenant, &startup("a3"), t(0)).await;
    let changes = [
        {
            let mut changed = startup("a3");
            changed.project = Some("other".to_string());
            changed
        },
        {
            let mut changed = startup("a3");
            changed.scope = None;
            changed
        },
        {
            let mut changed = startup("a3");
            changed.selector = Selector::Scope {
                scope: "personal".to_string(),
            };
            changed
        },
    ];
    for changed in changes {
        let error = harness
            .registry
            .open(tenant, &changed, t(1))
            .await
            .expect_err("409");
        assert_eq!(error.code, ErrorCode::Conflict);
    }
    let row = harness
        .registry
        .get_by_id(tenant, first.session.id)
        .await
        .expect("row");
    assert_eq!(row, first.session, "nothing written");
    // Also on a closed row.
    harness.close(tenant, "a3", t(2)).await;
    let mut changed = startup("a3");
    changed.project = None;
    let error = harness
        .registry
        .open(tenant, &changed, t(3))
        .await
        .expect_err("409");
    assert_eq!(error.code, ErrorCode::Conflict);
}

#[tokio::test]
async fn a4_duplicate_startup_refreshes_and_never_restamps() {
    let (harness, tenant) = Harness::with_tenant().await;
    let first = harness.open(tenant, &startup("a4"), t(0)).await;
    let mut again = startup("a4");
    again.briefed_memories = Some(briefed());
    let second = harness.open(tenant, &again, t(2)).await;
    assert!(!second.created && !second.reopened);
    assert_eq!(second.session.id, first.session.id);
    assert_eq!(second.session.activation_epoch, 1);
    assert_eq!(second.session.last_seen_at, t(2));
    assert_eq!(second.session.briefing_delivered_at, None);
    assert!(second.session.briefed_memories.is_empty());
}

#[tokio::test]
async fn a5_resume_of_a_live_row_is_an_activation_not_a_reopen() {
    let (harness, tenant) = Harness::with_tenant().await;
    let first = harness.open(tenant, &startup("a5"), t(0)).await;
    let mut moved = resume("a5");
    moved.project = Some("moved-cwd".to_string());
    let resumed = harness.open(tenant, &moved, t(1)).await;
    assert!(!resumed.created && !resumed.reopened);
    assert_eq!(resumed.session.activation_epoch, 2);
    assert_eq!(
        resumed.session.project, first.session.project,
        "identity is frozen"
    );
    assert_eq!(
        resumed.session.source,
        Source::Startup,
        "row keeps its source"
    );
    assert_eq!(resumed.session.opened_at, t(0));
}

#[tokio::test]
async fn a6_startup_reopens_closed_and_stale_rows_restamping_only_with_the_key() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, &startup("a6"), t(0)).await;
    harness.close(tenant, "a6", t(1)).await;
    let mut with_key = startup("a6");
    with_key.briefed_memories = Some(briefed());
    let reopened = harness.open(tenant, &with_key, t(2)).await;
    assert!(reopened.reopened && !reopened.created);
    assert_eq!(reopened.session.closed_at, None);
    assert_eq!(reopened.session.activation_epoch, 2);
    assert_eq!(reopened.session.briefing_delivered_at, Some(t(2)));
    assert_eq!(reopened.session.briefed_memories.len(), 1);

    // Stale (lease ran out, never closed): reopen without the key leaves the stamp.
    let stale = harness.open(tenant, &startup("a6"), t(40)).await;
    assert!(stale.reopened);
    assert_eq!(stale.session.activation_epoch, 3);
    assert_eq!(stale.session.briefing_delivered_at, Some(t(2)));
    assert_eq!(stale.session.last_seen_at, t(40));
}

#[tokio::test]
async fn a7_resume_reopens_without_restamping() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, &startup("a7"), t(0)).await;
    harness.close(tenant, "a7", t(1)).await;
    let mut with_key = resume("a7");
    with_key.briefed_memories = Some(briefed());
    let reopened = harness.open(tenant, &with_key, t(2)).await;
    assert!(reopened.reopened);
    assert_eq!(reopened.session.activation_epoch, 2);
    assert_eq!(reopened.session.briefing_delivered_at, None);
    assert!(reopened.session.briefed_memories.is_empty());
}

#[tokio::test]
async fn heartbeat_table_b_refreshes_live_and_resurrects_every_dead_state() {
    let (harness, tenant) = Harness::with_tenant().await;
    let registry = &harness.registry;
    let missing = registry
        .heartbeat(tenant, "claude-code", "nope", None, t(0))
        .await;
    assert_eq!(missing.expect_err("404").code, ErrorCode::NotFound);

    registry
        .open(tenant, &startup("b"), t(0))
        .await
        .expect("open");
    let live = registry
        .heartbeat(tenant, "claude-code", "b", Some("first"), t(1))
        .await
        .expect("beat");
    assert!(!live.resurrected);
    assert_eq!((live.activation_epoch, live.last_seen_at), (1, t(1)));

    // A heartbeat carrying an older clock never moves the lease backwards.
    let older = registry
        .heartbeat(tenant, "claude-code", "b", None, t(0))
        .await
        .expect("beat");
    assert_eq!(older.last_seen_at, t(1));
    assert_eq!(
        harness.excerpt(live.id).await.as_deref(),
        Some("first"),
        "absent excerpt keeps"
    );

    // Stale: lease expired, not closed.
    let stale = registry
        .heartbeat(tenant, "claude-code", "b", None, t(30))
        .await
        .expect("beat");
    assert!(stale.resurrected);
    assert_eq!(stale.activation_epoch, 2);
    let next = registry
        .heartbeat(tenant, "claude-code", "b", None, t(31))
        .await
        .expect("beat");
    assert!(
        !next.resurrected,
        "the beat after a resurrection is ordinary"
    );
    assert_eq!(next.activation_epoch, 2);

    // Explicitly closed: "a stale close is transient".
    registry
        .close(tenant, "claude-code", "b", t(32))
        .await
        .expect("close");
    let explicit = registry
        .heartbeat(tenant, "claude-code", "b", Some("second"), t(33))
        .await
        .expect("beat");
    assert!(explicit.resurrected);
    assert_eq!(explicit.activation_epoch, 3);
    assert_eq!(harness.excerpt(live.id).await.as_deref(), Some("second"));
    let row = registry.get_by_id(tenant, live.id).await.expect("row");
    assert_eq!(row.closed_at, None);

    // Implicitly closed: a close that landed after the lease ran out.
    registry
        .close(tenant, "claude-code", "b", t(33 + 25))
        .await
        .expect("late close");
    let row = registry.get_by_id(tenant, live.id).await.expect("row");
    assert_eq!(registry.lease().of(&row, t(60)), Liveness::ClosedImplicitly);
    let implicit = registry
        .heartbeat(tenant, "claude-code", "b", None, t(60))
        .await
        .expect("beat");
    assert!(implicit.resurrected);
    assert_eq!(implicit.activation_epoch, 4);
}

#[tokio::test]
async fn close_table_c_keeps_the_first_closed_at_and_touches_nothing_else() {
    let (harness, tenant) = Harness::with_tenant().await;
    let registry = &harness.registry;
    let missing = registry.close(tenant, "claude-code", "nope", t(0)).await;
    assert_eq!(missing.expect_err("404").code, ErrorCode::NotFound);

    let opened = registry
        .open(tenant, &startup("c"), t(0))
        .await
        .expect("open");
    registry
        .heartbeat(tenant, "claude-code", "c", Some("kept"), t(1))
        .await
        .expect("beat");
    let first = registry
        .close(tenant, "claude-code", "c", t(2))
        .await
        .expect("close");
    assert!(!first.already_closed);
    assert_eq!(first.closed_at, t(2));
    let again = registry
        .close(tenant, "claude-code", "c", t(3))
        .await
        .expect("close");
    assert!(again.already_closed);
    assert_eq!(again.closed_at, t(2), "the first close's timestamp");
    let row = registry
        .get_by_id(tenant, opened.session.id)
        .await
        .expect("row");
    assert_eq!(row.last_seen_at, t(1), "last_seen frozen");
    assert_eq!(row.activation_epoch, 1, "epoch unchanged");
    assert_eq!(harness.excerpt(row.id).await.as_deref(), Some("kept"));

    // Closed, resurrected, closed again: a fresh close.
    registry
        .heartbeat(tenant, "claude-code", "c", None, t(4))
        .await
        .expect("beat");
    let fresh = registry
        .close(tenant, "claude-code", "c", t(5))
        .await
        .expect("close");
    assert!(!fresh.already_closed);
    assert_eq!(fresh.closed_at, t(5));
}

#[tokio::test]
async fn explicit_implicit_boundary_is_inclusive_at_exactly_the_lease() {
    let (harness, tenant) = Harness::with_tenant().await;
    let registry = &harness.registry;
    let lease = chrono::Duration::hours(24);
    let one_ms = chrono::Duration::milliseconds(1);
    for (session_id, offset, expected) in [
        ("edge", lease, Liveness::ClosedExplicitly),
        ("past", lease + one_ms, Liveness::ClosedImplicitly),
    ] {
        let opened = registry
            .open(tenant, &startup(session_id), t(0))
            .await
            .expect("open");
        registry
            .close(tenant, "claude-code", session_id, t(0) + offset)
            .await
            .expect("close");
        let row = registry
            .get_by_id(tenant, opened.session.id)
            .await
            .expect("row");
        assert_eq!(row.closed_at, Some(t(0) + offset));
        assert_eq!(registry.lease().of(&row, t(100)), expected, "{session_id}");
    }
}

#[tokio::test]
async fn resurrection_preserves_identity_and_briefing_table_d() {
    let (harness, tenant) = Harness::with_tenant().await;
    let registry = &harness.registry;
    let mut first = startup("d");
    first.briefed_memories = Some(briefed());
    let opened = registry.open(tenant, &first, t(0)).await.expect("open");
    registry
        .close(tenant, "claude-code", "d", t(1))
        .await
        .expect("close");
    registry
        .heartbeat(tenant, "claude-code", "d", None, t(50))
        .await
        .expect("beat");
    let row = registry
        .get_by_id(tenant, opened.session.id)
        .await
        .expect("row");
    assert_eq!(row.closed_at, None);
    assert_eq!(row.activation_epoch, 2);
    assert_eq!(row.last_seen_at, t(50));
    assert_eq!(
        (
            row.opened_at,
            row.source,
            row.project.clone(),
            row.scope.clone(),
            row.selector.clone()
        ),
        (
            t(0),
            Source::Startup,
            opened.session.project.clone(),
            opened.session.scope.clone(),
            opened.session.selector.clone()
        )
    );
    assert_eq!(row.briefed_memories, opened.session.briefed_memories);
    assert_eq!(row.briefing_delivered_at, Some(t(0)));
}

#[tokio::test]
async fn two_tenants_with_the_same_key_get_separate_rows() {
    let harness = Harness::new().await;
    let (left, right) = (Uuid::now_v7(), Uuid::now_v7());
    let a = harness.open(left, &startup("same"), t(0)).await;
    let b = harness.open(right, &startup("same"), t(0)).await;
    assert!(a.created && b.created);
    assert_ne!(a.session.id, b.session.id);
    let foreign = harness.registry.get_by_id(right, a.session.id).await;
    assert_eq!(foreign.expect_err("not visible").code, ErrorCode::NotFound);
    let foreign_key = harness
        .registry
        .close(right, "claude-code", "missing", t(1))
        .await;
    assert_eq!(foreign_key.expect_err("404").code, ErrorCode::NotFound);
}
