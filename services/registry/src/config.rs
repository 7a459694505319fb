//! Registry settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

/// Everything the registry needs to start.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_REGISTRY__LISTEN`).
    pub listen: SocketAddr,
    /// Full database URL for the registry role, overriding the base URL (`BATON_REGISTRY__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// A session is live while `last_seen_at > now − lease` (`BATON_SESSION_LEASE`, default 24h).
    pub lease: Duration,
    /// The sweep waits this long past the lease before closing (`BATON_SESSION_GRACE`, 1h).
    pub grace: Duration,
    /// Full database URL for the maintenance role (`BATON_REGISTRY__MAINTENANCE_DATABASE_URL`).
    pub maintenance_database_url: Option<SecretUrl>,
    /// A client that stopped pulsing reads disconnected after this long
    /// (`BATON_LIVENESS_WINDOW`, default 120s).
    pub liveness_window: Duration,
    /// The broker the outbox relay publishes to.
    pub bus: BusConfig,
}

/// DESIGN section 7.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";

impl RegistryConfig {
    pub fn from_env(env: &Env) -> Result<RegistryConfig, ConfigError> {
        Ok(RegistryConfig {
            common: CommonConfig::from_env(env)?,
            maintenance_database_url: env
                .optional_secret_url("BATON_REGISTRY__MAINTENANCE_DATABASE_URL"),
            bus: BusConfig::from_env(env)?,
            listen: env.socket_addr("BATON_REGISTRY__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_REGISTRY__DATABASE_URL"),
            lease: env.bounded_duration(
                "BATON_SESSION_LEASE",
                Duration::from_secs(24 * 3600),
                Duration::from_secs(60),
                Duration::from_secs(30 * 24 * 3600),
            )?,
            liveness_window: env.bounded_duration(
                "BATON_LIVENESS_WINDOW",
                crate::liveness::DEFAULT_WINDOW,
                Duration::from_secs(1),
                Duration::from_secs(3600),
            )?,
            // Non-zero on purpose: a swept close must land outside the explicit-close window.
            grace: env.bounded_duration(
                "BATON_SESSION_GRACE",
                Duration::from_secs(3600),
                Duration::from_secs(1),
                Duration::from_secs(7 * 24 * 3600),
            )?,
        })
    }
}
