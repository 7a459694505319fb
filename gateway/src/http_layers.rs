//! Cross-cutting HTTP layers: request span (W3C parent from the headers), metrics, timeout.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use tokio::sync::Semaphore;
use tracing::Instrument;

use baton_kit::error::ErrorCode;
use baton_kit::telemetry;

use crate::response::HttpError;
use crate::strict::BodyLimit;

/// One server span per request, parented on the caller's `traceparent`; records the status and
/// the request metrics. The route template (not the raw path) names the span, so run ids never
/// become span names or metric labels.
pub async fn trace(request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |path| path.as_str().to_string());
    let span = tracing::info_span!(
        "http.server",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    telemetry::set_parent_from_headers(&span, request.headers());
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    record_metrics(&method, &route, status, started.elapsed());
    response
}

fn record_metrics(method: &str, route: &str, status: u16, elapsed: Duration) {
    static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
    let histogram = DURATION.get_or_init(|| {
        opentelemetry::global::meter("baton-gateway")
            .f64_histogram("http.server.request.duration")
            .with_unit("s")
            .with_description("HTTP requests by route and status")
            .build()
    });
    let attributes = [
        KeyValue::new("http.request.method", method.to_string()),
        KeyValue::new("http.route", route.to_string()),
        KeyValue::new("http.response.status_code", i64::from(status)),
    ];
    histogram.record(elapsed.as_secs_f64(), &attributes);
}

/// Settings the per-request layers read.
#[derive(Debug, Clone)]
pub struct Limits {
    pub body_limit: usize,
    /// Most time for a whole request body to arrive.
    pub body_timeout: Duration,
    pub request_timeout: Duration,
    /// Permits for requests in flight; none left means 503 rather than an unbounded queue.
    pub in_flight: Arc<Semaphore>,
}

/// Sheds load past the in-flight bound, bounds each request's time (503
/// `service_unavailable` either way) and hands the body limit to the strict JSON extractor.
pub async fn limits(State(limits): State<Limits>, mut request: Request, next: Next) -> Response {
    let Ok(_permit) = limits.in_flight.clone().try_acquire_owned() else {
        return HttpError::new(ErrorCode::ServiceUnavailable, "too many requests in flight")
            .into_response();
    };
    request.extensions_mut().insert(BodyLimit {
        bytes: limits.body_limit,
        timeout: limits.body_timeout,
    });
    match tokio::time::timeout(limits.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            HttpError::new(ErrorCode::ServiceUnavailable, "request timed out").into_response()
        }
    }
}
