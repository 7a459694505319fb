//! AMQPS with a private CA and a client certificate: every broker connection of the stack (the
//! registry's outbox relay, the closer's consumer, the depth gauges) goes through a TLS
//! terminator in front of the shared RabbitMQ that serves a certificate a test CA issued and
//! requires a client certificate the same CA signed. A close flows from the registry's outbox
//! to the closer's pass over it; without the CA, or without the client certificate, no
//! connection gets past the handshake and no pass runs.

use std::time::Duration;

use baton_tests::Baton;
use baton_tests::tls::TestCa;
use baton_tests::tls_proxy::TlsProxy;

use crate::closer::{close, heartbeat, open_briefed, settled_pass};

const ENABLED: (&str, &str) = ("BATON_CLOSER__ENABLED", "true");

struct Material {
    ca: String,
    cert: String,
    key: String,
    proxy: TlsProxy,
}

async fn material(name: &str) -> Material {
    let dir = std::env::temp_dir().join(format!("baton-amqps-{name}-{}", uuid::Uuid::new_v4()));
    let ca = TestCa::new(&dir);
    let broker = ca.issue("broker");
    let services = ca.issue("services");
    let proxy = TlsProxy::start(
        &broker.cert,
        &broker.key,
        Some(&ca.cert()),
        "127.0.0.1:5672",
    )
    .await;
    let path = |path: &std::path::Path| path.to_string_lossy().to_string();
    Material {
        ca: path(&ca.cert()),
        cert: path(&services.cert),
        key: path(&services.key),
        proxy,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bus_runs_over_amqps_verified_against_a_private_ca_with_a_client_certificate() {
    let tls = material("ok").await;
    let url = format!("amqps://guest:guest@localhost:{}/%2f", tls.proxy.port);
    let baton = Baton::start_with(&[
        ENABLED,
        ("BATON_AMQP_URL", url.as_str()),
        ("BATON_AMQP_TLS_CA", tls.ca.as_str()),
        ("BATON_AMQP_TLS_CERT", tls.cert.as_str()),
        ("BATON_AMQP_TLS_KEY", tls.key.as_str()),
    ])
    .await;
    let (_, client) = baton.tenant_client("amqps").await;
    let admin = baton.admin().await;
    let run = open_briefed(&client, "amqps-1", &[]).await;
    heartbeat(&client, "amqps-1", "Nothing to hand on.").await;
    close(&client, "amqps-1").await;
    let (_, outcome, _) = settled_pass(&admin, &run, 1, Duration::from_secs(30)).await;
    assert_eq!(
        outcome, "nothing-briefed",
        "session.closed reached the closer over AMQPS"
    );
    assert!(
        tls.proxy.handshakes() >= 2,
        "publisher and consumer both connected through TLS: {}",
        tls.proxy.handshakes()
    );
    assert_eq!(tls.proxy.refused(), 0, "no handshake failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_private_ca_or_the_client_certificate_no_broker_connection_is_made() {
    for (case, with_ca, with_cert) in [("no-ca", false, true), ("no-cert", true, false)] {
        let tls = material(case).await;
        let url = format!("amqps://guest:guest@localhost:{}/%2f", tls.proxy.port);
        let mut env = vec![ENABLED, ("BATON_AMQP_URL", url.as_str())];
        if with_ca {
            env.push(("BATON_AMQP_TLS_CA", tls.ca.as_str()));
        }
        if with_cert {
            env.push(("BATON_AMQP_TLS_CERT", tls.cert.as_str()));
            env.push(("BATON_AMQP_TLS_KEY", tls.key.as_str()));
        }
        let baton = Baton::start_with(&env).await;
        let (_, client) = baton.tenant_client(case).await;
        let admin = baton.admin().await;
        let run = open_briefed(&client, "amqps-2", &[]).await;
        close(&client, "amqps-2").await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while tls.proxy.refused() < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            tls.proxy.refused() >= 2,
            "{case}: connections were turned away at the handshake"
        );
        let (passes,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM closer.passes WHERE session_run_id = $1::uuid")
                .bind(&run)
                .fetch_one(&admin)
                .await
                .expect("passes");
        assert_eq!(passes, 0, "{case}: nothing crossed the bus");
        let (waiting,): (i64,) = sqlx::query_as("SELECT count(*) FROM registry.outbox")
            .fetch_one(&admin)
            .await
            .expect("outbox");
        assert!(
            waiting >= 1,
            "{case}: the close waits in the outbox, not lost"
        );
        if !with_ca {
            assert_eq!(
                tls.proxy.handshakes(),
                0,
                "{case}: an unknown CA is never trusted"
            );
        }
        baton.stop().await;
    }
}
