//! Logs, traces and metrics.
//!
//! Logs are JSON lines on stdout with lowercase messages and structured fields. Traces and
//! metrics go out over OTLP only when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`) is set; the exporter
//! reads the rest of the standard `OTEL_*` variables itself. W3C trace context travels in HTTP
//! headers, gRPC metadata and (later) AMQP headers through the helpers here, so one trace follows
//! a hook request across every process.
//!
//! Nothing secret or private is ever recorded: no memory content, excerpt, prompt or key.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Default log filter: our own crates at info, chatty dependencies at warn.
const DEFAULT_FILTER: &str = "info,sqlx=warn,h2=warn,hyper=warn,tower=warn,tonic=warn,lapin=warn";

/// Keeps the exporters alive; call [`Telemetry::shutdown`] before exit to flush them.
#[derive(Default)]
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Flushes and stops the exporters.
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer_provider {
            let _ = provider.shutdown();
        }
        if let Some(provider) = self.meter_provider {
            let _ = provider.shutdown();
        }
    }
}

/// Errors building an exporter from the `OTEL_*` settings.
#[derive(Debug, thiserror::Error)]
#[error("telemetry exporter: {0}")]
pub struct TelemetryError(String);

fn otlp_wanted(signal: &str) -> bool {
    let set = |key: &str| std::env::var(key).is_ok_and(|value| !value.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))
}

/// Installs the process-wide subscriber: JSON logs filtered by `BATON_LOG` (or `RUST_LOG`), plus
/// an OpenTelemetry layer and meter provider when OTLP is configured. A second call is a no-op.
pub fn init(service_name: &str) -> Result<Telemetry, TelemetryError> {
    let resource = Resource::builder()
        .with_service_name(service_name.to_string())
        .with_attribute(KeyValue::new("service.namespace", "baton"))
        .build();
    let tracer_provider = if otlp_wanted("TRACES") {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()
            .map_err(|error| TelemetryError(error.to_string()))?;
        Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.clone())
                .build(),
        )
    } else {
        None
    };
    let meter_provider = if otlp_wanted("METRICS") {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .build()
            .map_err(|error| TelemetryError(error.to_string()))?;
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        Some(provider)
    } else {
        None
    };
    match &tracer_provider {
        // Exporting: spans must exist for the exporter whatever the log level, so the log filter
        // applies to the log layer only.
        Some(provider) => {
            let otel_layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("baton"))
                .with_filter(LevelFilter::INFO);
            let _ = Registry::default()
                .with(otel_layer)
                .with(json_log_layer().with_filter(log_filter()))
                .try_init();
        }
        // Not exporting: one global filter, so disabled spans cost nothing on the hot path.
        None => {
            let _ = Registry::default()
                .with(log_filter())
                .with(json_log_layer())
                .try_init();
        }
    }
    Ok(Telemetry {
        tracer_provider,
        meter_provider,
    })
}

/// The log filter: `BATON_LOG`, else `RUST_LOG`, else [`DEFAULT_FILTER`].
pub fn log_filter() -> EnvFilter {
    let filter = std::env::var("BATON_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| DEFAULT_FILTER.to_string());
    EnvFilter::new(filter)
}

/// JSON lines on stdout, one object per event with its fields at the top level.
pub fn json_log_layer<S>() -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(true)
        .with_writer(std::io::stdout)
        .boxed()
}

/// Reads W3C trace context from HTTP headers (gRPC metadata are HTTP/2 headers too).
pub fn extract_context(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// Makes `span` a child of the trace context the headers carry, if any.
pub fn set_parent_from_headers(span: &tracing::Span, headers: &http::HeaderMap) {
    let parent = extract_context(headers);
    let _ = span.set_parent(parent);
}

/// Writes the current span's W3C trace context into outgoing HTTP headers.
pub fn inject_current_into_headers(headers: &mut http::HeaderMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
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
    use opentelemetry::trace::TraceContextExt;

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
