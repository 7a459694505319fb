//! Consuming: manual acknowledgement after the work is durable, a bounded prefetch, a unique
//! consumer tag per process, reconnection after broker failures, and one consumer span per
//! message parented on the publisher's trace context.

use std::collections::HashMap;
use std::future::Future;

use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;
use tokio::task::JoinSet;
use tracing::Instrument;
use uuid::Uuid;

use baton_proto::messages::Envelope;

use crate::bus::topology::{self, ConsumerSpec, Names};
use crate::bus::{BusConfig, connect, reconnect_delay};
use crate::shutdown::Shutdown;
use crate::telemetry;
use crate::telemetry::component::{Component, PerComponent, within};

/// What to do with a delivery once the handler is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// The work is durable (or was already done): remove the message.
    Ack,
    /// Not handled now: return it to the queue; it counts toward the delivery limit, after
    /// which it is dead-lettered.
    Requeue,
}

/// A delivery as a handler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The parsed envelope, or why it could not be parsed.
    pub envelope: Result<Envelope, String>,
    pub routing_key: String,
    /// How many times the broker handed this message out before (quorum queues count it).
    pub prior_deliveries: i64,
}

fn redeliveries(owner: Component) -> &'static Counter<u64> {
    static COUNTER: PerComponent<Counter<u64>> = PerComponent::new();
    COUNTER.get_or_init(owner, |meter| {
        meter
            .u64_counter("baton.bus.redeliveries")
            .with_unit("{message}")
            .with_description("Messages delivered again after a failure or a consumer crash")
            .build()
    })
}

fn header_map(headers: Option<&FieldTable>) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for (key, value) in headers.map(FieldTable::inner).into_iter().flatten() {
        let text = match value {
            AMQPValue::LongString(text) => String::from_utf8_lossy(text.as_bytes()).into_owned(),
            AMQPValue::ShortString(text) => text.as_str().to_string(),
            _ => continue,
        };
        map.insert(key.as_str().to_string(), text);
    }
    map
}

fn prior_deliveries(delivery: &Delivery) -> i64 {
    let counted = delivery
        .properties
        .headers()
        .as_ref()
        .and_then(|headers| headers.inner().get(&ShortString::from("x-delivery-count")))
        .and_then(|value| match value {
            AMQPValue::LongLongInt(count) => Some(*count),
            AMQPValue::LongInt(count) => Some(i64::from(*count)),
            AMQPValue::LongUInt(count) => Some(i64::from(*count)),
            _ => None,
        });
    counted.unwrap_or(i64::from(delivery.redelivered))
}

/// Consumes `spec`'s queue until shutdown, calling `handler` for each delivery (concurrently, up
/// to the prefetch) and acknowledging by its answer.
pub async fn run<H, F>(bus: BusConfig, spec: ConsumerSpec, handler: H, shutdown: Shutdown)
where
    H: Fn(Received) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Disposition> + Send + 'static,
{
    let names = Names::new(&bus.namespace);
    tokio::spawn(crate::bus::depth::watch(
        bus.clone(),
        spec.clone(),
        shutdown.clone(),
    ));
    let mut attempt = 0;
    while !shutdown.is_triggered() {
        match consume_once(&bus, &spec, &names, handler.clone(), shutdown.clone()).await {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(error = %error, queue = spec.name, "consumer lost the broker; reconnecting");
                let delay = reconnect_delay(attempt);
                attempt += 1;
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.clone().wait() => return,
                }
            }
        }
    }
}

async fn consume_once<H, F>(
    bus: &BusConfig,
    spec: &ConsumerSpec,
    names: &Names,
    handler: H,
    shutdown: Shutdown,
) -> Result<(), lapin::Error>
where
    H: Fn(Received) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Disposition> + Send + 'static,
{
    let connection = connect(bus, &format!("consumer {}", spec.name)).await?;
    let channel = connection.create_channel().await?;
    topology::declare_all(&channel, names).await?;
    // Bounded prefetch: at most this many unacknowledged messages in this process.
    channel
        .basic_qos(spec.prefetch, BasicQosOptions::default())
        .await?;
    // Unique per process, so a broker listing tells the replicas apart.
    let tag = format!("{}-{}", spec.name, Uuid::now_v7());
    let mut consumer = channel
        .basic_consume(
            ShortString::from(names.queue(spec)),
            ShortString::from(tag),
            // Manual acknowledgement (no_ack false): a message is removed only when we say so.
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    tracing::info!(queue = spec.name, "consuming");
    let mut in_flight = JoinSet::new();
    loop {
        let next = tokio::select! {
            next = consumer.next() => next,
            () = shutdown.clone().wait() => break,
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => continue,
        };
        let Some(delivery) = next else {
            break;
        };
        let delivery = match delivery {
            Ok(delivery) => delivery,
            Err(error) => {
                // The connection is gone. Work already started runs to its end: its writes
                // complete, only its acks cannot go out, so the broker redelivers those
                // messages and the handlers' idempotence absorbs them. Returning at once would
                // drop the JoinSet and cancel that work mid-write (a closer pass cut between
                // its steps, its advisory lock left on a pooled connection until reuse, and
                // the redelivery then acked as "another replica runs it").
                while in_flight.join_next().await.is_some() {}
                return Err(error);
            }
        };
        let handler = handler.clone();
        in_flight.spawn(within(spec.owner, handle(delivery, spec.owner, handler)));
    }
    // Let in-flight work finish (its acks go out) before the connection closes.
    while in_flight.join_next().await.is_some() {}
    Ok(())
}

async fn handle<H, F>(delivery: Delivery, owner: Component, handler: H)
where
    H: Fn(Received) -> F,
    F: Future<Output = Disposition>,
{
    let routing_key = delivery.routing_key.as_str().to_string();
    let prior = prior_deliveries(&delivery);
    if prior > 0 {
        redeliveries(owner).add(
            1,
            &[KeyValue::new(
                "messaging.destination.name",
                routing_key.clone(),
            )],
        );
    }
    let span = tracing::info_span!(
        "bus.consume",
        otel.name = %format!("{routing_key} process"),
        otel.kind = "consumer",
        messaging.system = "rabbitmq",
        messaging.operation = "process",
        messaging.message.id = tracing::field::Empty,
        prior_deliveries = prior,
        otel.status_code = tracing::field::Empty,
    );
    let parent = telemetry::extract_from_map(&header_map(delivery.properties.headers().as_ref()));
    telemetry::set_component_parent(&span, parent, owner);
    let envelope =
        serde_json::from_slice::<Envelope>(&delivery.data).map_err(|error| error.to_string());
    if let Ok(envelope) = &envelope {
        span.record("messaging.message.id", envelope.id.to_string());
    }
    let received = Received {
        envelope,
        routing_key,
        prior_deliveries: prior,
    };
    let disposition = handler(received).instrument(span.clone()).await;
    if disposition == Disposition::Requeue {
        // Not handled: the span shows the failure that will bring the message back.
        span.record("otel.status_code", "ERROR");
    }
    let outcome = match disposition {
        Disposition::Ack => delivery.ack(BasicAckOptions::default()).await,
        Disposition::Requeue => {
            delivery
                .nack(BasicNackOptions {
                    multiple: false,
                    requeue: true,
                })
                .await
        }
    };
    match outcome {
        Ok(true) => {}
        // lapin answers `Ok(false)` when the delivery's channel was closed or errored before
        // the settle (its acker is poisoned): nothing reached the broker.
        Ok(false) => tracing::warn!(
            "could not settle a delivery: its channel is gone; the broker will redeliver it"
        ),
        Err(error) => {
            tracing::warn!(error = %error, "could not settle a delivery; the broker will redeliver it")
        }
    }
}
