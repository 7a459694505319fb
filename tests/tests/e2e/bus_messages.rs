//! A test's own queue on a Baton instance's events exchange, bound to one routing key: the
//! messages its services publish, read in order.

use std::time::Duration;

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;

use baton_kit::bus::topology::{self, Names};
use baton_kit::bus::{BusConfig, DEFAULT_AMQP_URL, connect};
use baton_proto::messages::Envelope;
use baton_tests::Baton;

const WAIT: Duration = Duration::from_secs(30);

/// A queue bound to one routing key of the instance's events exchange.
pub struct Messages {
    _connection: lapin::Connection,
    consumer: lapin::Consumer,
}

impl Messages {
    /// Binds before anything is published (the test declares the topology it binds to).
    pub async fn bind(baton: &Baton, routing_key: &str) -> Messages {
        Messages::bind_in(&baton.namespace, routing_key).await
    }

    /// The same in bus namespace `namespace` (a test publishing without a Baton instance).
    pub async fn bind_in(namespace: &str, routing_key: &str) -> Messages {
        let bus = BusConfig {
            url: baton_kit::config::SecretUrl::new(DEFAULT_AMQP_URL.to_string()),
            namespace: namespace.to_string(),
            tls: Default::default(),
        };
        let names = Names::new(namespace);
        let connection = connect(&bus, "test reader").await.expect("broker");
        let channel = connection.create_channel().await.expect("channel");
        topology::declare_all(&channel, &names)
            .await
            .expect("topology");
        let queue = format!("{namespace}.test.{routing_key}");
        channel
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("queue");
        channel
            .queue_bind(
                queue.as_str().into(),
                names.events().as_str().into(),
                routing_key.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind");
        let consumer = channel
            .basic_consume(
                queue.as_str().into(),
                "test-reader".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("consume");
        Messages {
            _connection: connection,
            consumer,
        }
    }

    /// The next message's envelope.
    pub async fn next(&mut self) -> Envelope {
        self.next_within(WAIT).await.expect("a message arrives")
    }

    /// The next message's envelope, if one arrives within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Envelope> {
        let delivery = tokio::time::timeout(wait, self.consumer.next())
            .await
            .ok()?
            .expect("stream open")
            .expect("delivery");
        delivery.ack(BasicAckOptions::default()).await.expect("ack");
        Some(serde_json::from_slice(&delivery.data).expect("envelope"))
    }
}
