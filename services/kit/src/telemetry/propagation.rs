//! W3C trace context in and out: HTTP headers, gRPC metadata and message headers.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::component::Component;

/// Reads W3C trace context from HTTP headers (gRPC metadata are HTTP/2 headers too).
pub fn extract_context(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// Makes `span` — the root span of `component`'s handling of a request — a child of the trace
/// context the headers carry, if any, and marks it (and so its descendants) as `component`'s.
pub fn set_parent_from_headers(
    span: &tracing::Span,
    headers: &http::HeaderMap,
    component: Component,
) {
    set_component_parent(span, extract_context(headers), component);
}

/// The public edge's version of [`set_parent_from_headers`]: a caller's `traceparent` is
/// obeyed only from a trusted peer (the reverse proxy in front of the gateway, which owns the
/// sampling decision for the traffic it forwards). Anyone else could set the sampled flag and
/// force their requests to be traced under a ratio sampler (cost, and a way to fill the trace
/// store), so an untrusted caller's context becomes a span link: the trace is a new root that
/// our sampler decides, and the caller's trace is still one click away. Internal hops (gRPC,
/// AMQP) keep plain propagation: their peers are Baton.
pub fn set_edge_parent(
    span: &tracing::Span,
    headers: &http::HeaderMap,
    component: Component,
    peer_trusted: bool,
) {
    if peer_trusted {
        set_parent_from_headers(span, headers, component);
        return;
    }
    set_component_parent(span, Context::new(), component);
    let caller = extract_context(headers);
    let caller_span = caller.span().span_context().clone();
    if caller_span.is_valid() {
        span.add_link(caller_span);
    }
}

/// Parents `span` on `parent` marked as `component`'s (see [`super::component`]).
pub fn set_component_parent(span: &tracing::Span, parent: Context, component: Component) {
    let _ = span.set_parent(component.context(parent));
}

/// Writes the current span's W3C trace context into outgoing HTTP headers.
pub fn inject_current_into_headers(headers: &mut http::HeaderMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// Writes `context`'s W3C trace context into outgoing HTTP headers (replacing any there); an
/// invalid (untraced) context leaves the headers as they are.
pub fn inject_span_into_headers(context: &Context, headers: &mut http::HeaderMap) {
    TraceContextPropagator::new().inject_context(context, &mut HeaderInjector(headers));
}

/// Writes the current span's W3C trace context into outgoing gRPC metadata.
pub fn inject_current_into_metadata(metadata: &mut tonic::metadata::MetadataMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut MetadataInjector(metadata));
}

/// Writes the current span's W3C trace context into a plain string map (message headers).
pub fn inject_current_into_map(map: &mut std::collections::HashMap<String, String>) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, map);
}

/// Reads W3C trace context from a plain string map (message headers).
pub fn extract_from_map(map: &std::collections::HashMap<String, String>) -> Context {
    TraceContextPropagator::new().extract(map)
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct MetadataInjector<'a>(&'a mut tonic::metadata::MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            value.parse(),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_the_parent_from_a_traceparent_header() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
        );
        let context = extract_context(&headers);
        let span_context = context.span().span_context().clone();
        assert_eq!(
            span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(span_context.span_id().to_string(), "00f067aa0ba902b7");
    }
}
