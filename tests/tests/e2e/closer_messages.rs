//! The closer's bus messages as they really arrive: a duplicate delivery, a poison message, a
//! close for a run that is unknown or still open.

use std::time::Duration;

use lapin::BasicProperties;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use uuid::Uuid;

use baton_kit::bus::topology::{CLOSER_SESSION_CLOSED, Names};
use baton_kit::bus::{BusConfig, DEFAULT_AMQP_URL, connect};
use baton_tests::Baton;
use baton_tests::judge::FakeJudge;

use crate::closer::{close, finish, open_briefed, open_briefed_on_done};

/// The inbox, directly: the same envelope delivered again (a broker redelivery, a relay that
/// published again after a lost confirm) is absorbed by its message id.
///
/// The duplicate is of a close whose pass the budget refused, with the budget raised since: a
/// duplicate that got past the inbox would run that pass again at once, ahead of its 20-minute
/// backoff, and resolve the commitment. Absorbed, the pass stays refused and the judge is never
/// asked. (The `passes` key alone would not stop this: a failed pass is meant to run again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_delivery_of_one_message_id_is_absorbed_by_the_closer_inbox() {
    let judge = FakeJudge::start(Duration::ZERO, false).await;
    let baton = Baton::start_with(&[
        ("BATON_CLOSER__ENABLED", "true"),
        ("BATON_CLOSER__JUDGE", "openai"),
        ("BATON_CLOSER__JUDGE_URL", judge.url.as_str()),
        ("BATON_CLOSER__MONTHLY_TOKEN_BUDGET", "0"),
    ])
    .await;
    let tenant = baton.create_tenant("dup").await;
    let tenant_id: Uuid = tenant.tenant_id.parse().expect("uuid");
    let client = baton.client(&tenant);
    let admin = baton.admin().await;
    let (run, memory) = open_briefed_on_done(&client, "dup-1").await;
    finish(&client, "dup-1").await;
    let (state, outcome, _) =
        crate::closer::settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!((state.as_str(), outcome.as_str()), ("failed", "refused"));
    let (message_id,): (Uuid,) = sqlx::query_as("SELECT message_id FROM closer.inbox")
        .fetch_one(&admin)
        .await
        .expect("the close was handled");
    sqlx::query("INSERT INTO closer.budgets (tenant_id, monthly_token_limit) VALUES ($1, 1000000)")
        .bind(tenant_id)
        .execute(&admin)
        .await
        .expect("budget");

    let (connection, channel, names) = bus_channel(&baton).await;
    let mut envelope = closed_envelope(tenant_id, run.parse().expect("uuid"));
    envelope.id = message_id;
    for _ in 0..2 {
        let properties = BasicProperties::default().with_message_id(message_id.to_string().into());
        publish_closed(&channel, &names, &envelope, properties)
            .await
            .await
            .expect("confirm");
    }
    // A fresh close after the duplicates: once it is handled, so were they (one queue, one
    // consumer, delivered in order). Nothing is briefed, so it asks the judge nothing.
    let later = open_briefed(&client, "dup-2", &[]).await;
    close(&client, "dup-2").await;
    crate::closer::settled_pass(&admin, &later, 1, Duration::from_secs(30)).await;
    let (state, outcome, _) =
        crate::closer::settled_pass(&admin, &run, 1, Duration::from_secs(1)).await;
    assert_eq!(
        (state.as_str(), outcome.as_str()),
        ("failed", "refused"),
        "the duplicates did not run the pass ahead of its backoff"
    );
    assert_eq!(
        judge.requests(),
        0,
        "the duplicates asked the judge nothing"
    );
    assert_eq!(
        crate::closer::commitment_status(&client, &memory).await,
        "open"
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM closer.inbox WHERE message_id = $1")
        .bind(message_id)
        .fetch_one(&admin)
        .await
        .expect("inbox");
    assert_eq!(rows, 1, "one inbox row for the message id");
    let _ = connection.close(200, "done".into()).await;
}

/// A connection and channel on this instance's bus namespace, once the services declared it.
async fn bus_channel(baton: &Baton) -> (lapin::Connection, lapin::Channel, Names) {
    let bus = BusConfig {
        url: baton_kit::config::SecretUrl::new(DEFAULT_AMQP_URL.to_string()),
        namespace: baton.namespace.clone(),
        tls: Default::default(),
    };
    let names = Names::new(&baton.namespace);
    let connection = connect(&bus, "closer fault test").await.expect("broker");
    wait_for_queue(&connection, &names.queue(&CLOSER_SESSION_CLOSED)).await;
    wait_for_queue(
        &connection,
        &names.dead_letter_queue(&CLOSER_SESSION_CLOSED),
    )
    .await;
    // The queue exists a moment before it is bound to the exchange; a message published in
    // between is unroutable and dropped. The consumer logs `consuming` after the binding.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !baton
        .logs
        .json()
        .iter()
        .any(|line| line["message"] == "consuming")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the closer never started consuming"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let channel = connection.create_channel().await.expect("channel");
    channel
        .confirm_select(lapin::options::ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    (connection, channel, names)
}

/// Waits until the service declared `queue` (a passive declare succeeds); the test never
/// declares topology itself, so a service that failed to declare its own is seen here.
async fn wait_for_queue(connection: &lapin::Connection, queue: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        // A failed passive declare closes its channel: each try gets a fresh one.
        let channel = connection.create_channel().await.expect("channel");
        let declared = channel
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await;
        if declared.is_ok() {
            let _ = channel.close(200, "declared".into()).await;
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the service never declared {queue}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_and_others_keep_flowing() {
    let baton = Baton::start_with(&[("BATON_CLOSER__ENABLED", "true")]).await;
    let (_, client) = baton.tenant_client("poison").await;
    let admin = baton.admin().await;
    // Baton declares its own topology as it starts; the test only waits for it.
    let (connection, channel, names) = bus_channel(&baton).await;
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
    let (run, _) = open_briefed_on_done(&client, "p-1").await;
    finish(&client, "p-1").await;
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
    let baton = Baton::start_with(&[("BATON_CLOSER__ENABLED", "true")]).await;
    let (tenant, client) = baton.tenant_client("strays").await;
    let admin = baton.admin().await;
    let open_run = open_briefed(&client, "still-open", &[]).await;
    let (connection, channel, names) = bus_channel(&baton).await;
    let tenant_id: Uuid = tenant.tenant_id.parse().expect("uuid");
    let unknown = Uuid::now_v7();
    for run in [unknown, open_run.parse().expect("uuid")] {
        let envelope = closed_envelope(tenant_id, run);
        publish_closed(&channel, &names, &envelope, BasicProperties::default()).await;
    }
    let (_, outcome, _) =
        crate::closer::settled_pass(&admin, &unknown.to_string(), 1, Duration::from_secs(30)).await;
    assert_eq!(outcome, "not-found");
    let (_, outcome, _) =
        crate::closer::settled_pass(&admin, &open_run, 1, Duration::from_secs(30)).await;
    assert_eq!(outcome, "not-closed");
    let _ = connection.close(200, "done".into()).await;
}

/// A `session.closed` envelope for epoch 1 of `run`, closed now.
fn closed_envelope(tenant_id: Uuid, run: Uuid) -> baton_proto::messages::Envelope {
    let payload = baton_proto::messages::SessionClosed {
        session_run_id: run,
        activation_epoch: 1,
        explicit: true,
        closed_at: chrono::Utc::now(),
    };
    baton_proto::messages::Envelope::new(
        baton_proto::messages::SESSION_CLOSED,
        tenant_id,
        chrono::Utc::now(),
        &payload,
    )
    .expect("envelope")
}

/// Publishes `envelope` on the events exchange as the registry's relay does; returns the
/// broker's confirmation to await.
async fn publish_closed(
    channel: &lapin::Channel,
    names: &Names,
    envelope: &baton_proto::messages::Envelope,
    properties: BasicProperties,
) -> lapin::PublisherConfirm {
    channel
        .basic_publish(
            names.events().into(),
            baton_proto::messages::SESSION_CLOSED.into(),
            BasicPublishOptions::default(),
            &serde_json::to_vec(envelope).expect("json"),
            properties,
        )
        .await
        .expect("publish")
}
