//! The per-request limits, as tower layers composed the way the gRPC side composes its own:
//! load shedding past the in-flight bound, a whole-request timeout, and the body limits handed
//! to the strict JSON extractor (`crate::strict`) as a request extension.
//!
//! A request past the bound is refused at once rather than queued: a queue in front of a
//! saturated gateway only turns overload into timeouts. Both refusals are `503
//! service_unavailable` with the usual error body, so a caller backs off the same way for each.

use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use tokio::sync::Semaphore;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::error::Overloaded;
use tower::timeout::error::Elapsed;
use tower::{BoxError, ServiceBuilder};

use baton_kit::error::ErrorCode;

use crate::body::BodyLimit;
use crate::response::HttpError;

/// The limits every request of the router meets.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most bytes of a request body (413 beyond, in the strict extractor).
    pub body_limit: usize,
    /// Most time for a whole request body to arrive (408 beyond, in the strict extractor).
    pub body_timeout: Duration,
    /// Most time for a whole request (503 beyond).
    pub request_timeout: Duration,
    /// Requests in flight at once (503 beyond).
    pub max_in_flight: usize,
}

impl Limits {
    /// `router` with the limits around every route. The concurrency limit is global (one
    /// semaphore for the router, not one per route, which `Router::layer` would otherwise
    /// build), and sits under the shed so that a request finding no permit is refused, not
    /// parked.
    pub fn apply<S: Clone + Send + Sync + 'static>(self, router: Router<S>) -> Router<S> {
        let in_flight = Arc::new(Semaphore::new(self.max_in_flight));
        router.layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(refusal))
                .load_shed()
                .layer(GlobalConcurrencyLimitLayer::with_semaphore(in_flight))
                .timeout(self.request_timeout)
                .layer(Extension(BodyLimit {
                    bytes: self.body_limit,
                    timeout: self.body_timeout,
                })),
        )
    }
}

/// The answer to a request a limit refused.
async fn refusal(error: BoxError) -> Response {
    refusal_of(&error).into_response()
}

fn refusal_of(error: &BoxError) -> HttpError {
    if error.is::<Overloaded>() {
        HttpError::new(ErrorCode::ServiceUnavailable, "too many requests in flight")
    } else if error.is::<Elapsed>() {
        HttpError::new(ErrorCode::ServiceUnavailable, "request timed out")
    } else {
        // The layers above raise only those two; anything else is a defect, not the caller's.
        tracing::error!(error = %error, "a request limit layer failed");
        HttpError::new(ErrorCode::Internal, "request limits failed")
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::*;

    fn limits(max_in_flight: usize, request_timeout: Duration) -> Limits {
        Limits {
            body_limit: 16,
            body_timeout: Duration::from_secs(1),
            request_timeout,
            max_in_flight,
        }
    }

    async fn status_of(router: &Router, path: &str) -> StatusCode {
        let request = Request::get(path).body(Body::empty()).expect("request");
        router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible")
            .status()
    }

    #[tokio::test]
    async fn a_request_past_the_timeout_is_refused_with_503() {
        let router = limits(8, Duration::from_millis(20))
            .apply(Router::new().route("/slow", get(std::future::pending::<&'static str>)));
        assert_eq!(
            status_of(&router, "/slow").await,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[tokio::test]
    async fn the_in_flight_bound_is_shared_by_every_route_and_refuses_rather_than_queues() {
        let (entered, mut entered_rx) = tokio::sync::mpsc::channel::<()>(1);
        let held = move || {
            let entered = entered.clone();
            async move {
                let _ = entered.send(()).await;
                std::future::pending::<&'static str>().await
            }
        };
        let router = limits(1, Duration::from_secs(60)).apply(
            Router::new()
                .route("/held", get(held))
                .route("/other", get(|| async { "ok" })),
        );
        let holder = tokio::spawn({
            let router = router.clone();
            async move { status_of(&router, "/held").await }
        });
        entered_rx
            .recv()
            .await
            .expect("the first request is in its handler");
        // Another route, while the one permit is held: refused at once.
        assert_eq!(
            status_of(&router, "/other").await,
            StatusCode::SERVICE_UNAVAILABLE
        );
        holder.abort();
    }

    #[tokio::test]
    async fn the_body_limit_reaches_the_handler_as_an_extension() {
        let router = limits(8, Duration::from_secs(60)).apply(Router::new().route(
            "/limit",
            get(|Extension(limit): Extension<BodyLimit>| async move { limit.bytes.to_string() }),
        ));
        let request = Request::get("/limit").body(Body::empty()).expect("request");
        let response = router.oneshot(request).await.expect("infallible");
        let body = axum::body::to_bytes(response.into_body(), 64)
            .await
            .expect("body");
        assert_eq!(&body[..], b"16");
    }
}
