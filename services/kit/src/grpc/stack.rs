//! The tower stack every inbound gRPC call passes through before its handler.
//!
//! [`CallStack`] builds it once for both ways in: the network server ([`crate::grpc::serve`]
//! lays it under every connection) and the in-process transport ([`crate::grpc::local`]) calls
//! it directly. One builder, so the two cannot drift: a co-located caller is timed out, shed,
//! traced, token-checked and counted against the limit exactly as a remote one.

use std::convert::Infallible;
use std::time::Duration;

use tonic::body::Body;
use tonic::service::RecoverErrorLayer;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

use super::call_service::CallService;
use super::deadline::DeadlineLayer;
use super::settings::ServerSettings;
use super::token::ServiceTokenLayer;
use super::trace::TraceLayer;

/// Wraps a server's routes in its call stack. Clones share one concurrency limit, so the
/// network connections and the in-process callers of one server draw from the same permits.
#[derive(Clone)]
pub struct CallStack {
    component: crate::telemetry::Component,
    tokens: ServiceTokenLayer,
    request_timeout: Duration,
    in_flight: GlobalConcurrencyLimitLayer,
}

impl CallStack {
    pub fn new(settings: &ServerSettings) -> CallStack {
        CallStack {
            component: settings.component,
            tokens: ServiceTokenLayer::new(settings.service_token.clone()),
            request_timeout: settings.request_timeout,
            in_flight: GlobalConcurrencyLimitLayer::new(settings.max_concurrent_requests),
        }
    }
}

impl<S> Layer<S> for CallStack
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    type Service = CallService;

    fn layer(&self, routes: S) -> CallService {
        let stack = ServiceBuilder::new()
            // A refusal below becomes a gRPC status (shed: RESOURCE_EXHAUSTED, past its
            // deadline: CANCELLED), the answer tonic's server gives, not a broken call.
            .layer(RecoverErrorLayer::new())
            // Refuse work when the limit below is saturated instead of queueing without bound.
            .layer(LoadShedLayer::new())
            // Cancel a call that outlives its budget rather than hold a connection forever.
            .layer(DeadlineLayer::new(self.request_timeout))
            // Span first so that refusals and auth failures are traced too.
            .layer(TraceLayer {
                component: self.component,
            })
            // Then the service token: nothing unauthenticated reaches a handler.
            .layer(self.tokens.clone())
            // Bound the calls in flight across every connection and in-process caller.
            .layer(self.in_flight.clone())
            .service(routes)
            .map_response(|response| response.map(Body::new));
        BoxCloneSyncService::new(stack)
    }
}
