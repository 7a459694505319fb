//! Spans, metrics and log lines around every gRPC call, both ways.
//!
//! Server side ([`TraceLayer`]): one SERVER span per call, parented on the caller's W3C context
//! and marked as the serving component's; `rpc.server.duration` (ms); one debug `rpc` line.
//! Health checks (`grpc.health.v1.Health/*`) pass through untraced and uncounted.
//!
//! Client side ([`ClientTrace`], wrapping a channel): one CLIENT span per call (`rpc.system`,
//! `rpc.service`, `rpc.method`, `server.address`, `server.port`) whose own context is what the
//! request carries in `traceparent`, so the callee's server span is its child;
//! `rpc.client.duration` (ms). A transport failure counts as UNAVAILABLE.
//!
//! The status of a unary call is read from the response headers (`grpc-status`): tonic answers
//! an error as a trailers-only response, and a success carries it in the trailers, so a missing
//! header on a response means OK. Span status follows [`crate::telemetry::status`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry::context::FutureExt as _;
use opentelemetry::metrics::Histogram;
use tonic::body::Body;
use tonic::transport::Channel;
use tower::{Layer, Service};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::local::Transport;
use super::settings::CLIENT_TIMEOUT;
use crate::telemetry::component::{Component, PerComponent};
use crate::telemetry::status::{self, Side};
use crate::telemetry::{self, buckets};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The health service's path prefix: probes are never traced.
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// `(service, method)` of a gRPC path `/pkg.Service/Method`.
pub fn rpc_names(path: &str) -> (&str, &str) {
    path.trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path.trim_start_matches('/'), ""))
}

fn owned_rpc_names(path: &str) -> (String, String) {
    let (service, method) = rpc_names(path);
    (service.to_string(), method.to_string())
}

/// The numeric status of a response: its `grpc-status` header, else OK (see the module doc).
fn response_code(headers: &http::HeaderMap) -> i32 {
    headers
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

/// gRPC UNKNOWN, for a server error that never became a response.
const UNKNOWN: i32 = 2;
/// gRPC UNAVAILABLE, for a call the transport could not complete.
const UNAVAILABLE: i32 = 14;

fn server_duration(meter: opentelemetry::metrics::Meter) -> Histogram<f64> {
    meter
        .f64_histogram("rpc.server.duration")
        .with_unit("ms")
        .with_description("gRPC calls served, by method and status")
        .with_boundaries(buckets::RPC_MILLISECONDS.to_vec())
        .build()
}

fn client_duration(meter: opentelemetry::metrics::Meter) -> Histogram<f64> {
    meter
        .f64_histogram("rpc.client.duration")
        .with_unit("ms")
        .with_description("gRPC calls made, by method and status")
        .with_boundaries(buckets::RPC_MILLISECONDS.to_vec())
        .build()
}

fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

/// Opens one server span per call for `component`.
#[derive(Clone, Copy)]
pub struct TraceLayer {
    pub component: Component,
}

impl<S> Layer<S> for TraceLayer {
    type Service = TraceService<S>;

    fn layer(&self, inner: S) -> TraceService<S> {
        TraceService {
            inner,
            component: self.component,
        }
    }
}

#[derive(Clone)]
pub struct TraceService<S> {
    inner: S,
    component: Component,
}

impl<S, B> Service<http::Request<B>> for TraceService<S>
where
    S: Service<http::Request<B>, Response = http::Response<Body>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<http::Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path().starts_with(HEALTH_PREFIX) {
            return Box::pin(self.inner.call(request));
        }
        let (service, method) = owned_rpc_names(request.uri().path());
        let span = tracing::info_span!(
            "grpc.server",
            otel.name = %format!("{service}/{method}"),
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = %service,
            rpc.method = %method,
            rpc.grpc.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        telemetry::set_parent_from_headers(&span, request.headers(), self.component);
        let component = self.component;
        let future = self.inner.call(request);
        let record_span = span.clone();
        let started = Instant::now();
        Box::pin(
            async move {
                let result = future.await;
                let code = match &result {
                    Ok(response) => response_code(response.headers()),
                    Err(_) => UNKNOWN,
                };
                let elapsed = started.elapsed();
                record_span.record("rpc.grpc.status_code", code);
                if let Some(value) = status::status_code(status::grpc_is_error(Side::Server, code))
                {
                    record_span.record("otel.status_code", value);
                }
                tracing::debug!(
                    rpc.service = %service,
                    rpc.method = %method,
                    rpc.grpc.status_code = code,
                    latency_ms = millis(elapsed),
                    "rpc"
                );
                static DURATION: PerComponent<Histogram<f64>> = PerComponent::new();
                DURATION.get_or_init(component, server_duration).record(
                    millis(elapsed),
                    &[
                        KeyValue::new("rpc.system", "grpc"),
                        KeyValue::new("rpc.service", service),
                        KeyValue::new("rpc.method", method),
                        KeyValue::new("rpc.grpc.status_code", i64::from(code)),
                    ],
                );
                result
            }
            .instrument(span)
            .with_context(component.context(opentelemetry::Context::new())),
        )
    }
}

/// A channel whose every call is a CLIENT span and an `rpc.client.duration` measurement. Its
/// calls stay in process when `address` is served by this process ([`crate::grpc::local`]).
pub type TracedChannel = ClientTrace<Transport>;

/// Wraps `channel` (to `address`, as configured) for calls made by `component`; calls go to
/// the co-located server's stack instead while this process serves `address` in process.
pub fn traced(component: Component, address: &str, channel: Channel) -> TracedChannel {
    let (host, port) = server_address(address);
    ClientTrace {
        inner: Transport::new(address, channel, CLIENT_TIMEOUT),
        component,
        host: Arc::from(host),
        port,
    }
}

/// `server.address` and `server.port` of a configured address (`host:port` or a URI).
pub fn server_address(address: &str) -> (String, Option<u16>) {
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    match uri.parse::<http::Uri>() {
        Ok(uri) => (
            uri.host()
                .unwrap_or(address)
                .trim_matches(['[', ']'])
                .to_string(),
            uri.port_u16(),
        ),
        Err(_) => (address.to_string(), None),
    }
}

/// See [`traced`].
#[derive(Clone, Debug)]
pub struct ClientTrace<S> {
    inner: S,
    component: Component,
    host: Arc<str>,
    port: Option<u16>,
}

impl<S> Service<http::Request<Body>> for ClientTrace<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<http::Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let (service, method) = owned_rpc_names(request.uri().path());
        let span = tracing::info_span!(
            "grpc.client",
            otel.name = %format!("{service}/{method}"),
            otel.kind = "client",
            rpc.system = "grpc",
            rpc.service = %service,
            rpc.method = %method,
            server.address = %self.host,
            server.port = self.port,
            rpc.grpc.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        // The callee's parent is this span, not the caller's: overwrite what `Outbound` stamped.
        telemetry::propagation::inject_span_into_headers(&span.context(), request.headers_mut());
        let (component, host) = (self.component, self.host.clone());
        let future = self.inner.call(request);
        let record_span = span.clone();
        let started = Instant::now();
        Box::pin(
            async move {
                let result = future.await;
                let code = match &result {
                    Ok(response) => response_code(response.headers()),
                    Err(_) => UNAVAILABLE,
                };
                record_span.record("rpc.grpc.status_code", code);
                if let Some(value) = status::status_code(status::grpc_is_error(Side::Client, code))
                {
                    record_span.record("otel.status_code", value);
                }
                static DURATION: PerComponent<Histogram<f64>> = PerComponent::new();
                DURATION.get_or_init(component, client_duration).record(
                    millis(started.elapsed()),
                    &[
                        KeyValue::new("rpc.system", "grpc"),
                        KeyValue::new("rpc.service", service),
                        KeyValue::new("rpc.method", method),
                        KeyValue::new("rpc.grpc.status_code", i64::from(code)),
                        KeyValue::new("server.address", host.to_string()),
                    ],
                );
                result
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_service_and_method() {
        for (path, expected) in [
            (
                "/baton.registry.v1.SessionRegistry/Open",
                ("baton.registry.v1.SessionRegistry", "Open"),
            ),
            (
                "/grpc.health.v1.Health/Check",
                ("grpc.health.v1.Health", "Check"),
            ),
            ("/odd", ("odd", "")),
        ] {
            assert_eq!(rpc_names(path), expected, "{path}");
        }
    }

    #[test]
    fn a_missing_status_header_is_ok_and_a_present_one_is_read() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(response_code(&headers), 0);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(response_code(&headers), 5);
    }

    #[test]
    fn server_addresses_come_from_host_port_or_uri() {
        for (address, expected) in [
            ("127.0.0.1:50051", ("127.0.0.1".to_string(), Some(50051))),
            (
                "http://registry:50051",
                ("registry".to_string(), Some(50051)),
            ),
            ("[::1]:7000", ("::1".to_string(), Some(7000))),
        ] {
            assert_eq!(server_address(address), expected, "{address}");
        }
    }
}
