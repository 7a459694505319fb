//! The broker topology, declared explicitly and in one place: every party declares all of it
//! (declarations are idempotent), so a message published before its consumer ever started still
//! finds its queue waiting.

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{Channel, ExchangeKind};

/// A consumer's queue and what it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerSpec {
    /// The component that consumes it (its metrics' `service.name`).
    pub owner: crate::telemetry::Component,
    /// Queue name within the namespace, e.g. `closer.session-closed`.
    pub name: &'static str,
    /// Routing keys bound on the events exchange.
    pub routing_keys: &'static [&'static str],
    /// Deliveries (including redeliveries after a consumer died) before the message is
    /// dead-lettered. Generous enough that crashes alone never exhaust it.
    pub delivery_limit: i64,
    /// Unacknowledged deliveries a consumer holds at once.
    pub prefetch: u16,
}

/// The closer's queue: every explicit or implicit close of a session run.
pub const CLOSER_SESSION_CLOSED: ConsumerSpec = ConsumerSpec {
    owner: crate::telemetry::Component::Closer,
    name: "closer.session-closed",
    routing_keys: &[baton_proto::messages::SESSION_CLOSED],
    delivery_limit: 30,
    prefetch: 16,
};

/// Notify's queue: the alerts it delivers to tenants' webhooks.
pub const NOTIFY_ALERTS: ConsumerSpec = ConsumerSpec {
    owner: crate::telemetry::Component::Notify,
    name: "notify.alerts",
    routing_keys: &[
        baton_proto::messages::BUDGET_CROSSED,
        baton_proto::messages::RUNAWAY_FLAGGED,
    ],
    delivery_limit: 30,
    // Handling a message is one short transaction (the HTTP calls happen later, from the
    // deliveries table), so a small prefetch keeps up.
    prefetch: 16,
};

/// Every consumer queue of the system.
pub const CONSUMERS: &[ConsumerSpec] = &[CLOSER_SESSION_CLOSED, NOTIFY_ALERTS];

/// Names within one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    namespace: String,
}

impl Names {
    pub fn new(namespace: &str) -> Names {
        Names {
            namespace: namespace.to_string(),
        }
    }

    /// The topic exchange every fact is published to (`baton.events` by default).
    pub fn events(&self) -> String {
        format!("{}.events", self.namespace)
    }

    /// The direct exchange rejected and exhausted messages go to.
    pub fn dead_letter(&self) -> String {
        format!("{}.dead-letter", self.namespace)
    }

    pub fn queue(&self, spec: &ConsumerSpec) -> String {
        format!("{}.{}", self.namespace, spec.name)
    }

    pub fn dead_letter_queue(&self, spec: &ConsumerSpec) -> String {
        format!("{}.{}.dead-letter", self.namespace, spec.name)
    }
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(value.to_string()))
}

/// Declares the exchanges and every consumer queue with its dead-letter queue.
pub async fn declare_all(channel: &Channel, names: &Names) -> Result<(), lapin::Error> {
    // Topic: routing keys are `<context>.<fact>`, consumers bind the facts they react to.
    // Durable: survives a broker restart. Not auto-deleted: it outlives its bindings.
    let durable_exchange = ExchangeDeclareOptions {
        durable: true,
        auto_delete: false,
        internal: false,
        passive: false,
        nowait: false,
    };
    channel
        .exchange_declare(
            ShortString::from(names.events()),
            ExchangeKind::Topic,
            durable_exchange,
            FieldTable::default(),
        )
        .await?;
    // Direct: a dead message is routed by its queue's name to that queue's dead-letter queue.
    channel
        .exchange_declare(
            ShortString::from(names.dead_letter()),
            ExchangeKind::Direct,
            durable_exchange,
            FieldTable::default(),
        )
        .await?;
    for spec in CONSUMERS {
        declare_consumer(channel, names, spec).await?;
    }
    Ok(())
}

async fn declare_consumer(
    channel: &Channel,
    names: &Names,
    spec: &ConsumerSpec,
) -> Result<(), lapin::Error> {
    let queue = names.queue(spec);
    let dead_queue = names.dead_letter_queue(spec);
    // Durable, not exclusive, not auto-deleted: messages wait for a consumer that is down.
    let durable_queue = QueueDeclareOptions {
        durable: true,
        exclusive: false,
        auto_delete: false,
        passive: false,
        nowait: false,
    };
    let mut dead_arguments = FieldTable::default();
    // Quorum: replicated and safe across broker restarts.
    dead_arguments.insert(ShortString::from("x-queue-type"), text("quorum"));
    channel
        .queue_declare(
            ShortString::from(dead_queue.clone()),
            durable_queue,
            dead_arguments,
        )
        .await?;
    channel
        .queue_bind(
            ShortString::from(dead_queue),
            ShortString::from(names.dead_letter()),
            ShortString::from(queue.clone()),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let mut arguments = FieldTable::default();
    arguments.insert(ShortString::from("x-queue-type"), text("quorum"));
    // A message that keeps failing is set aside instead of blocking the queue forever.
    arguments.insert(
        ShortString::from("x-delivery-limit"),
        AMQPValue::LongLongInt(spec.delivery_limit),
    );
    arguments.insert(
        ShortString::from("x-dead-letter-exchange"),
        text(&names.dead_letter()),
    );
    arguments.insert(ShortString::from("x-dead-letter-routing-key"), text(&queue));
    channel
        .queue_declare(ShortString::from(queue.clone()), durable_queue, arguments)
        .await?;
    for key in spec.routing_keys {
        channel
            .queue_bind(
                ShortString::from(queue.clone()),
                ShortString::from(names.events()),
                ShortString::from(*key),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
    }
    Ok(())
}
