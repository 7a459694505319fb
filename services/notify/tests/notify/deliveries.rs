//! Alerts from the bus reach the webhooks subscribed to them: signed, once, retried.

use std::time::Duration;

use uuid::Uuid;

use baton_notify::signing;

use crate::{Harness, Receiver, budget_crossed, settled};

#[tokio::test]
async fn a_budget_crossing_is_posted_once_with_a_signature_the_secret_verifies() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[]).await;
    let bystander = Receiver::start(&[]).await;
    let tenant = Uuid::now_v7();
    let created = harness
        .hook(tenant, &receiver, "/hooks/baton", &["budget.crossed"])
        .await;
    harness
        .hook(tenant, &bystander, "/hooks/runaway", &["runaway.flagged"])
        .await;
    let envelope = budget_crossed(tenant);
    harness.publish(&envelope).await;

    let deliveries = harness.deliveries_when(tenant, settled(1)).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery.state, "delivered");
    assert_eq!(delivery.event, "budget.crossed");
    assert_eq!(delivery.event_id, envelope.id.to_string());
    assert_eq!(delivery.attempts.len(), 1);
    assert_eq!(delivery.attempts[0].status_code, Some(200));
    assert_eq!(delivery.attempts[0].error, None);

    let hits = receiver.hits();
    assert_eq!(hits.len(), 1, "exactly one POST");
    let hit = &hits[0];
    assert_eq!(hit.header("x-baton-event"), "budget.crossed");
    assert_eq!(hit.header("x-baton-delivery"), delivery.id);
    assert_eq!(hit.header("content-type"), "application/json");
    let timestamp: i64 = hit
        .header("x-baton-timestamp")
        .parse()
        .expect("unix seconds");
    assert!((chrono::Utc::now().timestamp() - timestamp).abs() < 60);
    assert!(
        signing::verify(
            &created.secret,
            timestamp,
            &hit.body,
            hit.header("x-baton-signature")
        ),
        "the signature verifies with the secret returned at creation"
    );
    assert!(!signing::verify(
        "whsec_someone-else",
        timestamp,
        &hit.body,
        hit.header("x-baton-signature")
    ));
    let body: serde_json::Value = serde_json::from_slice(&hit.body).expect("json body");
    assert_eq!(body["type"], "budget.crossed");
    assert_eq!(body["eventId"], envelope.id.to_string());
    assert_eq!(body["tenantId"], tenant.to_string());
    assert_eq!(body["data"]["thresholdPercent"], 80);
    assert_eq!(body["data"]["subject"], "baton");
    assert!(
        bystander.hits().is_empty(),
        "a webhook for runaway.flagged hears nothing of a budget"
    );
}

#[tokio::test]
async fn the_same_message_delivered_twice_makes_one_delivery() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[]).await;
    let tenant = Uuid::now_v7();
    harness
        .hook(tenant, &receiver, "/hook", &["budget.crossed"])
        .await;
    let envelope = budget_crossed(tenant);
    harness.publish(&envelope).await;
    harness.deliveries_when(tenant, settled(1)).await;
    // The broker hands the same message out again (a consumer crash before its ack, a relay
    // republishing after a lost confirm): same envelope id.
    harness.publish(&envelope).await;
    // A later, distinct message: once it is delivered, the duplicate before it was consumed.
    let marker = budget_crossed(tenant);
    harness.publish(&marker).await;
    harness.deliveries_when(tenant, settled(2)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let deliveries = harness.list_deliveries(tenant).await;
    let of_first: Vec<_> = deliveries
        .iter()
        .filter(|delivery| delivery.event_id == envelope.id.to_string())
        .collect();
    assert_eq!(of_first.len(), 1, "one delivery per (webhook, message)");
    assert_eq!(deliveries.len(), 2);
    let first_hits = receiver
        .hits()
        .iter()
        .filter(|hit| {
            let body: serde_json::Value = serde_json::from_slice(&hit.body).expect("json");
            body["eventId"] == envelope.id.to_string()
        })
        .count();
    assert_eq!(first_hits, 1, "the receiver heard of the message once");
}

#[tokio::test]
async fn a_failing_receiver_is_retried_until_it_answers_2xx_and_every_attempt_is_logged() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[500, 500]).await;
    let tenant = Uuid::now_v7();
    harness
        .hook(
            tenant,
            &receiver,
            "/flaky",
            &["budget.crossed", "runaway.flagged"],
        )
        .await;
    harness.publish(&budget_crossed(tenant)).await;

    let deliveries = harness.deliveries_when(tenant, settled(1)).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery.state, "delivered");
    let statuses: Vec<Option<u32>> = delivery
        .attempts
        .iter()
        .map(|attempt| attempt.status_code)
        .collect();
    assert_eq!(statuses, vec![Some(500), Some(500), Some(200)]);
    let errors: Vec<Option<&str>> = delivery
        .attempts
        .iter()
        .map(|attempt| attempt.error.as_deref())
        .collect();
    assert_eq!(errors, vec![Some("http_status"), Some("http_status"), None]);
    let numbers: Vec<u32> = delivery
        .attempts
        .iter()
        .map(|attempt| attempt.number)
        .collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    // Each retry waited: the attempts are in time order, apart by at least half the base.
    let instants: Vec<i64> = delivery
        .attempts
        .iter()
        .map(|attempt| {
            let at = attempt.at.expect("at");
            at.seconds * 1000 + i64::from(at.nanos) / 1_000_000
        })
        .collect();
    assert!(instants.windows(2).all(|pair| pair[1] - pair[0] >= 25));

    let hits = receiver.hits();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter()
            .all(|hit| hit.header("x-baton-delivery") == delivery.id),
        "every retry carries the same delivery id"
    );
    assert_eq!(
        hits[0].body, hits[2].body,
        "every retry sends the same body"
    );
}

#[tokio::test]
async fn a_receiver_that_never_succeeds_is_given_up_after_the_configured_attempts() {
    let harness = Harness::start(&[
        ("BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES", "true"),
        ("BATON_NOTIFY__MAX_ATTEMPTS", "2"),
    ])
    .await;
    let receiver = Receiver::start(&[503, 503, 503]).await;
    let tenant = Uuid::now_v7();
    harness
        .hook(tenant, &receiver, "/down", &["budget.crossed"])
        .await;
    harness.publish(&budget_crossed(tenant)).await;
    let deliveries = harness.deliveries_when(tenant, settled(1)).await;
    assert_eq!(deliveries[0].state, "failed");
    assert_eq!(deliveries[0].attempts.len(), 2);
    assert_eq!(deliveries[0].next_attempt_at, None);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.hits().len(), 2, "no attempt past the limit");
}

#[tokio::test]
async fn a_slack_webhook_gets_a_text_body() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[]).await;
    let tenant = Uuid::now_v7();
    let created = harness
        .create_webhook(
            tenant,
            &receiver.url("http", "127.0.0.1", "/services/T000/B000/XXXX"),
            &["budget.crossed"],
            Some("slack"),
        )
        .await
        .expect("create");
    assert_eq!(created.webhook.expect("webhook").format, "slack");
    harness.publish(&budget_crossed(tenant)).await;
    harness.deliveries_when(tenant, settled(1)).await;

    let hits = receiver.hits();
    assert_eq!(hits.len(), 1);
    let body: serde_json::Value = serde_json::from_slice(&hits[0].body).expect("json body");
    let object = body.as_object().expect("an object");
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        vec!["text"],
        "only `text`"
    );
    let text = object["text"].as_str().expect("text");
    assert!(
        text.contains("project baton's month budget reached 80% of $100.00"),
        "{text}"
    );
    let timestamp: i64 = hits[0].header("x-baton-timestamp").parse().expect("ts");
    assert!(signing::verify(
        &created.secret,
        timestamp,
        &hits[0].body,
        hits[0].header("x-baton-signature")
    ));
}

#[tokio::test]
async fn a_deleted_webhook_is_not_delivered_to() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[]).await;
    let tenant = Uuid::now_v7();
    let created = harness
        .hook(tenant, &receiver, "/gone", &["budget.crossed"])
        .await;
    let id = created.webhook.expect("webhook").id;
    harness.delete_webhook(tenant, &id).await.expect("delete");
    assert!(harness.list_webhooks(tenant).await.is_empty());
    let status = harness
        .delete_webhook(tenant, &id)
        .await
        .expect_err("already deleted");
    assert_eq!(status.code(), tonic::Code::NotFound);
    // A live webhook as a marker: once its delivery is made, the message was handled.
    let marker = Receiver::start(&[]).await;
    harness
        .hook(tenant, &marker, "/marker", &["budget.crossed"])
        .await;
    harness.publish(&budget_crossed(tenant)).await;
    harness.deliveries_when(tenant, settled(1)).await;
    assert!(receiver.hits().is_empty());
    assert_eq!(marker.hits().len(), 1);
}
