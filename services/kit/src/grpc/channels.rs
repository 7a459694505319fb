//! Channels to other services: lazily connecting, plaintext or mutual TLS, bare (probes) or
//! [`traced`].

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use super::settings::CLIENT_TIMEOUT;
use super::trace::{TracedChannel, traced};
use crate::error::ApiError;
use crate::grpc_tls::GrpcTls;
use crate::telemetry::Component;

/// A lazily-connecting plaintext channel to `address` (`host:port` or a full URI). Untraced:
/// wrap it with [`traced`] for calls (health probes use it bare).
pub fn channel(address: &str) -> Result<Channel, ApiError> {
    channel_with_tls(address, None)
}

/// A lazily-connecting channel to `address`; with `tls`, over mutual TLS (`https`), verifying
/// the server against the CA and presenting this process's certificate.
pub fn channel_with_tls(address: &str, tls: Option<&GrpcTls>) -> Result<Channel, ApiError> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri = match address.split_once("://") {
        Some((_, rest)) => format!("{scheme}://{rest}"),
        None => format!("{scheme}://{address}"),
    };
    let mut endpoint = Endpoint::from_shared(uri.clone())
        .map_err(|error| ApiError::internal(format!("invalid service address: {error}")))?;
    if let Some(tls) = tls {
        let host = uri
            .parse::<http::Uri>()
            .ok()
            .and_then(|parsed| parsed.host().map(str::to_string))
            .unwrap_or_default();
        endpoint = endpoint
            .tls_config(tls.client(&host))
            .map_err(|error| ApiError::internal(format!("gRPC TLS settings: {error}")))?;
    }
    let endpoint = endpoint
        .connect_timeout(Duration::from_secs(3))
        .timeout(CLIENT_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    Ok(endpoint.connect_lazy())
}

/// A plaintext [`channel`] to `address`, [`traced`] as `component`'s calls.
pub fn traced_channel(component: Component, address: &str) -> Result<TracedChannel, ApiError> {
    traced_channel_with_tls(component, address, None)
}

/// [`channel_with_tls`] to `address`, [`traced`] as `component`'s calls.
pub fn traced_channel_with_tls(
    component: Component,
    address: &str,
    tls: Option<&GrpcTls>,
) -> Result<TracedChannel, ApiError> {
    Ok(traced(component, address, channel_with_tls(address, tls)?))
}
