//! Hosted mode: no delivery reaches a private address, whatever the URL's host resolves to.

use uuid::Uuid;

use crate::{Harness, Receiver, budget_crossed, settled};

#[tokio::test]
async fn a_host_resolving_to_loopback_is_refused_and_the_attempt_says_why() {
    let harness = Harness::hosted().await;
    let receiver = Receiver::start(&[]).await;
    let tenant = Uuid::now_v7();
    // `localhost` is a name, so creation cannot know where it points: it passes, and the
    // delivery's own resolution must refuse it.
    harness
        .create_webhook(
            tenant,
            &receiver.url("https", "localhost", "/internal"),
            &["budget.crossed"],
            None,
        )
        .await
        .expect("an https URL with a host name is accepted");
    harness.publish(&budget_crossed(tenant)).await;

    let deliveries = harness.deliveries_when(tenant, settled(1)).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery.state, "failed");
    assert_eq!(delivery.attempts.len(), 1);
    assert_eq!(
        delivery.attempts[0].error.as_deref(),
        Some("address_refused")
    );
    assert_eq!(delivery.attempts[0].status_code, None);
    assert!(receiver.hits().is_empty());
    assert_eq!(receiver.connections(), 0, "not even a TCP connection");
}

#[tokio::test]
async fn hosted_mode_refuses_http_and_private_literals_at_creation() {
    let harness = Harness::hosted().await;
    let tenant = Uuid::now_v7();
    let cases = [
        ("http://hooks.example.com/baton", "url must use https"),
        (
            "https://127.0.0.1:8443/hook",
            "url must not name a private, loopback or otherwise non-public address",
        ),
        (
            "https://[::ffff:169.254.169.254]/latest/meta-data",
            "url must not name a private, loopback or otherwise non-public address",
        ),
        (
            "https://10.0.0.8/hook",
            "url must not name a private, loopback or otherwise non-public address",
        ),
    ];
    for (url, detail) in cases {
        let status = harness
            .create_webhook(tenant, url, &["budget.crossed"], None)
            .await
            .expect_err(url);
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{url}");
        assert_eq!(status.message(), detail, "{url}");
        assert_eq!(
            status
                .metadata()
                .get("x-baton-error")
                .and_then(|value| value.to_str().ok()),
            Some("invalid_input")
        );
    }
    assert!(harness.list_webhooks(tenant).await.is_empty());
}
