//! The message bus (RabbitMQ via lapin, DESIGN section 3.3).
//!
//! Facts travel as versioned, tagged JSON envelopes (`baton_proto::messages`) on one durable
//! topic exchange. A publisher never talks to the broker inside a request: it writes the
//! message to its context's outbox in the same transaction as the change ([`outbox`]), and a
//! relay publishes with publisher confirms, deleting a row only after its confirm. Consumers
//! ([`consumer`]) ack manually after their work is durable, with a bounded prefetch, and are
//! idempotent on the envelope id. W3C trace context rides in message headers, so one trace
//! spans the publisher and every consumer.

pub mod consumer;
pub mod depth;
pub mod outbox;
pub mod tls;
pub mod topology;

use std::time::Duration;

use lapin::{Connect, Connection, ConnectionProperties};

use crate::config::{ConfigError, Env, SecretUrl};

/// Where the broker is and which names this deployment uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusConfig {
    /// `BATON_AMQP_URL`, default `amqp://guest:guest@127.0.0.1:5672/%2f`.
    pub url: SecretUrl,
    /// `BATON_BUS_NAMESPACE`, default `baton`: prefixes the exchange and queue names, so tests
    /// (and several deployments on one broker) never see each other's messages.
    pub namespace: String,
    /// AMQPS material (`BATON_AMQP_TLS_*`, see [`tls`]); used when the URL is `amqps://`.
    pub tls: tls::BusTls,
}

pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

impl BusConfig {
    pub fn from_env(env: &Env) -> Result<BusConfig, ConfigError> {
        let namespace = env.string("BATON_BUS_NAMESPACE", "baton");
        if !crate::text::is_slug(&namespace) {
            return Err(ConfigError::new(
                "BATON_BUS_NAMESPACE",
                "must match ^[a-z0-9][a-z0-9-]*$",
            ));
        }
        let url = env.secret_url("BATON_AMQP_URL", DEFAULT_AMQP_URL);
        let tls = tls::BusTls::from_env(env, &url)?;
        Ok(BusConfig {
            url,
            namespace,
            tls,
        })
    }
}

/// Longest a first connection attempt may take. lapin keeps retrying an unreachable broker
/// inside `connect` without a word; bounded, the caller logs the failure and backs off.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection with automatic recovery (connection, channels and declared topology are
/// restored after a broker restart), over TLS when the URL is `amqps://`. A broker that does not answer within [`CONNECT_TIMEOUT`]
/// is an I/O error (`TimedOut`) naming the broker's redacted address.
pub async fn connect(config: &BusConfig, name: &str) -> Result<Connection, lapin::Error> {
    let properties = ConnectionProperties::default()
        .enable_auto_recover()
        .with_connection_name(name.to_string().into());
    let runtime = lapin::runtime::default_runtime()?;
    let connecting =
        config
            .url
            .expose()
            .connect_with_config(properties, config.tls.lapin(), runtime);
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(connected) => connected,
        Err(_) => Err(lapin::Error::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no connection to the broker at {} within {CONNECT_TIMEOUT:?}",
                config.url
            ),
        ))),
    }
}

/// Delay before the `attempt`-th reconnection (capped exponential: 0.2 s doubling to 10 s).
pub fn reconnect_delay(attempt: u32) -> Duration {
    let millis = 200u64.saturating_mul(1u64 << attempt.min(6));
    Duration::from_millis(millis.min(10_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_slugs_and_delays_are_capped() {
        let env = Env::from_pairs([("BATON_BUS_NAMESPACE", "Bad Name")]);
        assert!(BusConfig::from_env(&env).is_err());
        assert_eq!(
            BusConfig::from_env(&Env::default())
                .expect("defaults")
                .namespace,
            "baton"
        );
        assert_eq!(reconnect_delay(0), Duration::from_millis(200));
        assert_eq!(reconnect_delay(40), Duration::from_secs(10));
    }
}
