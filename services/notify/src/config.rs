//! Notify settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

use crate::backoff::Backoff;

/// Everything notify needs to start.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_NOTIFY__LISTEN`, default [`DEFAULT_LISTEN`]).
    pub listen: SocketAddr,
    /// Full database URL for the runtime role (`BATON_NOTIFY__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role that claims due deliveries across tenants
    /// (`BATON_NOTIFY__MAINTENANCE_DATABASE_URL`).
    pub maintenance_database_url: Option<SecretUrl>,
    pub bus: BusConfig,
    pub delivery: DeliveryConfig,
}

/// How deliveries are made.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryConfig {
    /// `BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES` (default false, the hosted setting): when
    /// false, a webhook URL must be `https` and every address a delivery connects to must be
    /// public (no loopback, private, link-local, CGNAT, unique-local, multicast, documentation
    /// or unspecified address, nor an IPv4-mapped form of one). A self-hosted deployment whose
    /// receivers sit on its own network sets it true, which also allows `http`.
    pub allow_private_addresses: bool,
    /// Attempts before a delivery is given up as `failed` (`BATON_NOTIFY__MAX_ATTEMPTS`,
    /// 1..=50, default 12: up to about half an hour of retries with the default backoff).
    pub max_attempts: u32,
    /// Delay before the second attempt, doubling after each failure up to the maximum, each
    /// delay drawn at random between half and all of its value (`BATON_NOTIFY__BACKOFF_BASE`,
    /// 10 ms..1 h, default 1 s; `BATON_NOTIFY__BACKOFF_MAX`, 10 ms..24 h, default 15 min).
    pub backoff: Backoff,
    /// Longest one attempt may take, connecting included (`BATON_NOTIFY__REQUEST_TIMEOUT`,
    /// 1 s..60 s, default 10 s).
    pub request_timeout: Duration,
    /// How often the worker looks for due deliveries when nothing woke it
    /// (`BATON_NOTIFY__POLL_INTERVAL`, 10 ms..60 s, default 1 s).
    pub poll_interval: Duration,
    /// Attempts in flight at once in this process (`BATON_NOTIFY__CONCURRENCY`, 1..=256,
    /// default 16).
    pub concurrency: usize,
}

/// Default gRPC listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50056";

impl DeliveryConfig {
    pub fn from_env(env: &Env) -> Result<DeliveryConfig, ConfigError> {
        let base = env.bounded_duration(
            "BATON_NOTIFY__BACKOFF_BASE",
            Duration::from_secs(1),
            Duration::from_millis(10),
            Duration::from_secs(3600),
        )?;
        let max = env.bounded_duration(
            "BATON_NOTIFY__BACKOFF_MAX",
            Duration::from_secs(15 * 60),
            Duration::from_millis(10),
            Duration::from_secs(24 * 3600),
        )?;
        if max < base {
            return Err(ConfigError::new(
                "BATON_NOTIFY__BACKOFF_MAX",
                "must not be shorter than BATON_NOTIFY__BACKOFF_BASE",
            ));
        }
        Ok(DeliveryConfig {
            allow_private_addresses: env.bool("BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES", false)?,
            max_attempts: env.bounded_u64("BATON_NOTIFY__MAX_ATTEMPTS", 12, 1, 50)? as u32,
            backoff: Backoff { base, max },
            request_timeout: env.bounded_duration(
                "BATON_NOTIFY__REQUEST_TIMEOUT",
                Duration::from_secs(10),
                Duration::from_secs(1),
                Duration::from_secs(60),
            )?,
            poll_interval: env.bounded_duration(
                "BATON_NOTIFY__POLL_INTERVAL",
                Duration::from_secs(1),
                Duration::from_millis(10),
                Duration::from_secs(60),
            )?,
            concurrency: env.bounded_u64("BATON_NOTIFY__CONCURRENCY", 16, 1, 256)? as usize,
        })
    }
}

impl NotifyConfig {
    pub fn from_env(env: &Env) -> Result<NotifyConfig, ConfigError> {
        Ok(NotifyConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_NOTIFY__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_NOTIFY__DATABASE_URL"),
            maintenance_database_url: env
                .optional_secret_url("BATON_NOTIFY__MAINTENANCE_DATABASE_URL"),
            bus: BusConfig::from_env(env)?,
            delivery: DeliveryConfig::from_env(env)?,
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
