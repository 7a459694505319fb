//! gRPC plumbing every service and client shares.
//!
//! Inbound: [`serve`] wraps a service's routes in one tower stack ([`CallStack`]: per-request
//! timeout, load shedding, trace, service token, global concurrency limit) and registers health
//! and reflection. Handlers read the caller's tenant and "now" with [`CallContext::from_request`].
//!
//! Outbound: [`Outbound::request`] stamps every call with the service token, the tenant, the
//! test instant (when the test clock is on) and the current W3C trace context; [`traced`]
//! wraps a [`channel`] so that each call is a CLIENT span, and goes in process to a co-located
//! server ([`crate::grpc_local`]). Spans and metrics of both directions live in
//! [`crate::grpc_trace`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Status};
use tower::{Layer, Service};
use uuid::Uuid;

use crate::clock::{Clock, TEST_NOW_KEY};
use crate::error::ApiError;
use crate::grpc_local;
use crate::grpc_stack::CallStack;
use crate::grpc_tls::GrpcTls;
use crate::schema::Readiness;
use crate::service_tokens::{Caller, ServiceTokens};
use crate::telemetry;
use crate::telemetry::Component;

pub use crate::grpc_local::Transport;
pub use crate::grpc_trace::{ClientTrace, TraceLayer, TracedChannel, traced};

/// Metadata key naming the tenant a call acts for.
pub const TENANT_KEY: &str = "x-baton-tenant";

/// Settings of a gRPC server.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Whose calls these are (their spans' and metrics' `service.name`).
    pub component: Component,
    /// The tokens a call may carry.
    pub service_token: ServiceTokens,
    /// Longest a single call may run before it is cancelled.
    pub request_timeout: Duration,
    /// Most calls in flight across all connections; beyond it, calls are shed.
    pub max_concurrent_requests: usize,
    /// Health reports NOT_SERVING until this is ready (the schema gate).
    pub readiness: Readiness,
    /// Serve TLS only, requiring client certificates (see [`crate::grpc_tls`]).
    pub tls: Option<GrpcTls>,
}

impl ServerSettings {
    pub fn new(component: Component, service_token: impl Into<ServiceTokens>) -> ServerSettings {
        ServerSettings {
            component,
            service_token: service_token.into(),
            request_timeout: Duration::from_secs(10),
            max_concurrent_requests: 512,
            readiness: Readiness::ready(),
            tls: None,
        }
    }

    /// Serves with mutual TLS when `tls` is set.
    pub fn with_tls(mut self, tls: Option<GrpcTls>) -> ServerSettings {
        self.tls = tls;
        self
    }

    /// Reports NOT_SERVING to health checks until `readiness` is ready.
    pub fn with_readiness(mut self, readiness: Readiness) -> ServerSettings {
        self.readiness = readiness;
        self
    }
}

/// Serves `routes` on `listener` until `shutdown` resolves, with health and reflection added.
/// `service_name` is the fully-qualified gRPC name reported SERVING to health checks.
pub async fn serve<S>(
    listener: TcpListener,
    settings: ServerSettings,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let initial = if settings.readiness.is_ready() {
        tonic_health::ServingStatus::Serving
    } else {
        tonic_health::ServingStatus::NotServing
    };
    for name in [S::NAME, ""] {
        health_reporter.set_service_status(name, initial).await;
    }
    if !settings.readiness.is_ready() {
        let reporter = health_reporter.clone();
        let readiness = settings.readiness.clone();
        tokio::spawn(async move {
            readiness.wait().await;
            for name in [S::NAME, ""] {
                reporter
                    .set_service_status(name, tonic_health::ServingStatus::Serving)
                    .await;
            }
        });
    }
    // Reflection lists only what this port serves (the descriptor set holds every context).
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(baton_proto::FILE_DESCRIPTOR_SET)
        .with_service_name(S::NAME)
        .build_v1()
        .map_err(|error| {
            tracing::error!(error = %error, "reflection descriptor set invalid");
        })
        .ok();
    let mut routes = Routes::new(service).add_service(health_service);
    if let Some(reflection) = reflection {
        routes = routes.add_service(reflection);
    }
    // Timeout, load shedding, trace, service token, concurrency limit: see `CallStack`.
    let stack = CallStack::new(&settings);
    // A co-located caller gets the same stack without the wire, when the process offered this
    // address (`grpc_local`); it stops at the stop signal, as the listener does.
    let in_process = listener
        .local_addr()
        .ok()
        .and_then(|address| grpc_local::provide(address, stack.layer(routes.clone().prepare())));
    let shutdown = async move {
        shutdown.await;
        drop(in_process);
    };
    let mut builder = Server::builder();
    if let Some(tls) = &settings.tls {
        builder = builder.tls_config(tls.server())?;
    }
    builder
        .layer(stack)
        .add_routes(routes)
        // Nagle off: replies are small and latency-bound.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
}

/// What a handler needs from the call's metadata: who it acts for and when "now" is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallContext {
    pub tenant_id: Uuid,
    pub now: DateTime<Utc>,
}

impl CallContext {
    /// Reads the tenant (required) and the test instant (honoured only in test-clock mode).
    pub fn from_request<T>(request: &Request<T>, clock: &Clock) -> Result<CallContext, Status> {
        let metadata = request.metadata();
        let tenant_id = metadata
            .get(TENANT_KEY)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| Uuid::parse_str(text).ok())
            .ok_or_else(|| {
                Status::from(ApiError::invalid_input(format!(
                    "metadata {TENANT_KEY} must be a tenant uuid"
                )))
            })?;
        let test_now = metadata
            .get(TEST_NOW_KEY)
            .and_then(|value| value.to_str().ok());
        let now = clock.now_for(test_now).map_err(Status::from)?;
        Ok(CallContext { tenant_id, now })
    }

    /// The identity of a call this handler makes onward: same tenant, and the same instant
    /// when the test clock is on.
    pub fn onward(&self, clock: &Clock) -> OutboundCall {
        OutboundCall {
            tenant_id: self.tenant_id,
            test_now: clock.test_mode().then(|| crate::clock::iso(self.now)),
        }
    }
}

/// "Now" for a call that acts for no tenant (cross-tenant maintenance).
pub fn call_instant<T>(request: &Request<T>, clock: &Clock) -> Result<DateTime<Utc>, Status> {
    let test_now = request
        .metadata()
        .get(TEST_NOW_KEY)
        .and_then(|value| value.to_str().ok());
    clock.now_for(test_now).map_err(Status::from)
}

/// Stamps outgoing calls with the service token, tenant, test instant and trace context.
#[derive(Debug, Clone)]
pub struct Outbound {
    tokens: ServiceTokens,
}

/// The identity and clock of one outgoing call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundCall {
    pub tenant_id: Uuid,
    /// The test instant to forward (only ever set when the caller runs the test clock).
    pub test_now: Option<String>,
}

impl Outbound {
    /// Sends whichever token the set currently sends (a rotation takes effect without a
    /// restart).
    pub fn new(service_token: impl Into<ServiceTokens>) -> Outbound {
        Outbound {
            tokens: service_token.into(),
        }
    }

    /// Wraps `message` in a request carrying the call's metadata.
    pub fn request<T>(&self, call: &OutboundCall, message: T) -> Request<T> {
        let mut request = self.maintenance_request(call.test_now.as_deref(), message);
        if let Ok(value) = call.tenant_id.to_string().parse() {
            request.metadata_mut().insert(TENANT_KEY, value);
        }
        request
    }

    /// A request that acts for no tenant (cross-tenant maintenance): token, test instant and
    /// trace context only.
    pub fn maintenance_request<T>(&self, test_now: Option<&str>, message: T) -> Request<T> {
        let mut request = Request::new(message);
        let metadata = request.metadata_mut();
        if let Ok(value) = self.tokens.authorization().parse() {
            metadata.insert("authorization", value);
        }
        if let Some(value) = test_now.and_then(|text| text.parse().ok()) {
            metadata.insert(TEST_NOW_KEY, value);
        }
        telemetry::inject_current_into_metadata(metadata);
        request
    }
}

/// Longest an outgoing call may take, on the wire or in process.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

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

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Rejects calls without `authorization: Bearer <service token>` (health checks exempt, so
/// orchestrators can probe without the secret).
#[derive(Clone)]
pub struct ServiceTokenLayer {
    tokens: ServiceTokens,
}

impl ServiceTokenLayer {
    pub fn new(tokens: impl Into<ServiceTokens>) -> ServiceTokenLayer {
        ServiceTokenLayer {
            tokens: tokens.into(),
        }
    }
}

impl<S> Layer<S> for ServiceTokenLayer {
    type Service = ServiceTokenService<S>;

    fn layer(&self, inner: S) -> ServiceTokenService<S> {
        ServiceTokenService {
            inner,
            tokens: self.tokens.clone(),
        }
    }
}

#[derive(Clone)]
pub struct ServiceTokenService<S> {
    inner: S,
    tokens: ServiceTokens,
}

impl<S, B> Service<http::Request<B>> for ServiceTokenService<S>
where
    S: Service<http::Request<B>, Response = http::Response<Body>> + Clone + Send,
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
        // `poll_ready` may have reserved capacity in the inner service (a concurrency permit, a
        // buffer slot). Take the ready instance and leave a fresh clone in its place: the ready
        // one is either called or dropped here, and dropping it gives the reservation back, so
        // a refused call never holds a slot.
        let fresh = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, fresh);
        let path = request.uri().path();
        let exempt = path.starts_with("/grpc.health.v1.Health/");
        let presented = request
            .headers()
            .get("authorization")
            .map(|value| value.as_bytes())
            .unwrap_or_default();
        let refusal = if exempt {
            None
        } else {
            match self.tokens.caller(presented, path) {
                Caller::Service | Caller::Client(_) => None,
                Caller::Denied { client, reason } => {
                    tracing::info!(
                        client = client.as_str(),
                        path,
                        reason,
                        "internal client refused"
                    );
                    Some(Status::permission_denied(format!(
                        "client {client}: {reason}"
                    )))
                }
                Caller::Unknown => Some(Status::unauthenticated(
                    "missing or invalid service token or client credential",
                )),
            }
        };
        if let Some(status) = refusal {
            drop(ready);
            return Box::pin(async move { Ok(status.into_http()) });
        }
        Box::pin(ready.call(request))
    }
}

#[cfg(test)]
#[path = "grpc_token_tests.rs"]
mod token_tests;
