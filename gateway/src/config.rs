//! Gateway settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::config::peers::{
    CloserPeer, NotifyPeer, ProvenancePeer, RegistryPeer, TriagePeer, UsagePeer,
};
use baton_kit::config::values::{Int, Listen, Span, hours, millis, mins, secs};
use baton_kit::config::{CommonConfig, ConfigError, Env, Renamed, SecretUrl, Settings, load};
use serde::{Deserialize, Serialize};

use crate::client_addr::{self, Cidr};

/// The gateway's own settings, `BATON_GATEWAY__<FIELD>`; each type declares the default and
/// the bounds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GatewaySettings {
    /// HTTP listen address (`:0` picks a free port; the bound address is logged).
    pub listen: Listen<8080>,
    /// Full database URL for the gateway role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Requests per `<client-ip>:<key-prefix>` per window, spent only after the key's secret
    /// verified.
    pub rate_limit_requests: Int<300, 1, 10_000_000>,
    /// The rate limit's window.
    pub rate_limit_window: Span<{ secs(60) }, { secs(1) }, { hours(1) }>,
    /// Failed key verifications per client per window (429 beyond; also stops its look-ups of
    /// unknown prefixes).
    pub rate_limit_failures: Int<30, 1, 10_000_000>,
    /// How long a verified key is trusted without a database read (the revocation delay).
    pub api_key_cache_ttl: Span<{ secs(30) }, 0, { hours(1) }>,
    /// Peers whose `X-Forwarded-For` names the client: addresses or CIDR blocks,
    /// comma-separated (read right to left, trusted hops skipped); none by default.
    pub trusted_proxies: String,
    /// Largest request body in bytes (413 beyond; `crate::body` says how an oversized body is
    /// refused).
    pub body_limit: Int<{ 64 * 1024 }, 1024, { 16 << 20 }>,
    /// Largest usage upload in bytes, after decompression.
    pub usage_body_limit: Int<{ 8 << 20 }, { 64 * 1024 }, { 64 << 20 }>,
    /// Longest a request may take (503 beyond).
    pub request_timeout: Span<{ secs(15) }, { millis(100) }, { mins(5) }>,
    /// Most requests in flight; beyond it requests are refused with 503.
    pub max_in_flight: Int<1024, 1, 1_000_000>,
    /// Time to send a request's headers, also how long a kept-alive connection may sit idle.
    pub header_read_timeout: Span<{ secs(10) }, { millis(100) }, { mins(10) }>,
    /// Time for a whole request body to arrive (408 beyond, connection closed).
    pub body_timeout: Span<{ secs(10) }, { millis(100) }, { mins(10) }>,
    /// Open connections per client address (trusted proxies exempt; 429 beyond).
    pub max_connections_per_client: Int<64, 1, 1_000_000>,
}

impl Settings for GatewaySettings {
    const SECTION: &'static str = "gateway";
    const RENAMED: &'static [Renamed] = &[
        Renamed::new("BATON_RATE_LIMIT__REQUESTS", "rate_limit_requests"),
        Renamed::new("BATON_RATE_LIMIT__WINDOW", "rate_limit_window"),
        Renamed::new("BATON_RATE_LIMIT__FAILURES", "rate_limit_failures"),
        Renamed::new("BATON_API_KEY_CACHE_TTL", "api_key_cache_ttl"),
    ];

    fn check(&self) -> Result<(), ConfigError> {
        trusted_proxies(&self.trusted_proxies).map(drop)
    }
}

fn trusted_proxies(list: &str) -> Result<Vec<Cidr>, ConfigError> {
    client_addr::parse_list(list).map_err(|entry| {
        ConfigError::new(
            "BATON_GATEWAY__TRUSTED_PROXIES",
            format!("not an address or CIDR block: {entry}"),
        )
    })
}

/// The services the gateway calls (`BATON_<SERVICE>__ADDR`): all of them.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GatewayCalls {
    pub registry: RegistryPeer,
    pub provenance: ProvenancePeer,
    pub triage: TriagePeer,
    pub closer: CloserPeer,
    pub usage: UsagePeer,
    pub notify: NotifyPeer,
}

impl Settings for GatewayCalls {
    const SECTION: &'static str = "";
}

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
    /// Requests per key per window (`BATON_GATEWAY__RATE_LIMIT_REQUESTS`, 300).
    pub rate_limit_requests: u32,
    /// The window (`BATON_GATEWAY__RATE_LIMIT_WINDOW`, 60s).
    pub rate_limit_window: Duration,
    /// Largest request body in bytes (`BATON_GATEWAY__BODY_LIMIT`, 64 KiB).
    pub body_limit: usize,
    /// Longest a request may take (`BATON_GATEWAY__REQUEST_TIMEOUT`, 15s).
    pub request_timeout: Duration,
    /// How long a verified key is trusted without a database read
    /// (`BATON_GATEWAY__API_KEY_CACHE_TTL`, 30s).
    pub key_cache_ttl: Duration,
    /// Most requests in flight; beyond it requests are refused with 503 (`BATON_GATEWAY__MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// Failed key verifications per client per window (`BATON_GATEWAY__RATE_LIMIT_FAILURES`, 30).
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

impl GatewayConfig {
    pub fn from_env(env: &Env) -> Result<GatewayConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let settings: GatewaySettings = load(env)?;
        let calls: GatewayCalls = load(env)?;
        Ok(GatewayConfig {
            common,
            listen: settings.listen.get(),
            trusted_proxies: trusted_proxies(&settings.trusted_proxies)?,
            database_url: settings.database_url,
            registry_addr: calls.registry.addr(),
            provenance_addr: calls.provenance.addr(),
            triage_addr: calls.triage.addr(),
            closer_addr: calls.closer.addr(),
            usage_addr: calls.usage.addr(),
            notify_addr: calls.notify.addr(),
            usage_body_limit: settings.usage_body_limit.get() as usize,
            rate_limit_requests: settings.rate_limit_requests.get() as u32,
            rate_limit_window: settings.rate_limit_window.get(),
            body_limit: settings.body_limit.get() as usize,
            request_timeout: settings.request_timeout.get(),
            key_cache_ttl: settings.api_key_cache_ttl.get(),
            max_in_flight: settings.max_in_flight.get() as usize,
            rate_limit_failures: settings.rate_limit_failures.get() as u32,
            header_read_timeout: settings.header_read_timeout.get(),
            body_timeout: settings.body_timeout.get(),
            max_connections_per_client: settings.max_connections_per_client.get() as usize,
        })
    }
}
