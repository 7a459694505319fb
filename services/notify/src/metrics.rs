//! Notify's metrics, for the Notify dashboard.
//!
//! - `baton.notify.deliveries`: deliveries settled, by `outcome` (`delivered`, `failed` once
//!   attempts are exhausted).
//! - `baton.notify.attempt.failures`: failed attempts, by `reason` (the attempt log's error
//!   class: `http_status`, `timeout`, `dns`, `connect`, `address_refused`, `invalid_url`,
//!   `request`).
//! - `baton.notify.attempt.duration`: one attempt's time, by `result` (`success`, `failure`).
//! - `baton.notify.backlog`: pending deliveries of every tenant, by `retrying` (`true` once a
//!   delivery has failed at least once): the retry depth.
//!
//! Only these low-cardinality attributes leave: no tenant, URL, webhook or delivery id.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};

use baton_kit::telemetry::component::PerComponent;
use baton_kit::telemetry::{Component, buckets};

/// Notify's instruments.
#[derive(Debug)]
pub struct Instruments {
    deliveries: Counter<u64>,
    failures: Counter<u64>,
    duration: Histogram<f64>,
    backlog: Gauge<i64>,
}

impl Instruments {
    fn new(meter: &Meter) -> Instruments {
        Instruments {
            deliveries: meter
                .u64_counter("baton.notify.deliveries")
                .with_unit("{delivery}")
                .with_description("Webhook deliveries settled, by outcome")
                .build(),
            failures: meter
                .u64_counter("baton.notify.attempt.failures")
                .with_unit("{attempt}")
                .with_description("Failed webhook delivery attempts, by reason")
                .build(),
            duration: meter
                .f64_histogram("baton.notify.attempt.duration")
                .with_unit("s")
                .with_description("Time of one webhook delivery attempt")
                .with_boundaries(buckets::HTTP_CLIENT_SECONDS.to_vec())
                .build(),
            backlog: meter
                .i64_gauge("baton.notify.backlog")
                .with_unit("{delivery}")
                .with_description("Pending webhook deliveries, by whether they are retrying")
                .build(),
        }
    }

    /// The notify component's instruments, built once per process.
    pub fn notify() -> &'static Instruments {
        static INSTRUMENTS: PerComponent<Instruments> = PerComponent::new();
        INSTRUMENTS.get_or_init(Component::Notify, |meter| Instruments::new(&meter))
    }

    pub fn settled(&self, outcome: &'static str) {
        self.deliveries
            .add(1, &[KeyValue::new("baton.notify.outcome", outcome)]);
    }

    pub fn attempt(&self, seconds: f64, failure: Option<&'static str>) {
        let result = if failure.is_some() {
            "failure"
        } else {
            "success"
        };
        self.duration
            .record(seconds, &[KeyValue::new("baton.notify.result", result)]);
        if let Some(reason) = failure {
            self.failures
                .add(1, &[KeyValue::new("baton.notify.reason", reason)]);
        }
    }

    pub fn backlog(&self, pending: i64, retrying: i64) {
        self.backlog.record(
            pending - retrying,
            &[KeyValue::new("baton.notify.retrying", "false")],
        );
        self.backlog
            .record(retrying, &[KeyValue::new("baton.notify.retrying", "true")]);
    }
}
