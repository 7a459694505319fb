//! The log filter against sqlx's statement events: statement text stays out of logs and spans
//! unless asked for, and each statement still becomes a database span.

use super::*;
use opentelemetry_sdk::trace::InMemorySpanExporter;

#[derive(Clone, Default)]
struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What sqlx does for every statement: ask whether its level is enabled for
/// `sqlx::query`, then emit at that level with the statement text.
fn emit_like_sqlx(level: tracing::Level) {
    let enabled = match level {
        tracing::Level::DEBUG => {
            tracing::enabled!(target: "sqlx::query", tracing::Level::DEBUG)
        }
        _ => tracing::enabled!(target: "sqlx::query", tracing::Level::INFO),
    };
    if enabled && level == tracing::Level::DEBUG {
        tracing::event!(
            target: "sqlx::query",
            tracing::Level::DEBUG,
            summary = "SELECT secret_column FROM t",
            db.statement = "SELECT secret_column FROM t WHERE id = $1",
            elapsed_secs = 0.001_f64,
        );
    }
    tracing::event!(target: "sqlx::pool::acquire", tracing::Level::DEBUG, "acquired");
}

#[test]
fn debug_statement_lines_stay_out_under_the_default_filter() {
    // The subscriber `init` builds, database layer included (it asks for sqlx's DEBUG
    // statement events, so they are emitted at all), writing the logs to a buffer.
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = Registry::default()
        .with(trace_layers(None))
        .with(log_layer_to(
            move || writer.clone(),
            EnvFilter::new(DEFAULT_FILTER),
            false,
        ));
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..6 {
            emit_like_sqlx(tracing::Level::DEBUG);
        }
        tracing::info!("ordinary line");
    });
    let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("utf8");
    assert_eq!(text.lines().count(), 1, "only the ordinary line: {text}");
    assert!(!text.contains("secret_column"), "{text}");
}

#[test]
fn statement_lines_reach_the_logs_only_when_asked_for() {
    for (sql, expected_lines) in [(false, 1), (true, 2)] {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let layer = log_layer_to(move || writer.clone(), EnvFilter::new("info"), sql);
        let subscriber = Registry::default().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let summary = "SELECT secret_column FROM t";
            tracing::event!(
                target: "sqlx::query",
                tracing::Level::WARN,
                summary,
                db.statement = "SELECT secret_column FROM t WHERE id = $1",
                "slow statement: execution time exceeded alert threshold"
            );
            tracing::warn!("an ordinary warning");
        });
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("utf8");
        assert_eq!(
            text.lines().count(),
            expected_lines,
            "BATON_LOG_SQL {sql}: {text}"
        );
        assert_eq!(text.contains("secret_column"), sql);
    }
}

#[test]
fn a_statement_event_becomes_a_database_span_and_its_text_reaches_no_span() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = routing::RoutingTracer::new(Vec::new(), provider.tracer("test"));
    let subscriber = Registry::default().with(trace_layers(Some(tracer)));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("work");
        let _entered = span.enter();
        // What sqlx emits for a slow statement (warn): the text, the summary, the time.
        let summary = "SELECT secret_column FROM registry.session_runs";
        tracing::event!(
            target: "sqlx::query",
            tracing::Level::WARN,
            summary,
            db.statement = "SELECT secret_column FROM registry.session_runs WHERE id = $1",
            elapsed_secs = 0.25_f64,
            "slow statement: execution time exceeded alert threshold"
        );
    });
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().expect("spans");
    let db = spans
        .iter()
        .find(|span| span.name == "SELECT registry.session_runs")
        .expect("a database span named by operation and table");
    let work = spans.iter().find(|span| span.name == "work").expect("work");
    assert_eq!(db.parent_span_id, work.span_context.span_id());
    assert_eq!(db.span_kind, opentelemetry::trace::SpanKind::Client);
    let elapsed = db.end_time.duration_since(db.start_time).expect("ordered");
    assert!(
        elapsed >= std::time::Duration::from_millis(250),
        "{elapsed:?}"
    );
    let text = format!("{spans:?}");
    assert!(
        !text.contains("secret_column"),
        "statement text in a span: {text}"
    );
    assert!(
        !text.contains("db.statement"),
        "statement attribute: {text}"
    );
}
