//! JSON log lines: one object per event, fields at the top level, and — inside a traced span —
//! the span's `trace_id` and `span_id` (lowercase hex, as every trace store shows them) plus the
//! owning component's `service.name`, so a log line leads straight to its trace.
//!
//! Keys: `timestamp` (RFC 3339, UTC, microseconds), `level`, `message`, the event's fields,
//! `target`, then `trace_id`, `span_id`, `service.name` when known.

use std::fmt;

use opentelemetry::trace::TraceContextExt;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::component::Component;

/// The event formatter of [`super::json_log_layer`].
///
/// It also refuses sqlx's statement events (target `sqlx::query`) unless `statements` is set
/// (`BATON_LOG_SQL=1`), although the layer's filter already excludes them: the database layer
/// asks for those events at DEBUG, and under the process-wide subscriber some of them reached
/// this layer past its per-layer filter (six DEBUG lines with statement text at start-up,
/// issue 29; a scoped subscriber in a unit test does not show it). The formatter is the last
/// point before stdout, so the rule is enforced here whatever the filter bookkeeping does.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines {
    /// Whether sqlx's statement events may be written.
    pub statements: bool,
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        if !self.statements && metadata.target() == super::db_spans::SQLX_QUERY_TARGET {
            return Ok(());
        }
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        );
        line.insert("level".into(), Value::from(metadata.level().as_str()));
        event.record(&mut Fields(&mut line));
        line.insert("target".into(), Value::from(metadata.target()));
        if let Some((trace_id, span_id)) = current_ids() {
            line.insert("trace_id".into(), Value::from(trace_id));
            line.insert("span_id".into(), Value::from(span_id));
        }
        if let Some(component) = Component::current() {
            line.insert("service.name".into(), Value::from(component.service_name()));
        }
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// The trace and span id of the entered span (the OpenTelemetry context it attached), if it is
/// a valid, traced span.
pub fn current_ids() -> Option<(String, String)> {
    opentelemetry::Context::map_current(|context| {
        let span = context.span();
        let span_context = span.span_context();
        span_context.is_valid().then(|| {
            (
                span_context.trace_id().to_string(),
                span_context.span_id().to_string(),
            )
        })
    })
}

/// Collects an event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().into(), Value::from(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::from(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(emit: impl FnOnce()) -> Vec<Value> {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .event_format(JsonLines::default())
                .with_writer(move || writer.clone()),
        );
        tracing::subscriber::with_default(subscriber, emit);
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("utf8");
        text.lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect()
    }

    #[test]
    fn a_line_inside_a_traced_context_carries_its_ids_and_component() {
        let span = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("trace"),
            SpanId::from_hex("00f067aa0ba902b7").expect("span"),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let context = Component::Registry
            .context(opentelemetry::Context::new().with_remote_span_context(span));
        let lines = lines(|| {
            let _guard = context.attach();
            tracing::info!(service = "registry", count = 3_u64, "listening");
        });
        let line = &lines[0];
        assert_eq!(line["message"], "listening");
        assert_eq!(line["service"], "registry", "event fields stay top-level");
        assert_eq!(line["count"], 3);
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(line["span_id"], "00f067aa0ba902b7");
        assert_eq!(line["service.name"], "baton-registry");
    }

    #[test]
    fn a_line_outside_any_trace_has_no_ids() {
        let lines = lines(|| tracing::warn!(error = "boom", "startup failed"));
        let line = &lines[0];
        assert_eq!(line["message"], "startup failed");
        assert!(line.get("trace_id").is_none());
        assert!(line.get("span_id").is_none());
        assert!(line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
}
