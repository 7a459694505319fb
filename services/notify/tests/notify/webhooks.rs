//! Registering webhooks: validation, the secret shown once, tenant isolation and the per-tenant limit.

use uuid::Uuid;

use baton_kit::testing::WritesHeld;

use crate::{Harness, Receiver, budget_crossed, settled};

#[tokio::test]
async fn invalid_registrations_are_refused_with_the_field_and_the_rule() {
    let harness = Harness::self_hosted().await;
    let tenant = Uuid::now_v7();
    let long = format!("https://example.com/{}", "a".repeat(2048));
    let cases: [(&str, &[&str], Option<&str>, &str); 6] = [
        (
            "not a url",
            &["budget.crossed"],
            None,
            "url must be an absolute http(s) URL",
        ),
        (
            &long,
            &["budget.crossed"],
            None,
            "url must be at most 2048 characters",
        ),
        (
            "https://example.com/",
            &[],
            None,
            "events must name at least one of budget.crossed, runaway.flagged",
        ),
        (
            "https://example.com/",
            &["session.closed"],
            None,
            "events may only contain budget.crossed and runaway.flagged",
        ),
        (
            "https://example.com/",
            &["budget.crossed", "budget.crossed"],
            None,
            "events must not repeat an event",
        ),
        (
            "https://example.com/",
            &["budget.crossed"],
            Some("teams"),
            "format must be baton or slack",
        ),
    ];
    for (url, events, format, detail) in cases {
        let status = harness
            .create_webhook(tenant, url, events, format)
            .await
            .expect_err(detail);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(status.message(), detail);
    }
    assert!(harness.list_webhooks(tenant).await.is_empty());
}

#[tokio::test]
async fn the_secret_is_returned_once_and_never_listed() {
    let harness = Harness::self_hosted().await;
    let tenant = Uuid::now_v7();
    let created = harness
        .create_webhook(
            tenant,
            "https://hooks.example.com/baton",
            &["runaway.flagged", "budget.crossed"],
            None,
        )
        .await
        .expect("create");
    assert!(created.secret.starts_with("whsec_"));
    let webhook = created.webhook.expect("webhook");
    assert_eq!(webhook.format, "baton");
    assert_eq!(webhook.events, vec!["runaway.flagged", "budget.crossed"]);
    let listed = harness.list_webhooks(tenant).await;
    assert_eq!(listed, vec![webhook]);
    assert!(!format!("{listed:?}").contains(&created.secret));
}

#[tokio::test]
async fn another_tenant_sees_none_of_a_tenants_webhooks_or_deliveries() {
    let harness = Harness::self_hosted().await;
    let receiver = Receiver::start(&[]).await;
    let owner = Uuid::now_v7();
    let stranger = Uuid::now_v7();
    let created = harness
        .hook(owner, &receiver, "/hook", &["budget.crossed"])
        .await;
    harness.publish(&budget_crossed(owner)).await;
    harness.deliveries_when(owner, settled(1)).await;

    assert!(harness.list_webhooks(stranger).await.is_empty());
    assert!(harness.list_deliveries(stranger).await.is_empty());
    let id = created.webhook.expect("webhook").id;
    let status = harness
        .delete_webhook(stranger, &id)
        .await
        .expect_err("not the stranger's");
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(harness.list_webhooks(owner).await.len(), 1);
    // A message of the stranger's creates nothing for the owner's webhook.
    harness.publish(&budget_crossed(stranger)).await;

    // The runtime role sees nothing at all without a tenant set: RLS holds in the database,
    // not only in the queries.
    let runtime =
        baton_kit::db::connect_runtime(harness.database.url(), None, &baton_notify::DB, 1)
            .await
            .expect("runtime pool");
    for table in ["notify.webhooks", "notify.deliveries", "notify.attempts"] {
        let count: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(&runtime)
                .await
                .expect("count");
        assert_eq!(count, 0, "{table} without a tenant");
    }
    // The stranger's message was consumed (its tenant has no webhook): nothing delivered.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.hits().len(), 1);
}

/// The per-tenant limit holds when creates race: each takes the tenant's webhook lock before it
/// counts, so with one place left exactly one of sixteen concurrent creates gets it. The racers
/// are lined up at their insert (writes to the table held until several wait), so without the
/// lock every one of them would have counted a free place.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_creates_racing_for_the_last_place_leave_exactly_the_limit() {
    let harness = Harness::self_hosted().await;
    let tenant = Uuid::now_v7();
    let limit = baton_notify::webhook::MAX_WEBHOOKS_PER_TENANT;
    for n in 1..limit {
        let url = format!("https://hooks.example.com/{n}");
        harness
            .create_webhook(tenant, &url, &["budget.crossed"], None)
            .await
            .expect("below the limit");
    }
    let creates = (0..16).map(|n| {
        let url = format!("https://hooks.example.com/race/{n}");
        let harness = &harness;
        async move {
            harness
                .create_webhook(tenant, &url, &["budget.crossed"], None)
                .await
        }
    });
    let held = WritesHeld::on(&harness.admin, "notify.webhooks").await;
    let (answers, ()) = tokio::join!(
        futures::future::join_all(creates),
        held.release_once_waiting(&harness.admin, 2)
    );
    let created = answers.iter().filter(|answer| answer.is_ok()).count();
    assert_eq!(created, 1, "{answers:?}");
    for refused in answers.iter().filter_map(|answer| answer.as_ref().err()) {
        assert_eq!(
            refused.code(),
            tonic::Code::ResourceExhausted,
            "{refused:?}"
        );
    }
    assert_eq!(harness.list_webhooks(tenant).await.len() as i64, limit);
}
