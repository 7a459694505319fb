//! The closer under faults: killed mid-work, a broker restart, a poison message.

use std::collections::HashSet;
use std::time::Duration;

use lapin::BasicProperties;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use rand::Rng;
use uuid::Uuid;

use baton_kit::bus::topology::{CLOSER_SESSION_CLOSED, Names};
use baton_kit::bus::{BusConfig, DEFAULT_AMQP_URL, connect};
use baton_tests::Baton;
use baton_tests::judge::FakeJudge;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_closer_twenty_times_loses_no_run_and_resolves_nothing_twice() {
    const SESSIONS: usize = 200;
    // A slow judge keeps passes in flight, so kills land mid-pass.
    let judge = FakeJudge::start(Duration::from_millis(300), false).await;
    let judge_env = [
        ("BATON_CLOSER_ENABLED", "true"),
        ("BATON_CLOSER_JUDGE", "openai"),
        ("BATON_CLOSER_JUDGE_URL", judge.url.as_str()),
    ];
    let baton = Baton::start_services(
        &["registry", "provenance", "triage", "gateway"],
        &[("BATON_RATE_LIMIT__REQUESTS", "100000")],
    )
    .await;
    let tenant = baton.create_tenant("crash").await;
    let client = baton.client(&tenant);
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
    let mut kills = 0;
    while kills < 20 {
        let pause = rand::rng().random_range(100..700);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if let Some(process) = closer.take() {
            process.kill().await;
            kills += 1;
        }
        closer = Some(baton.spawn_closer(&judge_env).await);
    }
    wait_until_finished(&admin, SESSIONS as i64, Duration::from_secs(120)).await;
    let (finished, completed, most_resolves) = tally(&admin).await;
    assert_eq!(
        finished, SESSIONS as i64,
        "every run has exactly one finished pass"
    );
    assert_eq!(completed, SESSIONS as i64, "and every one completed");
    assert_eq!(most_resolves, 1, "no commitment was resolved twice");
    let distinct_runs: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT session_run_id) FROM closer.passes")
            .fetch_one(&admin)
            .await
            .expect("runs");
    assert_eq!(distinct_runs, SESSIONS as i64, "no run lost");
    for memory in commitments.iter().take(5) {
        let answer = client.get(&format!("/api/v1/memories/{memory}")).await;
        assert_eq!(answer.body["commitment"]["status"], "resolved");
    }
    println!("kills: {kills}, judge requests: {}", judge.requests());
}

fn restart_broker() {
    let stop = std::process::Command::new("rabbitmqctl")
        .arg("stop_app")
        .output()
        .expect("rabbitmqctl");
    assert!(stop.status.success(), "stop_app: {stop:?}");
    std::thread::sleep(Duration::from_millis(500));
    let start = std::process::Command::new("rabbitmqctl")
        .arg("start_app")
        .output()
        .expect("rabbitmqctl");
    assert!(start.status.success(), "start_app: {start:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_closed_across_a_broker_restart_all_reach_the_closer_once() {
    const SESSIONS: usize = 30;
    let baton = Baton::start_with(&[("BATON_CLOSER_ENABLED", "true")]).await;
    let tenant = baton.create_tenant("broker").await;
    let client = baton.client(&tenant);
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
    for index in 0..SESSIONS {
        if index == SESSIONS / 3 {
            tokio::task::spawn_blocking(restart_broker)
                .await
                .expect("restart");
        }
        close(&client, &format!("broker-{index}")).await;
    }
    wait_until_finished(&admin, SESSIONS as i64, Duration::from_secs(120)).await;
    let per_run: Vec<i64> =
        sqlx::query_scalar("SELECT count(*) FROM closer.passes GROUP BY session_run_id")
            .fetch_all(&admin)
            .await
            .expect("passes");
    assert_eq!(per_run.len(), SESSIONS, "every session.closed arrived");
    assert!(
        per_run.iter().all(|count| *count == 1),
        "duplicates were absorbed"
    );
    let (_, _, most_resolves) = tally(&admin).await;
    assert!(most_resolves <= 1);
    let outbox: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.outbox")
        .fetch_one(&admin)
        .await
        .expect("outbox");
    assert_eq!(outbox, 0, "the outbox drained");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_and_others_keep_flowing() {
    let baton = Baton::start_with(&[("BATON_CLOSER_ENABLED", "true")]).await;
    let tenant = baton.create_tenant("poison").await;
    let client = baton.client(&tenant);
    let admin = baton.admin().await;
    let bus = BusConfig {
        url: DEFAULT_AMQP_URL.to_string(),
        namespace: baton.namespace.clone(),
    };
    let names = Names::new(&baton.namespace);
    let connection = connect(&bus, "poison test").await.expect("broker");
    let channel = connection.create_channel().await.expect("channel");
    // Baton declares the topology as it starts; make sure it exists before publishing.
    baton_kit::bus::topology::declare_all(&channel, &names)
        .await
        .expect("topology");
    channel
        .basic_publish(
            names.events().into(),
            baton_proto::messages::SESSION_CLOSED.into(),
            BasicPublishOptions::default(),
            b"this is not an envelope",
            BasicProperties::default().with_message_id(Uuid::now_v7().to_string().into()),
        )
        .await
        .expect("publish")
        .await
        .expect("confirm");
    let memory = commitment(
        &client,
        "orders-uuid",
        "Migrate the orders table to uuid keys",
    )
    .await;
    let run = open_briefed(&client, "p-1", &[(&memory, "orders-uuid")]).await;
    heartbeat(&client, "p-1", DONE).await;
    close(&client, "p-1").await;
    let (_, outcome, _) =
        crate::closer::settled_pass(&admin, &run, 1, Duration::from_secs(60)).await;
    assert_eq!(outcome, "completed", "other messages keep flowing");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let dead = channel
            .queue_declare(
                names.dead_letter_queue(&CLOSER_SESSION_CLOSED).into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("dead-letter queue");
        if dead.message_count() == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the poison message never reached the dead-letter queue"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = connection.close(200, "done".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_message_for_an_unknown_or_open_run_settles_as_not_found_or_not_closed() {
    let baton = Baton::start_with(&[("BATON_CLOSER_ENABLED", "true")]).await;
    let tenant = baton.create_tenant("strays").await;
    let client = baton.client(&tenant);
    let admin = baton.admin().await;
    let open_run = open_briefed(&client, "still-open", &[]).await;
    let names = Names::new(&baton.namespace);
    let bus = BusConfig {
        url: DEFAULT_AMQP_URL.to_string(),
        namespace: baton.namespace.clone(),
    };
    let connection = connect(&bus, "stray test").await.expect("broker");
    let channel = connection.create_channel().await.expect("channel");
    baton_kit::bus::topology::declare_all(&channel, &names)
        .await
        .expect("topology");
    let tenant_id: Uuid = tenant.tenant_id.parse().expect("uuid");
    let unknown = Uuid::now_v7();
    for run in [unknown, open_run.parse().expect("uuid")] {
        let payload = baton_proto::messages::SessionClosed {
            session_run_id: run,
            activation_epoch: 1,
            explicit: true,
            closed_at: chrono::Utc::now(),
        };
        let envelope = baton_proto::messages::Envelope::new(
            baton_proto::messages::SESSION_CLOSED,
            tenant_id,
            chrono::Utc::now(),
            &payload,
        )
        .expect("envelope");
        channel
            .basic_publish(
                names.events().into(),
                baton_proto::messages::SESSION_CLOSED.into(),
                BasicPublishOptions::default(),
                &serde_json::to_vec(&envelope).expect("json"),
                BasicProperties::default(),
            )
            .await
            .expect("publish");
    }
    let (_, outcome, _) =
        crate::closer::settled_pass(&admin, &unknown.to_string(), 1, Duration::from_secs(30)).await;
    assert_eq!(outcome, "not-found");
    let (_, outcome, _) =
        crate::closer::settled_pass(&admin, &open_run, 1, Duration::from_secs(30)).await;
    assert_eq!(outcome, "not-closed");
    let _ = connection.close(200, "done".into()).await;
}
