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
use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Env, SecretUrl, Settings};

/// The broker settings, process-wide (`BATON_AMQP_*`, `BATON_BUS_NAMESPACE`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct BusSettings {
    /// RabbitMQ; `amqps://` connects over TLS (see [`tls`]).
    pub amqp_url: BrokerUrl,
    /// Prefixes the exchange and queue names, so tests (and several deployments on one broker)
    /// never see each other's messages.
    pub bus_namespace: Namespace,
    /// The private CA that signs the broker's certificate (PEM file; `amqps://` only).
    pub amqp_tls_ca: Option<String>,
    /// A client certificate for a broker that asks for one (PEM file; with the key).
    pub amqp_tls_cert: Option<String>,
    /// The client certificate's key (PEM file, PKCS#8; with the certificate).
    pub amqp_tls_key: Option<String>,
}

impl Settings for BusSettings {
    const SECTION: &'static str = "";
}

/// The broker's URL, [`DEFAULT_AMQP_URL`] when unset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct BrokerUrl(pub SecretUrl);

impl Default for BrokerUrl {
    fn default() -> BrokerUrl {
        BrokerUrl(SecretUrl::new(DEFAULT_AMQP_URL.to_string()))
    }
}

/// A bus namespace: a slug (`^[a-z0-9][a-z0-9-]*$`), `baton` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Namespace(pub String);

impl Default for Namespace {
    fn default() -> Namespace {
        Namespace("baton".to_string())
    }
}

impl<'de> Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Namespace, D::Error> {
        let text = String::deserialize(deserializer)?;
        if !crate::text::is_slug(&text) {
            return Err(serde::de::Error::custom("must match ^[a-z0-9][a-z0-9-]*$"));
        }
        Ok(Namespace(text))
    }
}

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
        let settings: BusSettings = crate::config::load(env)?;
        let url = settings.amqp_url.0;
        let tls = tls::BusTls::from_env(env, &url)?;
        Ok(BusConfig {
            url,
            namespace: settings.bus_namespace.0,
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
