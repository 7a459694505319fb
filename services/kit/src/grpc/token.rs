//! The service-token check every inbound call passes ([`ServiceTokenLayer`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::service_tokens::{Caller, ServiceTokens};

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
#[path = "token_tests.rs"]
mod tests;
