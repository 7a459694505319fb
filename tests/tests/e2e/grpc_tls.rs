//! Mutual TLS on the internal gRPC hops: every service serves TLS only and asks for a client
//! certificate; the gateway presents its own. A caller without a certificate is turned away at
//! the handshake; the hook-facing API works end to end over the encrypted hops. With calls
//! between co-located services in process (the default), those calls cross no wire and so no
//! TLS, while the ports still serve mutual TLS only.

use serde_json::json;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use baton_tests::Baton;
use baton_tests::tls::TestCa;

async fn health(address: &str, tls: ClientTlsConfig) -> Result<i32, String> {
    let channel = Endpoint::from_shared(format!("https://{address}"))
        .map_err(|error| error.to_string())?
        .tls_config(tls)
        .map_err(|error| error.to_string())?
        .connect()
        .await
        .map_err(|error| format!("{error:?}"))?;
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .map(|answer| answer.into_inner().status)
        .map_err(|status| format!("{status:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_internal_hops_use_mutual_tls_and_refuse_a_caller_without_a_certificate() {
    // The gateway's calls go over the wire, so they are the mTLS handshakes under test.
    check_mutual_tls("false").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_hops_work_beside_ports_that_serve_mutual_tls_only() {
    check_mutual_tls("true").await;
}

async fn check_mutual_tls(in_process: &str) {
    let dir = std::env::temp_dir().join(format!("baton-grpc-tls-{}", uuid::Uuid::new_v4()));
    let ca = TestCa::new(&dir);
    let services = ca.issue("services");
    let outsider = TestCa::new(&dir.join("other")).issue("outsider");
    let (cert, key, ca_file) = (
        services.cert.to_string_lossy().to_string(),
        services.key.to_string_lossy().to_string(),
        ca.cert().to_string_lossy().to_string(),
    );
    let baton = Baton::start_with(&[
        ("BATON_GRPC_TLS_CERT", cert.as_str()),
        ("BATON_GRPC_TLS_KEY", key.as_str()),
        ("BATON_GRPC_TLS_CA", ca_file.as_str()),
        ("BATON_GRPC_IN_PROCESS", in_process),
    ])
    .await;
    let (_, client) = baton.tenant_client("mtls").await;
    let opened = client
        .post(
            "/api/v1/agent-sessions/open",
            &json!({"agent": "claude-code", "sessionId": "m-1", "source": "startup"}),
        )
        .await;
    assert_eq!(
        opened.status, 200,
        "gateway to registry over mTLS: {:?}",
        opened.body
    );
    let remembered = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "decision", "topic": "db", "content": "postgres"}),
        )
        .await;
    assert_eq!(
        remembered.status, 201,
        "gateway to provenance: {:?}",
        remembered.body
    );

    let registry = &baton.addresses["registry"];
    let ca_cert = Certificate::from_pem(std::fs::read(ca.cert()).expect("ca"));
    let trusting = || {
        ClientTlsConfig::new()
            .ca_certificate(ca_cert.clone())
            .domain_name("127.0.0.1")
    };
    let pem = |path: &std::path::Path| std::fs::read(path).expect("pem");
    let with_cert =
        trusting().identity(Identity::from_pem(pem(&services.cert), pem(&services.key)));
    assert_eq!(
        health(registry, with_cert).await,
        Ok(1),
        "a certified caller is served"
    );
    assert!(
        health(registry, trusting()).await.is_err(),
        "no client certificate: refused"
    );
    let foreign = trusting().identity(Identity::from_pem(pem(&outsider.cert), pem(&outsider.key)));
    assert!(
        health(registry, foreign).await.is_err(),
        "a certificate from another CA: refused"
    );
    let plaintext = Endpoint::from_shared(format!("http://{registry}"))
        .expect("uri")
        .connect()
        .await;
    let plain_answer = match plaintext {
        Ok(channel) => HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .is_ok(),
        Err(_) => false,
    };
    assert!(!plain_answer, "plaintext gRPC is not served");
    let _ = std::fs::remove_dir_all(&dir);
}
