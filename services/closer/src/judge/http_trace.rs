//! The judge's outgoing HTTP call as a CLIENT span and an `http.client.request.duration`
//! measurement (s), per the HTTP semantic conventions: `http.request.method`, `server.address`,
//! `server.port`, `http.response.status_code`, and `error.type` when it failed (the status code,
//! or `transport` when no response came). The span's own W3C context goes out in
//! `traceparent`. Never the URL path or query, a header or a body.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use baton_kit::telemetry::component::PerComponent;
use baton_kit::telemetry::status::{self, Side};
use baton_kit::telemetry::{Component, buckets, propagation};

/// One outgoing call in progress.
pub struct ClientCall {
    span: tracing::Span,
    method: &'static str,
    host: String,
    started: Instant,
}

impl ClientCall {
    pub fn start(method: &'static str, url: &str) -> ClientCall {
        let parsed = reqwest::Url::parse(url).ok();
        let host = parsed
            .as_ref()
            .and_then(|url| url.host_str().map(str::to_string))
            .unwrap_or_default();
        let port = parsed
            .as_ref()
            .and_then(reqwest::Url::port_or_known_default);
        let span = tracing::info_span!(
            "http.client",
            otel.name = method,
            otel.kind = "client",
            http.request.method = method,
            server.address = %host,
            server.port = port,
            http.response.status_code = tracing::field::Empty,
            error.r#type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        ClientCall {
            span,
            method,
            host,
            started: Instant::now(),
        }
    }

    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Headers carrying this call's own trace context.
    pub fn trace_headers(&self) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        propagation::inject_span_into_headers(&self.span.context(), &mut headers);
        headers
    }

    /// Records the outcome: the response status, or `None` when no response came.
    pub fn finish(self, status: Option<u16>) {
        let error = match status {
            Some(code) if status::http_is_error(Side::Client, code) => Some(code.to_string()),
            Some(_) => None,
            None => Some("transport".to_string()),
        };
        if let Some(code) = status {
            self.span.record("http.response.status_code", code);
        }
        if let Some(kind) = &error {
            self.span.record("error.type", kind.as_str());
            self.span.record("otel.status_code", "ERROR");
        }
        static DURATION: PerComponent<Histogram<f64>> = PerComponent::new();
        let histogram = DURATION.get_or_init(Component::Closer, |meter| {
            meter
                .f64_histogram("http.client.request.duration")
                .with_unit("s")
                .with_description("Outgoing HTTP calls (the judge), by status")
                .with_boundaries(buckets::HTTP_CLIENT_SECONDS.to_vec())
                .build()
        });
        let mut attributes = vec![
            KeyValue::new("http.request.method", self.method),
            KeyValue::new("server.address", self.host),
        ];
        if let Some(code) = status {
            attributes.push(KeyValue::new("http.response.status_code", i64::from(code)));
        }
        if let Some(kind) = error {
            attributes.push(KeyValue::new("error.type", kind));
        }
        histogram.record(self.started.elapsed().as_secs_f64(), &attributes);
    }
}
