//! The usage service's own metrics, for the Usage dashboard and the upload alerts.
//!
//! - `baton.usage.uploads`: every `UploadBatch` call that reaches the handler (past the service
//!   token check, which only Baton's own callers can fail) by outcome — `accepted`, `refused` (a
//!   4xx code: the batch or its caller is at fault, nothing was written) or `failed` (a 5xx
//!   code: the service could not store it) — with the contract's error code as `error.type`.
//! - `baton.usage.batch.rows`: usage rows per accepted batch.
//! - `baton.usage.upload.duration`: an upload's store work (price table, the tenant's upload
//!   lock, the transaction), by outcome; a call abandoned mid-way (timeout, caller gone) is
//!   recorded as failed when its future is dropped, so the slowest uploads are not lost.
//! - `baton.usage.ingest.delay`: there is no rollup lag to measure, because the rollups are
//!   written in the upload's own transaction ([`crate::store::usage`]): a row counts in them the
//!   moment its upload commits. What trails is the upload, so this measures, per accepted
//!   batch that stored rows, the age of the newest row it inserted or replaced (its `at` to
//!   the upload's "now"): how far the usage figures trail the machine's activity.
//!
//! Only these two low-cardinality attributes leave: no tenant, host, session, project or model.

use std::time::Instant;

use chrono::{DateTime, Utc};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use tonic::Status;

use baton_kit::error::ErrorCode;
use baton_kit::telemetry::component::PerComponent;
use baton_kit::telemetry::{Component, buckets};

/// Attribute: `accepted`, `refused` or `failed`.
pub const OUTCOME: &str = "baton.usage.outcome";
/// Attribute (not on accepted uploads): the contract's error code, e.g. `invalid_input`.
pub const ERROR_TYPE: &str = "error.type";

/// How an `UploadBatch` call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadOutcome {
    Accepted,
    /// The caller's fault (a 4xx code): an invalid batch, a fact naming an unstored session.
    Refused(ErrorCode),
    /// The service's fault (a 5xx code): the database, a timeout.
    Failed(ErrorCode),
}

impl UploadOutcome {
    /// The outcome of a call answered with `status`, by the code the gateway will report.
    pub fn of_status(status: &Status) -> UploadOutcome {
        let code = ErrorCode::from_status(status);
        if code.http_status() >= 500 {
            UploadOutcome::Failed(code)
        } else {
            UploadOutcome::Refused(code)
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            UploadOutcome::Accepted => "accepted",
            UploadOutcome::Refused(_) => "refused",
            UploadOutcome::Failed(_) => "failed",
        }
    }

    /// The counter's attributes: the outcome, and the error code unless accepted.
    pub fn attributes(self) -> Vec<KeyValue> {
        let outcome = KeyValue::new(OUTCOME, self.as_str());
        match self {
            UploadOutcome::Accepted => vec![outcome],
            UploadOutcome::Refused(code) | UploadOutcome::Failed(code) => {
                vec![outcome, KeyValue::new(ERROR_TYPE, code.as_str())]
            }
        }
    }
}

/// Seconds from a row's activity to its upload; a host clock ahead of the server's counts as
/// no delay rather than a negative one.
pub fn ingest_delay_seconds(newest_row_at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    (now - newest_row_at).num_milliseconds().max(0) as f64 / 1000.0
}

/// The usage service's instruments.
#[derive(Debug)]
pub struct Instruments {
    uploads: Counter<u64>,
    rows: Histogram<u64>,
    duration: Histogram<f64>,
    ingest_delay: Histogram<f64>,
}

impl Instruments {
    pub fn new(meter: &Meter) -> Instruments {
        Instruments {
            uploads: meter
                .u64_counter("baton.usage.uploads")
                .with_unit("{batch}")
                .with_description("UploadBatch calls by outcome and error code")
                .build(),
            rows: meter
                .u64_histogram("baton.usage.batch.rows")
                .with_unit("{row}")
                .with_description("Usage rows in an accepted batch")
                .with_boundaries(buckets::ROWS.to_vec())
                .build(),
            duration: meter
                .f64_histogram("baton.usage.upload.duration")
                .with_unit("s")
                .with_description(
                    "Store work of an upload: prices, the tenant lock, the transaction",
                )
                .with_boundaries(buckets::UPLOAD_SECONDS.to_vec())
                .build(),
            ingest_delay: meter
                .f64_histogram("baton.usage.ingest.delay")
                .with_unit("s")
                .with_description("Age of the newest usage row an upload stored, at the upload")
                .with_boundaries(buckets::LAG_SECONDS.to_vec())
                .build(),
        }
    }

    /// The usage component's instruments, built once per process.
    pub fn usage() -> &'static Instruments {
        static INSTRUMENTS: PerComponent<Instruments> = PerComponent::new();
        INSTRUMENTS.get_or_init(Component::Usage, |meter| Instruments::new(&meter))
    }
}

/// What an accepted upload stored, as the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accepted {
    /// Usage rows in the batch (stored, replaced or unchanged).
    pub rows: usize,
    /// Seconds the newest inserted or replaced row trails the upload; none if none was.
    pub ingest_delay: Option<f64>,
}

/// Measures one `UploadBatch` call: created when the call starts, settled with its result.
/// Dropped unsettled (the call's future abandoned by a timeout or a gone caller), it records
/// a failed upload with the time spent so far.
#[derive(Debug)]
pub struct UploadMeasure<'a> {
    instruments: &'a Instruments,
    /// When the store work began; `None` while the request is still being checked.
    store_started: Option<Instant>,
    settled: bool,
}

impl<'a> UploadMeasure<'a> {
    pub fn begin(instruments: &'a Instruments) -> UploadMeasure<'a> {
        UploadMeasure {
            instruments,
            store_started: None,
            settled: false,
        }
    }

    /// The request passed its checks; from here on the time is the upload's store work.
    pub fn store_begins(&mut self) {
        self.store_started = Some(Instant::now());
    }

    /// Records the call's outcome (once).
    pub fn settle(mut self, result: Result<&Accepted, &Status>) {
        let outcome = match result {
            Ok(accepted) => {
                self.instruments.rows.record(accepted.rows as u64, &[]);
                if let Some(delay) = accepted.ingest_delay {
                    self.instruments.ingest_delay.record(delay, &[]);
                }
                UploadOutcome::Accepted
            }
            Err(status) => UploadOutcome::of_status(status),
        };
        self.record(outcome);
    }

    fn record(&mut self, outcome: UploadOutcome) {
        self.settled = true;
        self.instruments.uploads.add(1, &outcome.attributes());
        if let Some(started) = self.store_started {
            self.instruments.duration.record(
                started.elapsed().as_secs_f64(),
                &[KeyValue::new(OUTCOME, outcome.as_str())],
            );
        }
    }
}

impl Drop for UploadMeasure<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.record(UploadOutcome::Failed(ErrorCode::ServiceUnavailable));
        }
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
