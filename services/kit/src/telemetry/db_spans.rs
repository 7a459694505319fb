//! Database CLIENT spans from sqlx's own query events.
//!
//! sqlx reports every statement it finishes as a `sqlx::query` event carrying the SQL text
//! (`db.statement`, `summary`), the row counts and the elapsed time. The text never leaves this
//! module: [`DbSpans`] turns each event into a span that ends now and started `elapsed` ago,
//! named and attributed by the OpenTelemetry database conventions — `db.system.name`
//! (`postgresql`), `db.operation.name` (the statement's verb) and `db.collection.name` (its
//! table, when one is cheaply read off the text) — and child of the span the query ran in.
//!
//! Rules:
//! - No statement text, no bound value, in any span or attribute. (sqlx never logs bound values;
//!   the text itself is kept off the spans and, by the log filter, off the logs.)
//! - A query outside any traced span (a relay or sweep polling an empty table) makes no span:
//!   it would be a one-span trace every poll. It is still measured in
//!   `db.client.operation.duration` (s; `db.system.name`, `db.operation.name`,
//!   `db.collection.name`) when its context names the component it runs for.

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt, Tracer};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;

use opentelemetry::metrics::Histogram;

use super::buckets;
use super::component::{Component, PerComponent};
use super::routing::RoutingTracer;

/// The target sqlx reports statements under.
pub const SQLX_QUERY_TARGET: &str = "sqlx::query";

/// What a span may say about a statement: its verb and, when plain, its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementShape {
    pub operation: String,
    pub collection: Option<String>,
}

/// Reads the verb and the table off a statement's text. `None` for an empty statement.
pub fn statement_shape(sql: &str) -> Option<StatementShape> {
    let words = top_level_words(sql);
    let first = words.first()?;
    if !first.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let operation = first.to_ascii_uppercase();
    let after = |keyword: &str| {
        words
            .iter()
            .position(|word| word.eq_ignore_ascii_case(keyword))
            .and_then(|at| words.get(at + 1))
    };
    let table = match operation.as_str() {
        "SELECT" | "DELETE" => after("FROM"),
        "INSERT" => after("INTO"),
        "UPDATE" => words.get(1),
        _ => None,
    };
    Some(StatementShape {
        operation,
        collection: table.and_then(|name| identifier(name)),
    })
}

/// The statement's words outside parentheses and string literals, each parenthesised group one
/// `()` word (so `extract(epoch FROM x)` or a subquery's `FROM` is never mistaken for the
/// statement's own).
fn top_level_words(sql: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut depth = 0usize;
    let mut quoted = false;
    for c in sql.chars() {
        if quoted {
            quoted = c != '\'';
            continue;
        }
        match c {
            '\'' => quoted = true,
            '(' => {
                depth += 1;
                if depth == 1 {
                    // A parenthesised group stands as one word: `FROM (SELECT ...)` has no table.
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    words.push("()".to_string());
                }
            }
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 && !c.is_whitespace() && c != ',' && c != ';' => {
                word.push(c);
                continue;
            }
            _ => {}
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A plain (optionally schema-qualified, optionally quoted) table name, or `None`.
fn identifier(text: &str) -> Option<String> {
    let name = text.replace('"', "");
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !name.starts_with('.')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    plain.then(|| name.to_ascii_lowercase())
}

/// The fields of one `sqlx::query` event this module reads.
#[derive(Default)]
struct QueryFields {
    statement: String,
    summary: String,
    elapsed_secs: f64,
    rows_returned: Option<u64>,
}

impl Visit for QueryFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "db.statement" => self.statement = value.to_string(),
            "summary" => self.summary = value.to_string(),
            _ => {}
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.elapsed_secs = value;
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "rows_returned" {
            self.rows_returned = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "summary" {
            self.summary = format!("{value:?}");
        }
    }
}

/// The layer that turns `sqlx::query` events into database spans (when tracing) and
/// `db.client.operation.duration` measurements (when the event's context names a component).
pub(crate) struct DbSpans {
    tracer: Option<RoutingTracer>,
}

impl DbSpans {
    pub(crate) fn new(tracer: Option<RoutingTracer>) -> DbSpans {
        DbSpans { tracer }
    }
}

/// `db.client.operation.duration` (s), per the database conventions.
fn operation_duration(meter: opentelemetry::metrics::Meter) -> Histogram<f64> {
    meter
        .f64_histogram("db.client.operation.duration")
        .with_unit("s")
        .with_description("Database statements, by operation and table")
        .with_boundaries(buckets::DB_SECONDS.to_vec())
        .build()
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for DbSpans {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != SQLX_QUERY_TARGET {
            return;
        }
        let parent = opentelemetry::Context::current();
        let component = parent.get::<Component>().copied();
        let traced = parent.span().span_context().is_valid();
        let tracer = self.tracer.as_ref().filter(|_| traced);
        if tracer.is_none() && component.is_none() {
            return;
        }
        let mut fields = QueryFields::default();
        event.record(&mut fields);
        // sqlx leaves `db.statement` empty when the summary is the whole statement.
        let text = if fields.statement.trim().is_empty() {
            &fields.summary
        } else {
            &fields.statement
        };
        let Some(shape) = statement_shape(text) else {
            return;
        };
        let end = SystemTime::now();
        let elapsed = Duration::try_from_secs_f64(fields.elapsed_secs).unwrap_or_default();
        let name = match &shape.collection {
            Some(table) => format!("{} {table}", shape.operation),
            None => shape.operation.clone(),
        };
        let mut attributes = vec![
            KeyValue::new("db.system.name", "postgresql"),
            KeyValue::new("db.operation.name", shape.operation),
        ];
        if let Some(table) = shape.collection {
            attributes.push(KeyValue::new("db.collection.name", table));
        }
        if let Some(component) = component {
            static DURATION: PerComponent<Histogram<f64>> = PerComponent::new();
            DURATION
                .get_or_init(component, operation_duration)
                .record(elapsed.as_secs_f64(), &attributes);
        }
        let Some(tracer) = tracer else {
            return;
        };
        if let Some(rows) = fields.rows_returned {
            attributes.push(KeyValue::new(
                "db.response.returned_rows",
                i64::try_from(rows).unwrap_or(i64::MAX),
            ));
        }
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_start_time(end.checked_sub(elapsed).unwrap_or(end))
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        span.end_with_timestamp(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verb_and_the_plain_table_are_read_off_the_statement() {
        let shape = |op: &str, table: Option<&str>| {
            Some(StatementShape {
                operation: op.to_string(),
                collection: table.map(str::to_string),
            })
        };
        let table = [
            (
                "SELECT id, state FROM registry.session_runs WHERE tenant_id = $1",
                shape("SELECT", Some("registry.session_runs")),
            ),
            (
                "select extract(epoch from now()) from \"closer\".\"passes\"",
                shape("SELECT", Some("closer.passes")),
            ),
            (
                "INSERT INTO provenance.events (id, kind) VALUES ($1, 'a FROM b')",
                shape("INSERT", Some("provenance.events")),
            ),
            (
                "UPDATE triage.runs SET status = $2 WHERE id = $1",
                shape("UPDATE", Some("triage.runs")),
            ),
            (
                "DELETE FROM registry.outbox WHERE id = ANY($1)",
                shape("DELETE", Some("registry.outbox")),
            ),
            (
                "SELECT pg_try_advisory_xact_lock(hashtextextended('closer.sweep', 0))",
                shape("SELECT", None),
            ),
            (
                "SELECT count(*) FROM (SELECT 1 FROM registry.session_runs) AS runs",
                shape("SELECT", None),
            ),
            (
                "WITH due AS (SELECT 1) SELECT * FROM due",
                shape("WITH", None),
            ),
            ("BEGIN", shape("BEGIN", None)),
            (
                "SET LOCAL idle_in_transaction_session_timeout = 15000",
                shape("SET", None),
            ),
            ("   ", None),
            ("$1", None),
        ];
        for (sql, expected) in table {
            assert_eq!(statement_shape(sql), expected, "{sql}");
        }
    }
}
