//! Provenance settings.

use std::net::SocketAddr;

use baton_kit::config::peers::RegistryPeer;
use baton_kit::config::values::Listen;
use baton_kit::config::{CommonConfig, ConfigError, Env, OwnDatabase, SecretUrl, Settings, load};
use serde::{Deserialize, Serialize};

/// Provenance's own settings, `BATON_PROVENANCE__<FIELD>`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProvenanceSettings {
    /// gRPC listen address.
    pub listen: Listen<50052>,
    /// Full database URL for the provenance role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
}

impl Settings for ProvenanceSettings {
    const SECTION: &'static str = "provenance";
}

/// The services provenance calls (`BATON_<SERVICE>__ADDR`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProvenanceCalls {
    pub registry: RegistryPeer,
}

impl Settings for ProvenanceCalls {
    const SECTION: &'static str = "";
}

/// Everything provenance needs to start.
#[derive(Debug, Clone)]
pub struct ProvenanceConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_PROVENANCE__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    /// Registry's gRPC address (`BATON_REGISTRY__ADDR`).
    pub registry_addr: String,
}

impl ProvenanceConfig {
    pub fn from_env(env: &Env) -> Result<ProvenanceConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let settings: ProvenanceSettings = load(env)?;
        let calls: ProvenanceCalls = load(env)?;
        Ok(ProvenanceConfig {
            common,
            listen: settings.listen.get(),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: None,
            },
            registry_addr: calls.registry.addr(),
        })
    }
}
