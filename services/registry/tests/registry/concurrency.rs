//! Races the decisions must survive: no lost update, no double epoch, no duplicate row, no
//! double close.

use std::collections::HashSet;

use futures::future::join_all;
use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_kit::testing::WritesHeld;

use crate::{Harness, startup, t};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_identical_startups_per_key_make_one_row_with_one_id() {
    let (harness, tenant) = Harness::with_tenant().await;
    for key in 0..50 {
        let session_id = format!("race-{key}");
        let mut command = startup(&session_id);
        command.project = Some(format!("project-{}", key % 5));
        let opens = (0..64).map(|_| {
            let registry = harness.registry.clone();
            let command = command.clone();
            tokio::spawn(async move { registry.open(tenant, &command, t(0)).await })
        });
        let results = join_all(opens).await;
        let ids: HashSet<Uuid> = results
            .into_iter()
            .map(|joined| joined.expect("task").expect("no error").session.id)
            .collect();
        assert_eq!(ids.len(), 1, "key {key}: one sessionRunId for all 64");
    }
    let admin = harness.admin().await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.agent_sessions")
        .fetch_one(&admin)
        .await
        .expect("count");
    assert_eq!(rows, 50);
    let created: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM registry.agent_sessions WHERE activation_epoch = 1",
    )
    .fetch_one(&admin)
    .await
    .expect("count");
    assert_eq!(created, 50, "duplicate startups never bump the epoch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_heartbeats_on_an_expired_lease_advance_the_epoch_once() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, &startup("stale"), t(0)).await;
    let beats = (0..16).map(|_| {
        let registry = harness.registry.clone();
        tokio::spawn(async move {
            registry
                .heartbeat(tenant, "claude-code", "stale", None, t(30))
                .await
        })
    });
    let results: Vec<_> = join_all(beats)
        .await
        .into_iter()
        .map(|joined| joined.expect("task").expect("beat"))
        .collect();
    let resurrections = results.iter().filter(|beat| beat.resurrected).count();
    assert_eq!(resurrections, 1);
    assert!(results.iter().all(|beat| beat.activation_epoch == 2));
    let row = harness
        .registry
        .get_by_key(tenant, "claude-code", "stale")
        .await
        .expect("row");
    assert_eq!(row.activation_epoch, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_startups_of_one_key_with_different_projects_leave_one_winner() {
    let (harness, tenant) = Harness::with_tenant().await;
    let opens = (0..8).map(|index| {
        let registry = harness.registry.clone();
        let mut command = startup("split");
        command.project = Some(format!("p{index}"));
        tokio::spawn(async move { registry.open(tenant, &command, t(0)).await })
    });
    let results: Vec<_> = join_all(opens)
        .await
        .into_iter()
        .map(|joined| joined.expect("task"))
        .collect();
    let winners = results.iter().filter(|result| result.is_ok()).count();
    assert_eq!(winners, 1);
    for result in results.iter().filter_map(|result| result.as_ref().err()) {
        assert_eq!(result.code, ErrorCode::Conflict);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_heartbeats_over_live_and_stale_rows_answers_each_correctly() {
    let harness = Harness::new().await;
    let tenants = [Uuid::now_v7(), Uuid::now_v7()];
    for tenant in tenants {
        for index in 0..20 {
            let opened_at = if index % 2 == 0 { t(0) } else { t(20) };
            harness
                .open(tenant, &startup(&format!("burst-{index}")), opened_at)
                .await;
        }
    }
    // At t(30) even rows (last seen t(0)) are stale, odd rows (t(20)) are live. Every row gets
    // three heartbeats in the same burst, so batches carry duplicates and several tenants.
    let mut beats = Vec::new();
    for tenant in tenants {
        for index in 0..20 {
            for copy in 0..3 {
                let registry = harness.registry.clone();
                beats.push(tokio::spawn(async move {
                    let excerpt = format!("copy-{copy}");
                    let session_id = format!("burst-{index}");
                    let beat = registry
                        .heartbeat(tenant, "claude-code", &session_id, Some(&excerpt), t(30))
                        .await
                        .expect("beat");
                    (index, beat)
                }));
            }
        }
    }
    let results: Vec<_> = join_all(beats)
        .await
        .into_iter()
        .map(|joined| joined.expect("task"))
        .collect();
    for (index, beat) in &results {
        let expected_epoch = if index % 2 == 0 { 2 } else { 1 };
        assert_eq!(beat.activation_epoch, expected_epoch, "row {index}");
        assert_eq!(beat.last_seen_at, t(30));
    }
    let resurrections = results.iter().filter(|(_, beat)| beat.resurrected).count();
    assert_eq!(resurrections, 20, "each stale row resurrects exactly once");
    let admin = harness.admin().await;
    let epochs: Vec<i64> = sqlx::query_scalar(
        "SELECT activation_epoch FROM registry.agent_sessions ORDER BY activation_epoch",
    )
    .fetch_all(&admin)
    .await
    .expect("epochs");
    assert_eq!(epochs.iter().filter(|epoch| **epoch == 2).count(), 20);
    assert_eq!(epochs.iter().filter(|epoch| **epoch == 1).count(), 20);
}

/// Two closes of one open session at once, lined up: the first is held at its update while the
/// second waits for the row. The second must decide from the row the first left, closed, so
/// exactly one close stamps the row and enqueues the closed message; deciding from a read taken
/// without the row's lock, both would stamp it and the closer would be told twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_closes_at_once_stamp_the_row_and_enqueue_its_message_once() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, &startup("twice"), t(0)).await;
    let admin = harness.admin().await;
    let closes = (0..2).map(|_| harness.registry.close(tenant, "claude-code", "twice", t(1)));
    let answers: Vec<_> = lined_up(&admin, closes)
        .await
        .into_iter()
        .map(|closed| closed.expect("close"))
        .collect();
    let stamped = answers
        .iter()
        .filter(|closed| !closed.already_closed)
        .count();
    assert_eq!(stamped, 1, "{answers:?}");
    let messages: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.outbox")
        .fetch_one(&admin)
        .await
        .expect("count");
    assert_eq!(messages, 1, "one closed message");
}

/// Sixteen replayed heartbeats on one expired lease (the spool path: always under the row's
/// lock), lined up: the first is held at its update while the others wait for the row. Each
/// must decide from the row the one before it left, so exactly one resurrects and the epoch
/// moves once; deciding from a read taken without the row's lock, all sixteen would find the
/// lease expired and each would resurrect the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_replayed_heartbeats_lined_up_on_an_expired_lease_resurrect_once() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.open(tenant, &startup("stale"), t(0)).await;
    let admin = harness.admin().await;
    let beats = (0..16).map(|_| {
        harness
            .registry
            .replayed_heartbeat(tenant, "claude-code", "stale", None, t(30), t(30))
    });
    let beats: Vec<_> = lined_up(&admin, beats)
        .await
        .into_iter()
        .map(|beat| beat.expect("beat"))
        .collect();
    let resurrections = beats.iter().filter(|beat| beat.resurrected).count();
    assert_eq!(resurrections, 1, "{beats:?}");
    assert!(
        beats.iter().all(|beat| beat.activation_epoch == 2),
        "{beats:?}"
    );
}

/// Sixteen memory writes attaching to one session whose lease expired, lined up: the first is
/// held at its update while the others wait for the row. Exactly one resurrects the session
/// and the epoch moves once; deciding from a read taken without the row's lock, every write
/// would find the lease expired and resurrect it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_writes_attaching_to_an_expired_lease_at_once_resurrect_it_once() {
    let (harness, tenant) = Harness::with_tenant().await;
    let opened = harness.open(tenant, &startup("stale"), t(0)).await;
    let admin = harness.admin().await;
    let writes = (0..16).map(|_| {
        harness
            .registry
            .attach_write(tenant, opened.session.id, t(30))
    });
    let attached: Vec<_> = lined_up(&admin, writes)
        .await
        .into_iter()
        .map(|attached| attached.expect("attach"))
        .collect();
    let resurrections = attached.iter().filter(|write| write.resurrected).count();
    assert_eq!(resurrections, 1, "{attached:?}");
    assert!(
        attached
            .iter()
            .all(|write| write.attached && write.activation_epoch == 2),
        "{attached:?}"
    );
}

/// Runs `racers` at once, lined up at their first write to the sessions table: writes are
/// held until two racers wait on a lock (one at the write, the rest at the row it locked).
async fn lined_up<F: std::future::Future>(
    admin: &sqlx::PgPool,
    racers: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let held = WritesHeld::on(admin, "registry.agent_sessions").await;
    let (answers, ()) = tokio::join!(join_all(racers), held.release_once_waiting(admin, 2));
    answers
}
