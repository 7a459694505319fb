//! Two outbox relays on one outbox (two replicas of a service): each takes its rows with
//! `FOR UPDATE SKIP LOCKED`, so they publish disjoint rows and each message reaches the broker
//! once.

use std::collections::HashSet;
use std::time::Duration;

use baton_kit::bus::outbox::{self, OutboxTable, Relay};
use baton_kit::bus::{BusConfig, DEFAULT_AMQP_URL};
use baton_kit::testing::{TestDatabase, WritesHeld, bus_namespace, delete_bus_namespace};
use baton_proto::messages::Envelope;
use sqlx::PgPool;
use uuid::Uuid;

use crate::bus_messages::Messages;

const TABLE: OutboxTable = OutboxTable("public.twin_outbox");
const KIND: &str = "test.twin";
/// Three of a relay's batches.
const MESSAGES: usize = 300;

/// Two relays started on a full outbox, lined up at their first delete (writes to the outbox
/// held until both wait there, each having published the batch it took). With the row locks
/// they took different batches; reading the batch without them, both would have published the
/// same hundred messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_relays_on_one_outbox_publish_each_message_once() {
    let database = TestDatabase::create().await;
    let pool = PgPool::connect(database.url()).await.expect("connect");
    sqlx::query(
        "CREATE TABLE public.twin_outbox (id uuid PRIMARY KEY, routing_key text NOT NULL, \
         envelope jsonb NOT NULL, headers jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL)",
    )
    .execute(&pool)
    .await
    .expect("outbox table");
    let mut sent = HashSet::new();
    let mut connection = pool.acquire().await.expect("connection");
    for _ in 0..MESSAGES {
        let envelope = Envelope {
            kind: KIND.to_string(),
            version: 1,
            id: Uuid::new_v4(),
            tenant_id: Uuid::new_v4(),
            occurred_at: chrono::Utc::now(),
            data: serde_json::json!({}),
        };
        outbox::enqueue(&mut connection, TABLE, &envelope)
            .await
            .expect("enqueue");
        sent.insert(envelope.id);
    }
    drop(connection);
    let namespace = bus_namespace();
    let mut messages = Messages::bind_in(&namespace, KIND).await;
    let bus = BusConfig {
        url: baton_kit::config::SecretUrl::new(DEFAULT_AMQP_URL.to_string()),
        namespace: namespace.clone(),
        tls: Default::default(),
    };

    let held = WritesHeld::on(&pool, TABLE.0).await;
    let (trigger, shutdown) = baton_kit::shutdown::channel();
    let relays: Vec<_> = (0..2)
        .map(|_| {
            let relay = Relay::new(
                baton_kit::telemetry::Component::Registry,
                pool.clone(),
                TABLE,
                bus.clone(),
            );
            tokio::spawn(relay.run(shutdown.clone()))
        })
        .collect();
    held.release_once_waiting(&pool, 2).await;

    let mut received = Vec::with_capacity(MESSAGES);
    while received.len() < MESSAGES {
        let envelope = messages.next().await;
        received.push(envelope.id);
    }
    // Anything more would be a second copy.
    while let Some(extra) = messages.next_within(Duration::from_secs(1)).await {
        received.push(extra.id);
    }
    let distinct: HashSet<Uuid> = received.iter().copied().collect();
    assert_eq!(distinct, sent, "every message arrived");
    assert_eq!(
        received.len(),
        MESSAGES,
        "{} copies published twice",
        received.len() - MESSAGES
    );
    assert_eq!(outbox::depth(&pool, TABLE).await.expect("depth"), 0);

    trigger.trigger();
    for relay in relays {
        let _ = tokio::time::timeout(Duration::from_secs(5), relay).await;
    }
    delete_bus_namespace(&namespace);
}
