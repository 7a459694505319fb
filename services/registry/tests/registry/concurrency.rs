//! Races the decisions must survive: no lost update, no double epoch, no duplicate row.

use std::collections::HashSet;

use futures::future::join_all;
use uuid::Uuid;

use baton_kit::error::ErrorCode;

use crate::{Harness, startup, t};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_identical_startups_per_key_make_one_row_with_one_id() {
    let harness = Harness::new().await;
    let tenant = Uuid::now_v7();
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
    let harness = Harness::new().await;
    let tenant = Uuid::now_v7();
    harness
        .registry
        .open(tenant, &startup("stale"), t(0))
        .await
        .expect("open");
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
    let harness = Harness::new().await;
    let tenant = Uuid::now_v7();
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
