//! Queue and dead-letter depth: while a consumer runs, every [`DEPTH_EVERY`] a passive declare
//! of its queue and of its dead-letter queue reads how many messages each holds ready, recorded
//! as `baton.bus.queue.depth` and `baton.bus.dead_letter.depth` (attribute
//! `messaging.destination.name`: the queue's name within the namespace, e.g.
//! `closer.session-closed`). A passive declare changes nothing on the broker; a lost connection
//! is retried at the next tick.

use std::time::Duration;

use lapin::options::QueueDeclareOptions;
use lapin::types::{FieldTable, ShortString};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Gauge;

use crate::bus::topology::{ConsumerSpec, Names};
use crate::bus::{BusConfig, connect};
use crate::shutdown::Shutdown;
use crate::telemetry::component::PerComponent;

/// How often the depths are read.
pub const DEPTH_EVERY: Duration = Duration::from_secs(15);

fn queue_depth(meter: opentelemetry::metrics::Meter) -> Gauge<u64> {
    meter
        .u64_gauge("baton.bus.queue.depth")
        .with_unit("{message}")
        .with_description("Messages ready in a consumer's queue")
        .build()
}

fn dead_letter_depth(meter: opentelemetry::metrics::Meter) -> Gauge<u64> {
    meter
        .u64_gauge("baton.bus.dead_letter.depth")
        .with_unit("{message}")
        .with_description("Messages set aside in a consumer's dead-letter queue")
        .build()
}

/// Records both depths every [`DEPTH_EVERY`] until shutdown.
pub async fn watch(bus: BusConfig, spec: ConsumerSpec, shutdown: Shutdown) {
    static QUEUE: PerComponent<Gauge<u64>> = PerComponent::new();
    static DEAD: PerComponent<Gauge<u64>> = PerComponent::new();
    let queue_gauge = QUEUE.get_or_init(spec.owner, queue_depth).clone();
    let dead_gauge = DEAD.get_or_init(spec.owner, dead_letter_depth).clone();
    let names = Names::new(&bus.namespace);
    let attributes = [KeyValue::new("messaging.destination.name", spec.name)];
    let mut connection = None;
    loop {
        if connection.is_none() {
            connection = connect(&bus, &format!("depth {}", spec.name)).await.ok();
        }
        if let Some(open) = &connection {
            match read(open, &names, &spec).await {
                Ok((ready, dead)) => {
                    queue_gauge.record(u64::from(ready), &attributes);
                    dead_gauge.record(u64::from(dead), &attributes);
                }
                Err(error) => {
                    tracing::warn!(error = %error, queue = spec.name, "could not read queue depth");
                    connection = None;
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(DEPTH_EVERY) => {}
            () = shutdown.clone().wait() => return,
        }
    }
}

/// Ready messages in the queue and in its dead-letter queue.
async fn read(
    connection: &lapin::Connection,
    names: &Names,
    spec: &ConsumerSpec,
) -> Result<(u32, u32), lapin::Error> {
    let channel = connection.create_channel().await?;
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let mut counts = [0; 2];
    for (slot, queue) in [names.queue(spec), names.dead_letter_queue(spec)]
        .into_iter()
        .enumerate()
    {
        counts[slot] = channel
            .queue_declare(ShortString::from(queue), passive, FieldTable::default())
            .await?
            .message_count();
    }
    let _ = channel.close(200, "depth read".into()).await;
    Ok((counts[0], counts[1]))
}
