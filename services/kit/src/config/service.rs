//! Settings every service process shares ([`CommonSettings`], read into [`CommonConfig`]), and
//! the variable naming the deployment environment.

use serde::{Deserialize, Serialize};

use super::env::{ConfigError, DEFAULT_DATABASE_URL, Env};
use super::load::load;
use super::secret::SecretUrl;
use super::settings::Settings;
use super::values::{Flag, Int};

/// The variable naming the deployment environment (`dev`, `prod`, ...), reported as the
/// `deployment.environment.name` resource attribute of every component
/// (`telemetry::resource`). Read before any service's config, by telemetry's start; the k8s
/// overlays set it in their ConfigMap.
pub const DEPLOYMENT_ENVIRONMENT_KEY: &str = "BATON_DEPLOYMENT_ENVIRONMENT";

/// Process-wide settings of every service, `BATON_<FIELD>`. The service token and gRPC TLS
/// have their own structs next to the code that uses them (`service_tokens`, `grpc_tls`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct CommonSettings {
    /// Base database URL; each context logs in as its own role on this host and database.
    pub database_url: DatabaseUrl,
    /// Largest number of pooled database connections per context.
    pub database_max_connections: Int<16, 1, 1000>,
    /// Honour `X-Baton-Test-Now` / `x-baton-test-now` and the test sweep route (never in
    /// production).
    pub test_clock: Flag<false>,
}

impl Settings for CommonSettings {
    const SECTION: &'static str = "";
}

/// The base database URL, `postgres://127.0.0.1:5432/baton` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct DatabaseUrl(pub SecretUrl);

impl Default for DatabaseUrl {
    fn default() -> DatabaseUrl {
        DatabaseUrl(SecretUrl::new(DEFAULT_DATABASE_URL.to_string()))
    }
}

/// Settings every service process shares.
#[derive(Debug, Clone)]
pub struct CommonConfig {
    /// Base database URL; each context connects as its own role on this host and database.
    pub database_url: SecretUrl,
    /// The bearer token internal gRPC calls send, and the set they accept (rotatable).
    pub service_token: crate::service_tokens::ServiceTokens,
    /// TLS with client certificates on the internal gRPC hops, when configured.
    pub grpc_tls: Option<crate::grpc_tls::GrpcTls>,
    /// Honour `X-Baton-Test-Now` / `x-baton-test-now` (never in production).
    pub test_clock: bool,
    /// Largest number of pooled database connections per context.
    pub database_max_connections: u32,
}

impl CommonConfig {
    pub fn from_env(env: &Env) -> Result<CommonConfig, ConfigError> {
        let service_token = crate::service_tokens::ServiceTokens::from_env(env)?;
        let grpc_tls = crate::grpc_tls::GrpcTls::from_env(env)?;
        let settings: CommonSettings = load(env)?;
        Ok(CommonConfig {
            database_url: settings.database_url.0,
            service_token,
            grpc_tls,
            test_clock: settings.test_clock.get(),
            database_max_connections: settings.database_max_connections.get() as u32,
        })
    }
}

/// The database URLs one context was given for its own roles: `BATON_<SERVICE>__DATABASE_URL`
/// and `BATON_<SERVICE>__MAINTENANCE_DATABASE_URL`. Each `None` means "the context's role on
/// the common URL" (`BATON_DATABASE_URL`).
#[derive(Debug, Clone, Default)]
pub struct OwnDatabase {
    pub url: Option<SecretUrl>,
    pub maintenance_url: Option<SecretUrl>,
}
