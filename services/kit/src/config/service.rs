//! Settings every service process shares ([`CommonConfig`]), and the variable naming the
//! deployment environment.

use super::env::{ConfigError, DEFAULT_DATABASE_URL, Env};
use super::secret::SecretUrl;

/// The variable naming the deployment environment (`dev`, `prod`, ...), reported as the
/// `deployment.environment.name` resource attribute of every component
/// (`telemetry::resource`). Read before any service's config, by telemetry's start; the k8s
/// overlays set it in their ConfigMap.
pub const DEPLOYMENT_ENVIRONMENT_KEY: &str = "BATON_DEPLOYMENT_ENVIRONMENT";

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
        Ok(CommonConfig {
            database_url: env.secret_url("BATON_DATABASE_URL", DEFAULT_DATABASE_URL),
            service_token,
            grpc_tls: crate::grpc_tls::GrpcTls::from_env(env)?,
            test_clock: env.bool("BATON_TEST_CLOCK", false)?,
            database_max_connections: env.bounded_u64(
                "BATON_DATABASE_MAX_CONNECTIONS",
                16,
                1,
                1000,
            )? as u32,
        })
    }
}
