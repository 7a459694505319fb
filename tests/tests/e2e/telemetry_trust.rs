//! Issue 29 against the real `baton serve all` and a real OTLP receiver: the heartbeat batch
//! worker is a registry root span linked to the heartbeat it served, with its statements under
//! it and in the database metric; only Baton's spans, without source paths; every resource
//! names its environment and instance; logs arrive over OTLP correlated with their trace and
//! without keys; the public edge obeys a caller's sampled flag only from a trusted proxy.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::json;

use baton_tests::Baton;
use baton_tests::otlp_receiver::{ReceivedSpan, Receiver, attribute, text};

use crate::startup;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Polls `ready` over the receiver's state until it holds (exports are asynchronous); the
/// deadline only bounds a broken run.
async fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never arrived: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn gateway_span<'a>(spans: &'a [ReceivedSpan], name: &str) -> Option<&'a ReceivedSpan> {
    spans
        .iter()
        .find(|s| s.service_name == "baton-gateway" && s.span.name == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_work_is_linked_exports_are_baton_only_and_logs_reach_the_collector() {
    let (receiver, endpoint) = Receiver::start().await;
    let baton = Baton::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_BLRP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("BATON_DEPLOYMENT_ENVIRONMENT", "e2e"),
    ])
    .await;
    let (tenant, client) = baton.tenant_client("trust").await;
    client.open(&startup("trust-1")).await;
    let beat = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": "trust-1"}),
        )
        .await;
    assert_eq!(beat.status, 200, "{:?}", beat.body);

    // The batch span and the heartbeat's request span both exported.
    wait_for("the heartbeat batch and its request", || {
        let spans = receiver.spans();
        spans
            .iter()
            .any(|s| s.span.name == "registry.heartbeat_batch")
            && gateway_span(&spans, "POST /api/v1/agent-sessions/heartbeat").is_some()
    })
    .await;
    let spans = receiver.spans();
    let request = gateway_span(&spans, "POST /api/v1/agent-sessions/heartbeat").expect("request");
    let batch = spans
        .iter()
        .find(|s| {
            s.span.name == "registry.heartbeat_batch"
                && s.span
                    .links
                    .iter()
                    .any(|link| link.trace_id == request.span.trace_id)
        })
        .expect("a batch linked to the heartbeat's trace");
    assert_eq!(batch.service_name, "baton-registry");
    assert!(
        batch.span.parent_span_id.iter().all(|byte| *byte == 0),
        "the batch is a root: {:?}",
        batch.span.parent_span_id
    );
    assert!(
        spans.iter().any(|s| s.span.trace_id == batch.span.trace_id
            && s.service_name == "baton-registry"
            && attribute(&s.span.attributes, "db.system.name").as_deref() == Some("postgresql")),
        "the batch's statements are database spans in its trace: {:?}",
        spans
            .iter()
            .filter(|s| s.span.trace_id == batch.span.trace_id)
            .map(|s| (
                &s.span.name,
                hex(&s.span.parent_span_id),
                hex(&s.span.span_id)
            ))
            .collect::<Vec<_>>()
    );

    // Only Baton's spans; no source locations; every resource names environment and instance.
    for span in &spans {
        assert!(
            !span.span.name.contains("io_loop") && !span.span.name.starts_with("lapin"),
            "library span exported: {}",
            span.span.name
        );
        for pair in &span.span.attributes {
            assert!(
                !pair.key.starts_with("code."),
                "{} on {}",
                pair.key,
                span.span.name
            );
        }
        assert_eq!(
            attribute(&span.resource, "deployment.environment.name").as_deref(),
            Some("e2e"),
            "{}",
            span.service_name
        );
        assert!(
            attribute(&span.resource, "service.instance.id").is_some_and(|id| !id.is_empty()),
            "{}",
            span.service_name
        );
    }

    // The batch's statements are in the registry's database metric.
    wait_for("registry's database metric", || {
        receiver.metrics().iter().any(|m| {
            m.service_name == "baton-registry" && m.metric.name == "db.client.operation.duration"
        })
    })
    .await;

    // Logs over OTLP: the gateway's access line of the heartbeat, in the request's trace.
    wait_for("the access log record", || {
        receiver.logs().iter().any(|log| {
            log.service_name == "baton-gateway" && log.record.trace_id == request.span.trace_id
        })
    })
    .await;
    let logs = receiver.logs();
    let access = logs
        .iter()
        .find(|log| {
            log.service_name == "baton-gateway" && log.record.trace_id == request.span.trace_id
        })
        .expect("access record");
    assert_eq!(access.record.span_id, request.span.span_id);
    assert_eq!(
        attribute(&access.resource, "deployment.environment.name").as_deref(),
        Some("e2e")
    );
    for log in &logs {
        let body = log
            .record
            .body
            .as_ref()
            .and_then(|body| body.value.as_ref())
            .map(text)
            .unwrap_or_default();
        let attributes = format!("{:?}", log.record.attributes);
        for content in [&body, &attributes] {
            assert!(!content.contains(&tenant.api_key), "a key in a log record");
            assert!(
                !content.contains("SELECT "),
                "statement text in a log record"
            );
        }
    }
    // Still JSON on stdout, and no statement lines there at the default level.
    assert!(
        baton
            .logs
            .json()
            .iter()
            .any(|line| line["message"] == "access")
    );
    for raw in baton.logs.raw() {
        assert!(!raw.contains("\"sqlx::query\""), "statement line: {raw}");
    }
}

/// Under a ratio-0 sampler a sampled `traceparent` is obeyed from the trusted proxy (here
/// 127.0.0.2) and ignored from anyone else (127.0.0.1), whose context becomes a link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_edge_obeys_a_sampled_flag_only_from_a_trusted_proxy() {
    const UNTRUSTED_TRACE: &str = "7bf92f3577b34da6a3ce929d0e0e4731";
    const TRUSTED_TRACE: &str = "7bf92f3577b34da6a3ce929d0e0e4732";
    let (receiver, endpoint) = Receiver::start().await;
    let baton = Baton::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0"),
        ("BATON_GATEWAY__TRUSTED_PROXIES", "127.0.0.2/32"),
    ])
    .await;
    let tenant = baton.create_tenant("edge").await;
    let send = |from: Ipv4Addr, trace: &'static str, session: &'static str| {
        let client = reqwest::Client::builder()
            .local_address(IpAddr::V4(from))
            .build()
            .expect("client");
        let request = client
            .post(format!("{}/api/v1/agent-sessions/open", baton.base_url))
            .header("x-api-key", &tenant.api_key)
            .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
            .json(&startup(session));
        async move { request.send().await.expect("request").status() }
    };
    // The untrusted request first: when the trusted one's spans are in, the untrusted one's
    // would have been exported with or before them.
    assert_eq!(
        send(Ipv4Addr::new(127, 0, 0, 1), UNTRUSTED_TRACE, "edge-1").await,
        200
    );
    assert_eq!(
        send(Ipv4Addr::new(127, 0, 0, 2), TRUSTED_TRACE, "edge-2").await,
        200
    );
    wait_for("the trusted request's registry span", || {
        receiver
            .spans()
            .iter()
            .any(|s| s.service_name == "baton-registry" && hex(&s.span.trace_id) == TRUSTED_TRACE)
    })
    .await;
    let traces: BTreeSet<String> = receiver
        .spans()
        .iter()
        .map(|s| hex(&s.span.trace_id))
        .collect();
    assert_eq!(
        traces,
        BTreeSet::from([TRUSTED_TRACE.to_string()]),
        "only the trusted proxy's sampled flag was obeyed"
    );
}
