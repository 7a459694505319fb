//! Cross-cutting HTTP layers: request span (W3C parent from the headers), metrics, access log;
//! and the API-key check every `/api/v1` route passes ([`require_api_key`]).

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use tracing::Instrument;

use baton_kit::error::ErrorCode;
use baton_kit::telemetry::component::PerComponent;
use baton_kit::telemetry::status::{self, Side};
use baton_kit::telemetry::{self, Component, buckets};

use crate::auth::{self, API_KEY_HEADER, Principal, Verification};
use crate::keys::PresentedKey;
use crate::response::HttpError;
use crate::state::AppState;
use crate::tenants::Scope;

/// Probe paths: answered, but never traced, logged or counted (see `baton_kit::telemetry`).
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// Whether a request is an orchestrator's probe.
pub fn is_probe(path: &str) -> bool {
    PROBES.contains(&path)
}

/// One server span per request, parented on the caller's `traceparent` and marked as the
/// gateway's; records the status (`ERROR` on 5xx), the request metric and one access log line.
/// The route template (not the raw path) names the span and labels the metric and the log
/// line, so run ids never become span names or labels; the query string, the key and the body
/// are never read here.
pub async fn trace(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if is_probe(request.uri().path()) {
        return next.run(request).await;
    }
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |path| path.as_str().to_string());
    let client = auth::client_of(&request, &state.trusted_proxies);
    let span = tracing::info_span!(
        "http.server",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        client.address = %client,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    // The caller's sampling decision counts only from a trusted proxy (see set_edge_parent).
    let peer_trusted = auth::peer_is_trusted_proxy(&request, &state.trusted_proxies);
    telemetry::propagation::set_edge_parent(
        &span,
        request.headers(),
        Component::Gateway,
        peer_trusted,
    );
    let started = Instant::now();
    // The component rides in the context even when nothing is traced (log lines, DB metrics).
    let response = telemetry::component::within(
        Component::Gateway,
        next.run(request).instrument(span.clone()),
    )
    .await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    if let Some(value) = status::status_code(status::http_is_error(Side::Server, status)) {
        span.record("otel.status_code", value);
    }
    span.in_scope(|| {
        tracing::info!(
            http.route = %route,
            http.request.method = %method,
            http.response.status_code = status,
            latency_ms = elapsed.as_secs_f64() * 1000.0,
            client.address = %client,
            "access"
        );
    });
    record_metrics(&method, &route, status, elapsed);
    response
}

fn record_metrics(method: &str, route: &str, status: u16, elapsed: Duration) {
    static DURATION: PerComponent<Histogram<f64>> = PerComponent::new();
    let histogram = DURATION.get_or_init(Component::Gateway, |meter| {
        meter
            .f64_histogram("http.server.request.duration")
            .with_unit("s")
            .with_description("HTTP requests by route and status")
            .with_boundaries(buckets::HTTP_SECONDS.to_vec())
            .build()
    });
    let attributes = [
        KeyValue::new("http.request.method", method.to_string()),
        KeyValue::new("http.route", route.to_string()),
        KeyValue::new("http.response.status_code", i64::from(status)),
    ];
    histogram.record(elapsed.as_secs_f64(), &attributes);
}

/// Middleware on every `/api/v1` route: key check, then the verified key's rate limit, then
/// the handler. Every refusal here comes before the body is read, so it closes the connection
/// (`Connection: close`) rather than leave an unread body on a kept-alive connection.
pub async fn require_api_key(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, HttpError> {
    let presented = request
        .headers()
        .get(API_KEY_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty());
    let Some(presented) = presented else {
        return Err(HttpError::new(ErrorCode::Unauthorized, "missing X-API-Key").closing());
    };
    let Some(key) = PresentedKey::parse(presented) else {
        return Err(HttpError::new(ErrorCode::Unauthorized, "malformed X-API-Key").closing());
    };
    let client = auth::client_of(&request, &state.trusted_proxies);
    let verification = state
        .keys
        .verify(&key, client, &state.failure_limiter)
        .await
        .map_err(|error| {
            tracing::warn!(error = %error, "api key store unavailable");
            HttpError::new(ErrorCode::ServiceUnavailable, "key store unavailable").closing()
        })?;
    let (tenant_id, member) = match verification {
        Verification::Verified(tenant_id, Scope::Ingest, member) => (tenant_id, member),
        Verification::Verified(_, Scope::Console, _) => {
            return Err(HttpError::new(
                ErrorCode::AccessDenied,
                "a console key signs in to /console; the API needs an ingest key",
            )
            .closing());
        }
        Verification::Failed => {
            return Err(
                HttpError::new(ErrorCode::Unauthorized, "unknown or revoked key").closing(),
            );
        }
        Verification::Throttled(retry_after) => {
            return Err(
                HttpError::new(ErrorCode::RateLimited, "too many failed verifications")
                    .with_retry_after(retry_after)
                    .closing(),
            );
        }
    };
    if let Err(retry_after) = state.limiter.check(&format!("{client}:{}", key.prefix)) {
        return Err(
            HttpError::new(ErrorCode::RateLimited, "rate limit exceeded")
                .with_retry_after(retry_after)
                .closing(),
        );
    }
    let mut request = request;
    request
        .extensions_mut()
        .insert(Principal { tenant_id, member });
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_health_and_readiness_probes_go_untraced() {
        for (path, probe) in [
            ("/healthz", true),
            ("/readyz", true),
            ("/healthz/", false),
            ("/api/v1/agent-sessions/open", false),
            ("/api/v1/healthz", false),
        ] {
            assert_eq!(is_probe(path), probe, "{path}");
        }
    }
}
