//! OTLP over TLS: the real stack exports to a receiver that serves only TLS with a certificate
//! a test CA issued and requires a client certificate from the same CA, configured by the
//! standard variables alone (`OTEL_EXPORTER_OTLP_ENDPOINT=https://…`,
//! `OTEL_EXPORTER_OTLP_CERTIFICATE`, `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE` / `_KEY`).
//! Spans and metrics arrive; plaintext TLS material beside an `http://` endpoint is refused at
//! start.

use std::time::Duration;

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use baton_tests::otlp_receiver::Receiver;
use baton_tests::tls::TestCa;
use baton_tests::{Baton, binary};

use crate::startup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_a_collector_over_mutual_tls() {
    let dir = std::env::temp_dir().join(format!("baton-otlp-tls-{}", uuid::Uuid::new_v4()));
    let ca = TestCa::new(&dir);
    let collector = ca.issue("collector");
    let services = ca.issue("services");
    let read = |path: &std::path::Path| std::fs::read(path).expect("pem");
    let tls = ServerTlsConfig::new()
        .identity(Identity::from_pem(
            read(&collector.cert),
            read(&collector.key),
        ))
        .client_ca_root(Certificate::from_pem(read(&ca.cert())));
    let (receiver, endpoint) = Receiver::start_tls(tls).await;
    assert!(endpoint.starts_with("https://"));
    let path = |path: &std::path::Path| path.to_string_lossy().to_string();
    let (ca_file, cert, key) = (path(&ca.cert()), path(&services.cert), path(&services.key));
    let baton = Baton::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca_file.as_str()),
        ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", cert.as_str()),
        ("OTEL_EXPORTER_OTLP_CLIENT_KEY", key.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
    ])
    .await;
    let tenant = baton.create_tenant("otlp-tls").await;
    let opened = baton
        .client(&tenant)
        .post("/api/v1/agent-sessions/open", &startup("otlp-tls-1"))
        .await;
    assert_eq!(opened.status, 200, "{:?}", opened.body);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let spans = receiver.spans();
        let registry = spans.iter().any(|s| s.service_name == "baton-registry");
        let gateway = spans.iter().any(|s| s.service_name == "baton-gateway");
        if registry && gateway && !receiver.metrics().is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no spans or metrics arrived over TLS"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn tls_material_beside_a_plaintext_endpoint_is_refused_at_start() {
    let dir = std::env::temp_dir().join(format!("baton-otlp-plain-{}", uuid::Uuid::new_v4()));
    let ca = TestCa::new(&dir);
    let output = tokio::process::Command::new(binary("baton"))
        .args(["serve", "gateway", "--no-migrate"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.cert())
        .output()
        .await
        .expect("baton");
    assert!(
        !output.status.success(),
        "a half-encrypted setup does not start"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        format!("{stdout}{stderr}").contains("OTEL_EXPORTER_OTLP_CERTIFICATE"),
        "the error names the variable: {stdout} {stderr}"
    );
}
