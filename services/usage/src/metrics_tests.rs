use std::collections::BTreeMap;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use tonic::Code;

use super::*;

/// One exported data point: its attributes, and its value (a sum) or count and sum (a histogram).
#[derive(Debug, Clone, PartialEq)]
struct Point {
    attributes: BTreeMap<String, String>,
    count: u64,
    sum: f64,
}

/// Records through real instruments on an in-memory exporter and returns every data point by
/// metric name, with each metric's unit.
fn exported(record: impl FnOnce(&Instruments)) -> BTreeMap<String, (String, Vec<Point>)> {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_periodic_exporter(exporter.clone())
        .build();
    let instruments = Instruments::new(&provider.meter("baton"));
    record(&instruments);
    provider.force_flush().expect("flush");
    let mut found: BTreeMap<String, (String, Vec<Point>)> = BTreeMap::new();
    for resource in exporter.get_finished_metrics().expect("metrics") {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                let points = points(metric.data());
                let entry = found
                    .entry(metric.name().to_string())
                    .or_insert_with(|| (metric.unit().to_string(), Vec::new()));
                entry.1 = points;
            }
        }
    }
    found
}

fn attributes<'a>(pairs: impl Iterator<Item = &'a KeyValue>) -> BTreeMap<String, String> {
    pairs
        .map(|pair| (pair.key.to_string(), pair.value.to_string()))
        .collect()
}

fn points(data: &AggregatedMetrics) -> Vec<Point> {
    match data {
        AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
            .data_points()
            .map(|point| Point {
                attributes: attributes(point.attributes()),
                count: point.value(),
                sum: point.value() as f64,
            })
            .collect(),
        AggregatedMetrics::U64(MetricData::Histogram(histogram)) => histogram
            .data_points()
            .map(|point| Point {
                attributes: attributes(point.attributes()),
                count: point.count(),
                sum: point.sum() as f64,
            })
            .collect(),
        AggregatedMetrics::F64(MetricData::Histogram(histogram)) => histogram
            .data_points()
            .map(|point| Point {
                attributes: attributes(point.attributes()),
                count: point.count(),
                sum: point.sum(),
            })
            .collect(),
        other => panic!("unexpected metric data {other:?}"),
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

#[test]
fn a_status_is_refused_when_the_caller_is_at_fault_and_failed_when_the_service_is() {
    let table = [
        (
            ErrorCode::InvalidInput.to_status("usage[0].at"),
            UploadOutcome::Refused(ErrorCode::InvalidInput),
        ),
        (
            ErrorCode::NotFound.to_status("session"),
            UploadOutcome::Refused(ErrorCode::NotFound),
        ),
        (
            ErrorCode::Internal.to_status("bug"),
            UploadOutcome::Failed(ErrorCode::Internal),
        ),
        (
            ErrorCode::ServiceUnavailable.to_status("database"),
            UploadOutcome::Failed(ErrorCode::ServiceUnavailable),
        ),
        // Untagged statuses (a timeout layer's, a transport's) by their gRPC code.
        (
            Status::new(Code::Cancelled, "timeout"),
            UploadOutcome::Failed(ErrorCode::ServiceUnavailable),
        ),
        (
            Status::new(Code::InvalidArgument, "decode"),
            UploadOutcome::Refused(ErrorCode::InvalidInput),
        ),
    ];
    for (status, expected) in table {
        assert_eq!(UploadOutcome::of_status(&status), expected, "{status:?}");
    }
}

#[test]
fn ingest_delay_is_the_newest_rows_age_and_never_negative() {
    let now: DateTime<Utc> = "2026-03-01T10:00:00Z".parse().expect("instant");
    let earlier: DateTime<Utc> = "2026-03-01T09:58:30.250Z".parse().expect("instant");
    let later: DateTime<Utc> = "2026-03-01T10:00:05Z".parse().expect("instant");
    assert_eq!(ingest_delay_seconds(earlier, now), 89.75);
    assert_eq!(ingest_delay_seconds(later, now), 0.0);
}

#[test]
fn an_accepted_upload_counts_its_rows_store_time_and_delay_without_an_error_code() {
    let metrics = exported(|instruments| {
        let mut measure = UploadMeasure::begin(instruments);
        measure.store_begins();
        measure.settle(Ok(&Accepted {
            rows: 120,
            ingest_delay: Some(42.0),
        }));
    });
    let accepted = labels(&[(OUTCOME, "accepted")]);
    let (unit, uploads) = &metrics["baton.usage.uploads"];
    assert_eq!(unit, "{batch}");
    assert_eq!(uploads.len(), 1);
    assert_eq!((&uploads[0].attributes, uploads[0].count), (&accepted, 1));
    let (_, rows) = &metrics["baton.usage.batch.rows"];
    assert_eq!((rows[0].count, rows[0].sum), (1, 120.0));
    assert!(rows[0].attributes.is_empty(), "no attribute on rows");
    let (unit, duration) = &metrics["baton.usage.upload.duration"];
    assert_eq!(unit, "s");
    assert_eq!((&duration[0].attributes, duration[0].count), (&accepted, 1));
    let (unit, delay) = &metrics["baton.usage.ingest.delay"];
    assert_eq!(unit, "s");
    assert_eq!((delay[0].count, delay[0].sum), (1, 42.0));
}

#[test]
fn a_refused_batch_carries_its_code_and_a_check_failure_records_no_store_time() {
    let metrics = exported(|instruments| {
        // Refused at the boundary: no store work began.
        let measure = UploadMeasure::begin(instruments);
        measure.settle(Err(&ErrorCode::InvalidInput.to_status("usage[3].at")));
        // Refused inside the transaction (a fact names an unstored session).
        let mut measure = UploadMeasure::begin(instruments);
        measure.store_begins();
        measure.settle(Err(&ErrorCode::NotFound.to_status("session")));
    });
    let mut uploads = metrics["baton.usage.uploads"].1.clone();
    uploads.sort_by(|a, b| a.attributes.cmp(&b.attributes));
    let by_code: Vec<_> = uploads
        .iter()
        .map(|point| (point.attributes.clone(), point.count))
        .collect();
    assert_eq!(
        by_code,
        [
            (
                labels(&[(ERROR_TYPE, "invalid_input"), (OUTCOME, "refused")]),
                1
            ),
            (
                labels(&[(ERROR_TYPE, "not_found"), (OUTCOME, "refused")]),
                1
            ),
        ]
    );
    let duration = &metrics["baton.usage.upload.duration"].1;
    assert_eq!(duration.len(), 1);
    assert_eq!(
        (&duration[0].attributes, duration[0].count),
        (&labels(&[(OUTCOME, "refused")]), 1)
    );
    assert!(!metrics.contains_key("baton.usage.batch.rows"));
    assert!(!metrics.contains_key("baton.usage.ingest.delay"));
}

#[test]
fn an_abandoned_upload_is_recorded_as_failed_with_its_time_so_far() {
    let metrics = exported(|instruments| {
        let mut measure = UploadMeasure::begin(instruments);
        measure.store_begins();
        drop(measure);
    });
    let uploads = &metrics["baton.usage.uploads"].1;
    assert_eq!(
        (&uploads[0].attributes, uploads[0].count),
        (
            &labels(&[(ERROR_TYPE, "service_unavailable"), (OUTCOME, "failed")]),
            1
        )
    );
    let duration = &metrics["baton.usage.upload.duration"].1;
    assert_eq!(duration[0].attributes, labels(&[(OUTCOME, "failed")]));
}
