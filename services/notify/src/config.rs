//! Notify settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::values::{Flag, Int, Listen, Span, hours, millis, mins, secs};
use baton_kit::config::{CommonConfig, ConfigError, Env, OwnDatabase, SecretUrl, Settings, load};
use serde::{Deserialize, Serialize};

use crate::backoff::Backoff;

/// Notify's own settings, `BATON_NOTIFY__<FIELD>`; each type declares the default and the
/// bounds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct NotifySettings {
    /// gRPC listen address.
    pub listen: Listen<50056>,
    /// Full database URL for the runtime role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role that claims due deliveries across tenants.
    pub maintenance_database_url: Option<SecretUrl>,
    /// Off (the hosted setting), a webhook URL must be `https` and every address a delivery
    /// connects to must be public (no loopback, private, link-local, CGNAT, unique-local,
    /// multicast, documentation or unspecified address, nor an IPv4-mapped form of one). A
    /// self-hosted deployment whose receivers sit on its own network turns it on, which also
    /// allows `http`.
    pub allow_private_addresses: Flag<false>,
    /// Attempts before a delivery is given up as `failed` (about half an hour of retries with
    /// the default backoff).
    pub max_attempts: Int<12, 1, 50>,
    /// Delay before the second attempt, doubling after each failure up to `backoff_max`, each
    /// delay drawn at random between half and all of its value.
    pub backoff_base: Span<{ secs(1) }, { millis(10) }, { hours(1) }>,
    /// The longest delay between attempts; not below `backoff_base`.
    pub backoff_max: Span<{ mins(15) }, { millis(10) }, { hours(24) }>,
    /// Longest one attempt may take, connecting included.
    pub request_timeout: Span<{ secs(10) }, { secs(1) }, { secs(60) }>,
    /// How often the worker looks for due deliveries when nothing woke it.
    pub poll_interval: Span<{ secs(1) }, { millis(10) }, { secs(60) }>,
    /// Attempts in flight at once in this process.
    pub concurrency: Int<16, 1, 256>,
}

impl Settings for NotifySettings {
    const SECTION: &'static str = "notify";

    fn check(&self) -> Result<(), ConfigError> {
        if self.backoff_max.get() < self.backoff_base.get() {
            return Err(ConfigError::new(
                "BATON_NOTIFY__BACKOFF_MAX",
                "must not be shorter than BATON_NOTIFY__BACKOFF_BASE",
            ));
        }
        Ok(())
    }
}

/// Everything notify needs to start.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_NOTIFY__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    pub bus: BusConfig,
    pub delivery: DeliveryConfig,
}

/// How deliveries are made (see [`NotifySettings`] for each one's rule and default).
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryConfig {
    /// `BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES`.
    pub allow_private_addresses: bool,
    /// `BATON_NOTIFY__MAX_ATTEMPTS`.
    pub max_attempts: u32,
    /// `BATON_NOTIFY__BACKOFF_BASE` and `BATON_NOTIFY__BACKOFF_MAX`.
    pub backoff: Backoff,
    /// `BATON_NOTIFY__REQUEST_TIMEOUT`.
    pub request_timeout: Duration,
    /// `BATON_NOTIFY__POLL_INTERVAL`.
    pub poll_interval: Duration,
    /// `BATON_NOTIFY__CONCURRENCY`.
    pub concurrency: usize,
}

impl From<&NotifySettings> for DeliveryConfig {
    fn from(settings: &NotifySettings) -> DeliveryConfig {
        DeliveryConfig {
            allow_private_addresses: settings.allow_private_addresses.get(),
            max_attempts: settings.max_attempts.get() as u32,
            backoff: Backoff {
                base: settings.backoff_base.get(),
                max: settings.backoff_max.get(),
            },
            request_timeout: settings.request_timeout.get(),
            poll_interval: settings.poll_interval.get(),
            concurrency: settings.concurrency.get() as usize,
        }
    }
}

impl DeliveryConfig {
    pub fn from_env(env: &Env) -> Result<DeliveryConfig, ConfigError> {
        load::<NotifySettings>(env).map(|settings| DeliveryConfig::from(&settings))
    }
}

impl NotifyConfig {
    pub fn from_env(env: &Env) -> Result<NotifyConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let settings: NotifySettings = load(env)?;
        let bus = BusConfig::from_env(env)?;
        Ok(NotifyConfig {
            common,
            listen: settings.listen.get(),
            delivery: DeliveryConfig::from(&settings),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: settings.maintenance_database_url,
            },
            bus,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_is_the_default_and_the_backoff_is_ordered() {
        let base = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let config = NotifyConfig::from_env(&base).expect("defaults");
        assert!(!config.delivery.allow_private_addresses);
        assert_eq!(config.delivery.max_attempts, 12);
        assert_eq!(config.listen.port(), 50056);
        let inverted = base
            .clone()
            .with("BATON_NOTIFY__BACKOFF_BASE", "10s")
            .with("BATON_NOTIFY__BACKOFF_MAX", "1s");
        assert!(NotifyConfig::from_env(&inverted).is_err());
        for bad in ["0", "51", "many"] {
            let env = base.clone().with("BATON_NOTIFY__MAX_ATTEMPTS", bad);
            assert!(NotifyConfig::from_env(&env).is_err(), "{bad}");
        }
        let self_hosted = base.with("BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES", "true");
        assert!(
            NotifyConfig::from_env(&self_hosted)
                .expect("self-hosted")
                .delivery
                .allow_private_addresses
        );
    }
}
