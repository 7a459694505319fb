//! Provenance settings.

use std::net::SocketAddr;

use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

/// Everything provenance needs to start.
#[derive(Debug, Clone)]
pub struct ProvenanceConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_PROVENANCE__LISTEN`).
    pub listen: SocketAddr,
    /// Full database URL for the provenance role (`BATON_PROVENANCE__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// Registry's gRPC address (`BATON_REGISTRY__ADDR`).
    pub registry_addr: String,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50052";

impl ProvenanceConfig {
    pub fn from_env(env: &Env) -> Result<ProvenanceConfig, ConfigError> {
        Ok(ProvenanceConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_PROVENANCE__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_PROVENANCE__DATABASE_URL"),
            registry_addr: env.string("BATON_REGISTRY__ADDR", "127.0.0.1:50051"),
        })
    }
}
