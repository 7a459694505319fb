//! Logs, traces and metrics.
//!
//! Logs are JSON lines on stdout with lowercase messages and structured fields ([`logs`]);
//! inside a traced span each line carries `trace_id`, `span_id` and `service.name`. Traces and
//! metrics go out over OTLP only when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`) is set; the SDK
//! reads the rest of the standard `OTEL_*` variables itself — `OTEL_BSP_SCHEDULE_DELAY`,
//! `OTEL_METRIC_EXPORT_INTERVAL`, and the sampler: `OTEL_TRACES_SAMPLER` /
//! `OTEL_TRACES_SAMPLER_ARG` (opentelemetry_sdk 0.33 reads both; unset, it is
//! `parentbased_always_on`, so a sampled caller is always followed and ours is never overruled).
//! An `https://` endpoint is OTLP over TLS ([`otlp_tls`]: `OTEL_EXPORTER_OTLP_CERTIFICATE`, the
//! client certificate and key). W3C trace context travels in HTTP headers, gRPC metadata and AMQP headers ([`propagation`]).
//!
//! # One `service.name` per component
//!
//! Each component (`baton-gateway`, `baton-registry`, `baton-provenance`, `baton-triage`,
//! `baton-closer`) has its own `SdkTracerProvider` and `SdkMeterProvider` with its own resource
//! (`service.name`, `service.version` = the binary's version, `service.namespace` = `baton`), so
//! `baton serve all` reports five services, exactly as five processes would. OpenTelemetry's
//! global provider is one per process, so it is not used:
//!
//! - Spans: `tracing` has one subscriber per process, so the bridge writes through a routing
//!   tracer that picks the provider from the [`Component`] value of the new span's parent
//!   context. Each entry point marks its root span's parent with its component
//!   ([`propagation::set_parent_from_headers`], [`propagation::set_component_parent`]); every
//!   span under it inherits the mark. A span outside every component (startup) goes to a
//!   process-level provider named `baton`.
//! - Metrics: every instrument comes from its component's meter ([`component::meter`]), named
//!   explicitly at the call site — except `db.client.operation.duration`, recorded where the
//!   query runs and attributed by the context, which every entry point (gRPC call, HTTP request,
//!   consumed message, relay, each component's serve task) attaches even when nothing is traced.
//!
//! An `OTEL_SERVICE_NAME` in the environment is ignored: a component's name is not
//! configuration ([`resource`] says why, and what else every resource carries:
//! `service.instance.id`, `deployment.environment.name`).
//!
//! # What is exported
//!
//! Only Baton's own spans and log records (targets of the workspace's crates,
//! [`log_export::is_baton_target`]): a library's internal spans (lapin's `io_loop`, open for
//! the connection's whole life) are noise in every trace view. No source location either
//! (`code.file.path` would be the build machine's paths). Logs go over OTLP too when an
//! endpoint is set ([`log_export`]), the same records as the JSON lines on stdout.
//!
//! # Spans
//!
//! SERVER spans for every HTTP request (gateway) and gRPC call (services); CLIENT spans for
//! every outgoing gRPC call (`rpc.system`, `rpc.service`, `rpc.method`, `server.address`) and
//! the judge's HTTP call (`http.request.method`, `server.address`, `http.response.status_code`),
//! each injecting its own W3C context; PRODUCER/CONSUMER spans on the bus; database CLIENT spans
//! from sqlx's query events ([`db_spans`]: `db.system.name`, `db.operation.name`,
//! `db.collection.name`, never statement text). Status `ERROR` follows [`status`]. Health and
//! readiness probes (`/healthz`, `/readyz`, `grpc.health.v1.Health/*`) make no span, no access
//! log line and no request metric: they would be most of the traffic and none of the insight.
//!
//! sqlx's own `sqlx::query` events (full SQL text, also at warn for slow statements) never reach
//! a span and reach the logs only when `BATON_LOG_SQL=1`: statement text carries no bound
//! values, but it is noise and shape nobody asked for.
//!
//! # Access log
//!
//! The gateway logs one `access` line per request (info): `http.route`
//! (the template, never the raw path), `http.request.method`, `http.response.status_code`,
//! `latency_ms`, `client.address`. Never the key, a query value or a body. The services log one
//! `rpc` line per call at debug: the gateway's line already covers the
//! hook-facing traffic, and per-call lines at info would double the volume for no new fact.
//!
//! # Metrics (the list `deploy/observability/metrics.txt` repeats, one name a line)
//!
//! | name | kind | unit | attributes | emitted by |
//! |------|------|------|------------|------------|
//! | `http.server.request.duration` | histogram | s | `http.request.method`, `http.route`, `http.response.status_code` | gateway |
//! | `rpc.server.duration` | histogram | ms | `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code` | registry, provenance, triage, closer |
//! | `rpc.client.duration` | histogram | ms | `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`, `server.address` | gateway, provenance, triage, closer |
//! | `db.client.operation.duration` | histogram | s | `db.system.name`, `db.operation.name`, `db.collection.name` | every component with a database |
//! | `http.client.request.duration` | histogram | s | `http.request.method`, `server.address`, `http.response.status_code`, `error.type` | closer (openai judge) |
//! | `baton.triage.begins` | counter | `{begin}` | `baton.triage.armed`, `baton.triage.reason` | triage |
//! | `baton.closer.passes` | counter | `{pass}` | `result` | closer |
//! | `baton.closer.sweep.closed` | histogram | `{session}` | — | closer |
//! | `baton.closer.judge.tokens` | counter | `{token}` | `kind` (`total`), `baton.judge` | closer |
//! | `baton.closer.lag` | histogram | s | `result` | closer (passes run from the close message) |
//! | `baton.outbox.depth` | gauge | `{message}` | `outbox` | registry (its relay) |
//! | `baton.bus.published` | counter | `{message}` | `outbox`, `messaging.destination.name` (the routing key) | registry (its relay) |
//! | `baton.bus.redeliveries` | counter | `{message}` | `messaging.destination.name` | closer (its consumer) |
//! | `baton.bus.queue.depth` | gauge | `{message}` | `messaging.destination.name` | closer (its consumer) |
//! | `baton.bus.dead_letter.depth` | gauge | `{message}` | `messaging.destination.name` | closer (its consumer) |
//!
//! Units: the HTTP histograms in seconds (the stable HTTP conventions); the RPC histograms in
//! milliseconds, the unit of the conventions that name `rpc.server.duration` /
//! `rpc.client.duration`. Boundaries are in [`buckets`]. Hook latency as the hook's users feel
//! it is `http.server.request.duration` on the `/api/v1/agent-sessions/*` routes; the hook
//! itself exports nothing (it runs on laptops, not next to a collector).
//!
//! Nothing secret or private is ever recorded: no memory content, excerpt, prompt or key.

pub mod buckets;
pub mod component;
pub mod db_spans;
pub mod detached;
pub mod log_export;
pub mod logs;
pub mod otlp_tls;
pub mod propagation;
pub mod resource;
mod routing;
pub mod status;

pub use resource::resource;

pub use component::Component;
pub use propagation::{
    extract_context, extract_from_map, inject_current_into_headers, inject_current_into_map,
    inject_current_into_metadata, set_component_parent, set_parent_from_headers,
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithTonicConfig;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{FilterFn, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Default log filter: our own crates at info, chatty dependencies at warn.
const DEFAULT_FILTER: &str = "info,sqlx=warn,h2=warn,hyper=warn,tower=warn,tonic=warn,lapin=warn";

/// The `service.name` of spans that belong to no component (startup, migrations).
pub const PROCESS_SERVICE_NAME: &str = "baton";

/// Keeps the exporters alive; call [`Telemetry::shutdown`] before exit to flush them.
#[derive(Default)]
pub struct Telemetry {
    tracer_providers: Vec<SdkTracerProvider>,
    meter_providers: Vec<SdkMeterProvider>,
    logger_providers: Vec<SdkLoggerProvider>,
}

impl Telemetry {
    /// Flushes and stops the exporters.
    pub fn shutdown(self) {
        for provider in self.tracer_providers {
            let _ = provider.shutdown();
        }
        for provider in self.meter_providers {
            let _ = provider.shutdown();
        }
        for provider in self.logger_providers {
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

/// The exporter's TLS from the standard variables ([`otlp_tls`]).
fn exporter_tls(signal: &str) -> Result<Option<tonic::transport::ClientTlsConfig>, TelemetryError> {
    otlp_tls::client_tls(&crate::config::Env::from_process(), signal)
        .map_err(|error| TelemetryError(format!("{}: {}", error.key, error.message)))
}

fn tracer_provider(service_name: &'static str) -> Result<SdkTracerProvider, TelemetryError> {
    let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
    if let Some(tls) = exporter_tls("TRACES")? {
        builder = builder.with_tls_config(tls);
    }
    let exporter = builder
        .build()
        .map_err(|error| TelemetryError(error.to_string()))?;
    // No `with_sampler`: the SDK's default reads OTEL_TRACES_SAMPLER(_ARG).
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(service_name))
        .build())
}

fn logger_provider(service_name: &'static str) -> Result<SdkLoggerProvider, TelemetryError> {
    let mut builder = opentelemetry_otlp::LogExporter::builder().with_tonic();
    if let Some(tls) = exporter_tls("LOGS")? {
        builder = builder.with_tls_config(tls);
    }
    let exporter = builder
        .build()
        .map_err(|error| TelemetryError(error.to_string()))?;
    Ok(SdkLoggerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(service_name))
        .build())
}

fn meter_provider(component: Component) -> Result<SdkMeterProvider, TelemetryError> {
    let mut builder = opentelemetry_otlp::MetricExporter::builder().with_tonic();
    if let Some(tls) = exporter_tls("METRICS")? {
        builder = builder.with_tls_config(tls);
    }
    let exporter = builder
        .build()
        .map_err(|error| TelemetryError(error.to_string()))?;
    Ok(SdkMeterProvider::builder()
        .with_periodic_exporter(exporter)
        .with_resource(resource(component.service_name()))
        .build())
}

/// Installs the process-wide subscriber: JSON logs filtered by `BATON_LOG` (or `RUST_LOG`), plus,
/// when OTLP is configured, one tracer, meter and logger provider per component this process
/// runs. A second call is a no-op.
pub fn init(components: &[Component]) -> Result<Telemetry, TelemetryError> {
    let mut telemetry = Telemetry::default();
    let metrics = otlp_wanted("METRICS");
    if metrics {
        let mut providers = Vec::new();
        for component in components {
            let provider = meter_provider(*component)?;
            telemetry.meter_providers.push(provider.clone());
            providers.push((*component, provider));
        }
        component::install_meter_providers(providers);
    }
    let tracer = if otlp_wanted("TRACES") {
        let mut tracers = Vec::new();
        for component in components {
            let provider = tracer_provider(component.service_name())?;
            tracers.push((*component, provider.tracer("baton")));
            telemetry.tracer_providers.push(provider);
        }
        // A process running one component has nothing else: its startup spans are its own.
        let fallback = match components {
            [_] => tracers[0].1.clone(),
            _ => {
                let provider = tracer_provider(PROCESS_SERVICE_NAME)?;
                let tracer = provider.tracer("baton");
                telemetry.tracer_providers.push(provider);
                tracer
            }
        };
        Some(routing::RoutingTracer::new(tracers, fallback))
    } else {
        None
    };
    let loggers = if otlp_wanted("LOGS") {
        let mut providers = Vec::new();
        for component in components {
            let provider = logger_provider(component.service_name())?;
            telemetry.logger_providers.push(provider.clone());
            providers.push((*component, provider));
        }
        let fallback = match components {
            [_] => providers[0].1.clone(),
            _ => {
                let provider = logger_provider(PROCESS_SERVICE_NAME)?;
                telemetry.logger_providers.push(provider.clone());
                provider
            }
        };
        Some(log_export::RoutingLoggerProvider::new(providers, fallback))
    } else {
        None
    };
    let otlp_logs = loggers.map(|provider| {
        opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(&provider)
            .with_filter(log_events_filter(log_filter(), sql_logged()))
            .with_filter(FilterFn::new(|metadata| {
                log_export::is_baton_target(metadata.target())
            }))
    });
    // The database layer runs even without a tracer: it records the database metric. The
    // layers go in a list rather than as `Option`s: an absent `Option` layer declares interest
    // in every span, which keeps all of Baton's spans alive (registry bookkeeping per span)
    // even with no exporter to take them.
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![trace_layers(tracer)];
    if let Some(otlp_logs) = otlp_logs {
        layers.push(otlp_logs.boxed());
    }
    layers.push(json_log_layer());
    let _ = Registry::default().with(layers).try_init();
    Ok(telemetry)
}

/// The span layers: the bridge when tracing (Baton's spans at info and above, never sqlx's
/// statement events, so statement text never becomes a span event; no source locations) and
/// the database spans and metrics made from those events. Spans must exist for the exporter
/// whatever the log level, so the log filter is not theirs.
fn trace_layers<S>(tracer: Option<routing::RoutingTracer>) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber
        + for<'span> tracing_subscriber::registry::LookupSpan<'span>
        + Send
        + Sync,
{
    let bridge = tracer.clone().map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            // `code.file.path` / `code.line.number` / `code.module.name` would publish the
            // build machine's source paths and say nothing the span name does not.
            .with_location(false)
            .with_filter(LevelFilter::INFO)
            .with_filter(FilterFn::new(|metadata| {
                log_export::is_baton_target(metadata.target())
            }))
    });
    let db = db_spans::DbSpans::new(tracer).with_filter(FilterFn::new(|metadata| {
        metadata.target() == db_spans::SQLX_QUERY_TARGET
            && *metadata.level() <= tracing::Level::DEBUG
    }));
    match bridge {
        Some(bridge) => Layer::and_then(bridge, db).boxed(),
        // Not an absent `Option` layer: that would claim every span (see `init`).
        None => db.boxed(),
    }
}

/// Whether `BATON_LOG_SQL` asks for sqlx's statement lines in the logs.
fn sql_logged() -> bool {
    std::env::var("BATON_LOG_SQL").is_ok_and(|value| matches!(value.trim(), "1" | "true"))
}

/// The log filter: `BATON_LOG`, else `RUST_LOG`, else [`DEFAULT_FILTER`].
pub fn log_filter() -> EnvFilter {
    let filter = std::env::var("BATON_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| DEFAULT_FILTER.to_string());
    EnvFilter::new(filter)
}

/// The log layer: JSON lines on stdout ([`logs::JsonLines`]), filtered by [`log_filter`], and
/// without sqlx's statement events unless `BATON_LOG_SQL=1`.
pub fn json_log_layer<S>() -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    log_layer_to(std::io::stdout, log_filter(), sql_logged())
}

fn log_layer_to<S, W>(writer: W, filter: EnvFilter, sql: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    // Events only: a log line carries its event's fields and the OpenTelemetry ids, never a
    // span's fields, so this layer has no use for spans. Taking none of them leaves Baton's
    // spans with no subscriber interest at all when no exporter is configured: creating,
    // entering and closing one is then a callsite check, not registry bookkeeping and field
    // formatting on every request (issue 25's profile: about a tenth of the process's CPU at
    // 2,400 heartbeats/s). `BATON_LOG` therefore filters events; span-scoped directives
    // (`[span]=debug`) match nothing.
    use tracing_subscriber::filter::FilterExt as _;
    let events_only = FilterFn::new(|metadata: &tracing::Metadata<'_>| metadata.is_event());
    tracing_subscriber::fmt::layer()
        .event_format(logs::JsonLines { statements: sql })
        .with_writer(writer)
        .with_filter(events_only.and(log_events_filter(filter, sql)))
        .boxed()
}

/// Which events are log lines (stdout and OTLP alike): `filter`, and sqlx's statement events
/// only when `sql`. (The JSON formatter enforces the statement rule once more: see
/// [`logs::JsonLines`].)
fn log_events_filter<S>(filter: EnvFilter, sql: bool) -> impl tracing_subscriber::layer::Filter<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::filter::FilterExt as _;
    filter.and(FilterFn::new(move |metadata| {
        sql || metadata.target() != db_spans::SQLX_QUERY_TARGET
    }))
}

#[cfg(test)]
#[path = "telemetry_tests.rs"]
mod tests;
