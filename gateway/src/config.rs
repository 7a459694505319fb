//! Gateway settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

use crate::client_addr::{self, Cidr};

/// Everything the gateway needs to start.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub common: CommonConfig,
    /// HTTP listen address (`BATON_GATEWAY__LISTEN`, default 127.0.0.1:8080).
    pub listen: SocketAddr,
    /// Full database URL for the gateway role (`BATON_GATEWAY__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// Registry's gRPC address (`BATON_REGISTRY__ADDR`).
    pub registry_addr: String,
    /// Provenance's gRPC address (`BATON_PROVENANCE__ADDR`).
    pub provenance_addr: String,
    /// Triage's gRPC address (`BATON_TRIAGE__ADDR`).
    pub triage_addr: String,
    /// Closer's gRPC address (`BATON_CLOSER__ADDR`), for the closer listing and the test-clock sweep route.
    pub closer_addr: String,
    /// Usage's gRPC address (`BATON_USAGE__ADDR`).
    pub usage_addr: String,
    /// Notify's gRPC address (`BATON_NOTIFY__ADDR`): webhooks and their delivery log.
    pub notify_addr: String,
    /// Largest usage upload after decompression (`BATON_GATEWAY__USAGE_BODY_LIMIT`, 8 MiB).
    pub usage_body_limit: usize,
    /// Requests per key per window (`BATON_RATE_LIMIT__REQUESTS`, 300).
    pub rate_limit_requests: u32,
    /// The window (`BATON_RATE_LIMIT__WINDOW`, 60s).
    pub rate_limit_window: Duration,
    /// Largest request body in bytes (`BATON_GATEWAY__BODY_LIMIT`, 64 KiB).
    pub body_limit: usize,
    /// Longest a request may take (`BATON_GATEWAY__REQUEST_TIMEOUT`, 15s).
    pub request_timeout: Duration,
    /// How long a verified key is trusted without a database read (`BATON_API_KEY_CACHE_TTL`, 30s).
    pub key_cache_ttl: Duration,
    /// Most requests in flight; beyond it requests are refused with 503 (`BATON_GATEWAY__MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// Failed key verifications per client per window (`BATON_RATE_LIMIT__FAILURES`, 30).
    pub rate_limit_failures: u32,
    /// Peers whose `X-Forwarded-For` is believed (`BATON_GATEWAY__TRUSTED_PROXIES`: addresses
    /// or CIDR blocks, comma-separated; none by default).
    pub trusted_proxies: Vec<Cidr>,
    /// Time to send a request's headers, also the keep-alive idle limit
    /// (`BATON_GATEWAY__HEADER_READ_TIMEOUT`, 10s).
    pub header_read_timeout: Duration,
    /// Time for a whole request body to arrive (`BATON_GATEWAY__BODY_TIMEOUT`, 10s; 408 beyond).
    pub body_timeout: Duration,
    /// Open connections per client address (`BATON_GATEWAY__MAX_CONNECTIONS_PER_CLIENT`, 64).
    pub max_connections_per_client: usize,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_REGISTRY_ADDR: &str = "127.0.0.1:50051";
pub const DEFAULT_PROVENANCE_ADDR: &str = "127.0.0.1:50052";
pub const DEFAULT_TRIAGE_ADDR: &str = "127.0.0.1:50053";
pub const DEFAULT_CLOSER_ADDR: &str = "127.0.0.1:50054";
pub const DEFAULT_NOTIFY_ADDR: &str = "127.0.0.1:50056";
pub const DEFAULT_USAGE_ADDR: &str = "127.0.0.1:50055";

impl GatewayConfig {
    pub fn from_env(env: &Env) -> Result<GatewayConfig, ConfigError> {
        Ok(GatewayConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_GATEWAY__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_GATEWAY__DATABASE_URL"),
            registry_addr: env.string("BATON_REGISTRY__ADDR", DEFAULT_REGISTRY_ADDR),
            provenance_addr: env.string("BATON_PROVENANCE__ADDR", DEFAULT_PROVENANCE_ADDR),
            triage_addr: env.string("BATON_TRIAGE__ADDR", DEFAULT_TRIAGE_ADDR),
            closer_addr: env.string("BATON_CLOSER__ADDR", DEFAULT_CLOSER_ADDR),
            usage_addr: env.string("BATON_USAGE__ADDR", DEFAULT_USAGE_ADDR),
            notify_addr: env.string("BATON_NOTIFY__ADDR", DEFAULT_NOTIFY_ADDR),
            usage_body_limit: env.bounded_u64(
                "BATON_GATEWAY__USAGE_BODY_LIMIT",
                8 << 20,
                64 * 1024,
                64 << 20,
            )? as usize,
            rate_limit_requests: env.bounded_u64(
                "BATON_RATE_LIMIT__REQUESTS",
                300,
                1,
                10_000_000,
            )? as u32,
            rate_limit_window: env.bounded_duration(
                "BATON_RATE_LIMIT__WINDOW",
                Duration::from_secs(60),
                Duration::from_secs(1),
                Duration::from_secs(3600),
            )?,
            body_limit: env.bounded_u64("BATON_GATEWAY__BODY_LIMIT", 64 * 1024, 1024, 16 << 20)?
                as usize,
            request_timeout: env.bounded_duration(
                "BATON_GATEWAY__REQUEST_TIMEOUT",
                Duration::from_secs(15),
                Duration::from_millis(100),
                Duration::from_secs(300),
            )?,
            key_cache_ttl: env.bounded_duration(
                "BATON_API_KEY_CACHE_TTL",
                Duration::from_secs(30),
                Duration::ZERO,
                Duration::from_secs(3600),
            )?,
            max_in_flight: env.bounded_u64("BATON_GATEWAY__MAX_IN_FLIGHT", 1024, 1, 1_000_000)?
                as usize,
            rate_limit_failures: env.bounded_u64("BATON_RATE_LIMIT__FAILURES", 30, 1, 10_000_000)?
                as u32,
            trusted_proxies: client_addr::parse_list(
                &env.string("BATON_GATEWAY__TRUSTED_PROXIES", ""),
            )
            .map_err(|entry| {
                ConfigError::new(
                    "BATON_GATEWAY__TRUSTED_PROXIES",
                    format!("not an address or CIDR block: {entry}"),
                )
            })?,
            header_read_timeout: env.bounded_duration(
                "BATON_GATEWAY__HEADER_READ_TIMEOUT",
                Duration::from_secs(10),
                Duration::from_millis(100),
                Duration::from_secs(600),
            )?,
            body_timeout: env.bounded_duration(
                "BATON_GATEWAY__BODY_TIMEOUT",
                Duration::from_secs(10),
                Duration::from_millis(100),
                Duration::from_secs(600),
            )?,
            max_connections_per_client: env.bounded_u64(
                "BATON_GATEWAY__MAX_CONNECTIONS_PER_CLIENT",
                64,
                1,
                1_000_000,
            )? as usize,
        })
    }
}
