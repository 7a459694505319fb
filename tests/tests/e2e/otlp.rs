//! Telemetry as an SRE receives it: the real `baton serve all` exporting over OTLP/gRPC to a
//! real receiver (the collector protocol, `baton_tests::otlp_receiver`), driven through the
//! hook-facing API including a failing call, then read back as a collector would see it —
//! service names, span kinds, parents, statuses, database spans, probes, log correlation,
//! histogram buckets and the metric list in `deploy/observability/metrics.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use serde_json::json;

use baton_tests::Baton;
use baton_tests::otlp_receiver::{ReceivedSpan, Receiver, attribute};

use crate::startup;

const COMPONENTS: [&str; 5] = [
    "baton-gateway",
    "baton-registry",
    "baton-provenance",
    "baton-triage",
    "baton-closer",
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn documented_metrics() -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/observability/metrics.txt"
    );
    std::fs::read_to_string(path)
        .expect("metrics.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The OpenTelemetry names `deploy/observability/metrics.yaml` (the dashboards' catalogue)
/// marks `emitted`.
fn catalogued_as_emitted() -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/observability/metrics.yaml"
    );
    let text = std::fs::read_to_string(path).expect("metrics.yaml");
    let mut emitted = BTreeSet::new();
    let mut current = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("- otel: ") {
            current = Some(name.trim().to_string());
        } else if line.starts_with("- ") {
            current = None;
        } else if line == "status: emitted" {
            emitted.extend(current.take());
        }
    }
    emitted
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|span| span.span.name == name).collect()
}

/// A latency histogram as exported: its unit, its bucket boundaries and the mean of what it
/// recorded (over every export: the exports are cumulative, so each sum and count is repeated,
/// which leaves the mean a mean of the recorded values).
struct Exported {
    unit: String,
    bounds: Vec<f64>,
    mean: f64,
}

fn exported_histogram(receiver: &Receiver, name: &str) -> Option<Exported> {
    let mut exported: Option<Exported> = None;
    let (mut sum, mut count) = (0.0, 0u64);
    for received in receiver.metrics() {
        if received.metric.name != name {
            continue;
        }
        let Some(Data::Histogram(histogram)) = &received.metric.data else {
            panic!("{name} is not an explicit-bucket histogram");
        };
        for point in &histogram.data_points {
            exported.get_or_insert_with(|| Exported {
                unit: received.metric.unit.clone(),
                bounds: point.explicit_bounds.clone(),
                mean: 0.0,
            });
            sum += point.sum.unwrap_or_default();
            count += point.count;
        }
    }
    exported.map(|exported| Exported {
        mean: sum / count.max(1) as f64,
        ..exported
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_sees_each_component_its_client_spans_errors_and_fitted_latency_buckets() {
    let (receiver, endpoint) = Receiver::start().await;
    let baton = Baton::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("BATON_CLOSER__ENABLED", "true"),
    ])
    .await;
    let (tenant, client) = baton.tenant_client("otlp").await;

    // Probes first: none of them may leave a trace.
    for _ in 0..5 {
        assert_eq!(baton.anonymous().get("/healthz").await.status, 200);
        baton.anonymous().get("/readyz").await;
    }
    let run = crate::open_session(&client, "otlp-1").await;
    let remembered = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "commitment", "topic": "otlp", "content": "wire the collector", "project": "baton"}),
        )
        .await;
    assert_eq!(remembered.status, 201, "{:?}", remembered.body);
    let begun = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &json!({"agent": "claude-code", "sessionId": "otlp-1"}),
        )
        .await;
    assert_eq!(begun.status, 200, "{:?}", begun.body);
    for _ in 0..5 {
        assert_eq!(
            client
                .get(&format!("/api/v1/agent-sessions/{run}"))
                .await
                .status,
            200
        );
        // Rejected before any backend call: the fast end of the latency range.
        assert_eq!(baton.anonymous().get("/api/v1/briefing").await.status, 401);
    }
    // The failing call: a heartbeat for a session never opened; registry answers NOT_FOUND,
    // the gateway 404.
    let failed = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "never-opened"}),
        )
        .await;
    assert_eq!(failed.status, 404, "{:?}", failed.body);
    let closed = client
        .post(
            "/api/v1/agent-sessions/close",
            &json!({"agent": "claude-code", "sessionId": "otlp-1"}),
        )
        .await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);

    // Wait until the exports carry everything asserted below (batch delay and export interval
    // are short; the deadline only bounds a broken run).
    let wanted_metrics = [
        "http.server.request.duration",
        "rpc.server.duration",
        "rpc.client.duration",
        "baton.triage.begins",
        "baton.closer.passes",
        "baton.closer.lag",
        "baton.outbox.depth",
        "db.client.operation.duration",
        "baton.bus.published",
        "baton.bus.queue.depth",
        "baton.bus.dead_letter.depth",
    ];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let spans = receiver.spans();
        let services: BTreeSet<_> = spans.iter().map(|s| s.service_name.clone()).collect();
        let metric_names: BTreeSet<_> = receiver
            .metrics()
            .into_iter()
            .map(|m| m.metric.name)
            .collect();
        let failed_seen = spans.iter().any(|s| {
            s.span.name == "POST /api/v1/agent-sessions/heartbeat"
                && attribute(&s.span.attributes, "http.response.status_code").as_deref()
                    == Some("404")
        });
        if COMPONENTS.iter().all(|name| services.contains(*name))
            && wanted_metrics
                .iter()
                .all(|name| metric_names.contains(*name))
            && failed_seen
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "exports incomplete: services {services:?}, metrics {metric_names:?}, failed call seen {failed_seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = receiver.spans();

    // Each component reports as itself, with the binary's version.
    for span in &spans {
        assert_eq!(
            attribute(&span.resource, "service.version").as_deref(),
            Some(env!("CARGO_PKG_VERSION")),
            "{}",
            span.span.name
        );
    }
    let open_server = named(&spans, "POST /api/v1/agent-sessions/open");
    assert_eq!(open_server.len(), 1);
    let open_server = open_server[0];
    assert_eq!(open_server.service_name, "baton-gateway");
    assert_eq!(open_server.span.kind, SpanKind::Server as i32);
    let registry_open = named(&spans, "baton.registry.v1.SessionRegistry/Open");
    let registry_server = registry_open
        .iter()
        .find(|s| s.span.kind == SpanKind::Server as i32)
        .expect("registry server span");
    let gateway_client = registry_open
        .iter()
        .find(|s| s.span.kind == SpanKind::Client as i32)
        .expect("gateway's CLIENT span to registry");
    assert_eq!(registry_server.service_name, "baton-registry");
    assert_eq!(gateway_client.service_name, "baton-gateway");
    assert_eq!(
        attribute(&gateway_client.span.attributes, "rpc.system").as_deref(),
        Some("grpc")
    );
    assert_eq!(
        attribute(&gateway_client.span.attributes, "rpc.service").as_deref(),
        Some("baton.registry.v1.SessionRegistry")
    );
    assert_eq!(
        attribute(&gateway_client.span.attributes, "rpc.method").as_deref(),
        Some("Open")
    );
    assert_eq!(
        attribute(&gateway_client.span.attributes, "server.address").as_deref(),
        Some("127.0.0.1")
    );
    // The client span's own context went out: registry's server span is its child, and the
    // client span is the gateway request's child.
    assert_eq!(
        registry_server.span.parent_span_id,
        gateway_client.span.span_id
    );
    assert_eq!(gateway_client.span.parent_span_id, open_server.span.span_id);
    assert_eq!(registry_server.span.trace_id, open_server.span.trace_id);

    // Database spans: conventions, no statement text.
    let db_spans: Vec<_> = spans
        .iter()
        .filter(|s| {
            attribute(&s.span.attributes, "db.system.name").as_deref() == Some("postgresql")
        })
        .collect();
    assert!(
        db_spans.iter().any(|s| s.service_name == "baton-registry"
            && s.span.kind == SpanKind::Client as i32
            && attribute(&s.span.attributes, "db.operation.name").is_some()
            && s.span.trace_id == open_server.span.trace_id),
        "a registry database span in the open request's trace"
    );
    for span in &spans {
        for pair in &span.span.attributes {
            assert!(
                !matches!(pair.key.as_str(), "db.statement" | "db.query.text"),
                "statement text on {}",
                span.span.name
            );
        }
        for event in &span.span.events {
            for pair in &event.attributes {
                assert_ne!(
                    pair.key, "db.statement",
                    "statement in an event of {}",
                    span.span.name
                );
            }
        }
        assert!(
            !span.span.attributes.iter().any(|pair| pair
                .value
                .as_ref()
                .and_then(|value| value.value.as_ref())
                .is_some_and(
                    |value| baton_tests::otlp_receiver::text(value).contains(&tenant.api_key)
                )),
            "no key in any attribute"
        );
    }

    // Probes leave no span, on either side.
    for span in &spans {
        let route = attribute(&span.span.attributes, "http.route").unwrap_or_default();
        assert!(
            !route.contains("healthz") && !route.contains("readyz"),
            "probe traced: {}",
            span.span.name
        );
        assert!(
            !span.span.name.starts_with("grpc.health.v1.Health/"),
            "health check traced"
        );
    }

    // The failing call: the gateway's CLIENT span to registry is an error; the 404 server span
    // is not (a client's mistake), nor is registry's NOT_FOUND server span (it did its job).
    let failed_server = spans
        .iter()
        .find(|s| {
            s.span.name == "POST /api/v1/agent-sessions/heartbeat"
                && attribute(&s.span.attributes, "http.response.status_code").as_deref()
                    == Some("404")
        })
        .expect("the failed request's span");
    let status = |span: &ReceivedSpan| span.span.status.as_ref().map_or(0, |status| status.code);
    assert_eq!(status(failed_server), StatusCode::Unset as i32);
    let failed_client = spans
        .iter()
        .find(|s| {
            s.span.kind == SpanKind::Client as i32
                && s.span.parent_span_id == failed_server.span.span_id
                && attribute(&s.span.attributes, "rpc.grpc.status_code").as_deref() == Some("5")
        })
        .expect("the failed request's CLIENT span with NOT_FOUND");
    assert_eq!(status(failed_client), StatusCode::Error as i32);
    let failed_registry = spans
        .iter()
        .find(|s| s.span.parent_span_id == failed_client.span.span_id)
        .expect("registry's span of the failed call");
    assert_eq!(status(failed_registry), StatusCode::Unset as i32);
    assert!(
        spans.iter().all(
            |s| s.span.kind != SpanKind::Server as i32 || status(s) != StatusCode::Error as i32
        ),
        "no server span failed in this run"
    );

    // Log lines inside a span carry its ids; the gateway's access line is inside its request
    // span, so its ids are that span's.
    let lines = baton.logs.json();
    let access = lines
        .iter()
        .find(|line| {
            line["message"] == "access" && line["http.route"] == "/api/v1/agent-sessions/open"
        })
        .expect("access line of the open request");
    assert_eq!(access["trace_id"], hex(&open_server.span.trace_id));
    assert_eq!(access["span_id"], hex(&open_server.span.span_id));
    assert_eq!(access["service.name"], "baton-gateway");
    assert_eq!(access["http.request.method"], "POST");
    assert_eq!(access["http.response.status_code"], 200);
    assert!(access["latency_ms"].as_f64().is_some());
    assert!(
        access["client.address"]
            .as_str()
            .is_some_and(|a| a == "127.0.0.1")
    );
    let access_lines: Vec<_> = lines
        .iter()
        .filter(|line| line["message"] == "access")
        .collect();
    assert!(
        access_lines.iter().all(|line| {
            let route = line["http.route"].as_str().unwrap_or_default();
            !route.contains("healthz") && !route.contains("readyz")
        }),
        "no access line for probes"
    );
    let exported_traces: BTreeSet<String> = spans.iter().map(|s| hex(&s.span.trace_id)).collect();
    for line in access_lines {
        let trace = line["trace_id"]
            .as_str()
            .expect("every access line has a trace id");
        assert!(
            exported_traces.contains(trace),
            "access line trace {trace} was exported"
        );
    }
    for raw in baton.logs.raw() {
        assert!(!raw.contains(&tenant.api_key), "no key in the logs");
        assert!(
            !raw.contains("INSERT INTO"),
            "no SQL text in the logs: {raw}"
        );
    }

    // Latency histograms: the conventions' units, the boundaries fitted to what Baton measures
    // (not the SDK's millisecond defaults, which put every request in seconds into the first
    // bucket), and values recorded in that unit: a mean a thousand times off would be a
    // call of a few microseconds or a request of many seconds. (How the observations fall
    // over the buckets depends on the machine's load, so it is not asserted.)
    for (name, unit, bounds, plausible) in [
        (
            "http.server.request.duration",
            "s",
            baton_kit::telemetry::buckets::HTTP_SECONDS,
            0.0001..2.0,
        ),
        (
            "rpc.server.duration",
            "ms",
            baton_kit::telemetry::buckets::RPC_MILLISECONDS,
            0.05..2000.0,
        ),
    ] {
        let exported =
            exported_histogram(&receiver, name).unwrap_or_else(|| panic!("{name} exported"));
        assert_eq!(exported.unit, unit, "{name} unit");
        assert_eq!(exported.bounds, bounds, "{name} boundaries");
        assert!(
            plausible.contains(&exported.mean),
            "{name} mean {} {unit} is not a request's latency in {unit}",
            exported.mean
        );
    }
    let http_routes: BTreeMap<String, String> = receiver
        .metrics()
        .into_iter()
        .filter(|m| m.metric.name == "http.server.request.duration")
        .flat_map(|m| match m.metric.data {
            Some(Data::Histogram(histogram)) => histogram
                .data_points
                .into_iter()
                .map(|point| {
                    (
                        attribute(&point.attributes, "http.route").unwrap_or_default(),
                        m.service_name.clone(),
                    )
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    assert!(http_routes.contains_key("/api/v1/agent-sessions/{session_run_id}"));
    assert!(
        !http_routes.contains_key("/healthz"),
        "probes are not counted"
    );
    assert!(
        http_routes
            .values()
            .all(|service| service == "baton-gateway")
    );

    // Every metric exported is one the dashboards can know of, and the two lists agree.
    let documented = documented_metrics();
    assert_eq!(
        documented,
        catalogued_as_emitted(),
        "metrics.txt and metrics.yaml agree"
    );
    for received in receiver.metrics() {
        assert!(
            documented.contains(&received.metric.name),
            "{} ({}) is missing from deploy/observability/metrics.txt",
            received.metric.name,
            received.service_name
        );
    }
}

/// `OTEL_TRACES_SAMPLER=parentbased_traceidratio` with ratio 0: a request without a sampled
/// caller is not traced, a request whose caller sampled it is traced through every component
/// (the caller is a trusted proxy here; see telemetry_trust.rs for an untrusted one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_sampler_variables_choose_a_parent_based_sampler() {
    const SAMPLED_TRACE: &str = "6bf92f3577b34da6a3ce929d0e0e4738";
    let (receiver, endpoint) = Receiver::start().await;
    let baton = Baton::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0"),
        ("BATON_GATEWAY__TRUSTED_PROXIES", "127.0.0.1/32"),
    ])
    .await;
    let (tenant, client) = baton.tenant_client("sampler").await;
    let unsampled = client
        .post("/api/v1/agent-sessions/open", &startup("not-sampled"))
        .await;
    assert_eq!(unsampled.status, 200);
    let sampled = reqwest::Client::new()
        .post(format!("{}/api/v1/agent-sessions/open", baton.base_url))
        .header("x-api-key", &tenant.api_key)
        .header(
            "traceparent",
            format!("00-{SAMPLED_TRACE}-00f067aa0ba902b7-01"),
        )
        .json(&startup("sampled"))
        .send()
        .await
        .expect("request");
    assert_eq!(sampled.status(), 200);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans = receiver.spans();
        let registry_seen = spans
            .iter()
            .any(|s| s.service_name == "baton-registry" && hex(&s.span.trace_id) == SAMPLED_TRACE);
        if registry_seen {
            break spans;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sampled request's spans never arrived"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let traces: BTreeSet<String> = spans.iter().map(|s| hex(&s.span.trace_id)).collect();
    assert_eq!(
        traces,
        BTreeSet::from([SAMPLED_TRACE.to_string()]),
        "only the sampled caller's trace is exported"
    );
    // Both requests were still measured.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !receiver
        .metrics()
        .iter()
        .any(|m| m.metric.name == "http.server.request.duration")
    {
        assert!(tokio::time::Instant::now() < deadline, "no request metric");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
