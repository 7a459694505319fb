//! Registry settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::values::{Listen, Span, days, hours, mins, secs};
use baton_kit::config::{
    CommonConfig, ConfigError, Env, OwnDatabase, Renamed, SecretUrl, Settings, load,
};
use serde::{Deserialize, Serialize};

/// The registry's own settings, `BATON_REGISTRY__<FIELD>`; each type declares the default and
/// the bounds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RegistrySettings {
    /// gRPC listen address (DESIGN section 7).
    pub listen: Listen<50051>,
    /// Full database URL for the registry role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role (the lease-expiry sweep, the outbox relay).
    pub maintenance_database_url: Option<SecretUrl>,
    /// A session is live while `last_seen_at > now − lease`.
    pub session_lease: Span<{ hours(24) }, { mins(1) }, { days(30) }>,
    /// The sweep waits this long past the lease before closing. Non-zero on purpose: a swept
    /// close must land outside the explicit-close window.
    pub session_grace: Span<{ hours(1) }, { secs(1) }, { days(7) }>,
    /// A client that stopped pulsing reads disconnected after this long.
    pub liveness_window:
        Span<{ crate::liveness::DEFAULT_WINDOW.as_millis() as u64 }, { secs(1) }, { hours(1) }>,
}

impl Settings for RegistrySettings {
    const SECTION: &'static str = "registry";
    const RENAMED: &'static [Renamed] = &[
        Renamed::new("BATON_SESSION_LEASE", "session_lease"),
        Renamed::new("BATON_SESSION_GRACE", "session_grace"),
        Renamed::new("BATON_LIVENESS_WINDOW", "liveness_window"),
    ];
}

/// Everything the registry needs to start.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_REGISTRY__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    /// A session is live while `last_seen_at > now − lease` (`BATON_REGISTRY__SESSION_LEASE`).
    pub lease: Duration,
    /// The sweep waits this long past the lease before closing (`BATON_REGISTRY__SESSION_GRACE`).
    pub grace: Duration,
    /// A client that stopped pulsing reads disconnected after this long
    /// (`BATON_REGISTRY__LIVENESS_WINDOW`).
    pub liveness_window: Duration,
    /// The broker the outbox relay publishes to.
    pub bus: BusConfig,
}

impl RegistryConfig {
    pub fn from_env(env: &Env) -> Result<RegistryConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let bus = BusConfig::from_env(env)?;
        let settings: RegistrySettings = load(env)?;
        Ok(RegistryConfig {
            common,
            bus,
            listen: settings.listen.get(),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: settings.maintenance_database_url,
            },
            lease: settings.session_lease.get(),
            liveness_window: settings.liveness_window.get(),
            grace: settings.session_grace.get(),
        })
    }
}
