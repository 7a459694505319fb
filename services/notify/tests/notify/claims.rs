//! The delivery worker's claim against real Postgres, without the service running (its own
//! worker would claim the rows under test).

use std::time::Duration;

use chrono::Utc;
use sqlx::postgres::PgPoolOptions;
use uuid::Uuid;

use baton_kit::testing::{TestDatabase, WritesHeld, init_logging};
use baton_notify::store::{self, ClaimedId, NewDelivery};
use baton_notify::webhook::{EventType, Format, NewWebhook};

/// Workers claiming at once take disjoint deliveries: each claim locks the rows it picks and
/// skips rows another claim holds. The sixteen claims are lined up at their update (writes to
/// the deliveries held until several wait), so they all read the same due rows; without the
/// row locks each would go on to update rows another had just taken, and a delivery would be
/// sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_workers_claiming_at_once_take_each_due_delivery_once() {
    init_logging();
    let database =
        TestDatabase::migrated(vec![(&baton_notify::DB, baton_notify::migrator())]).await;
    // Room for every racer, the held transaction and the poll that lets it go.
    let admin = PgPoolOptions::new()
        .max_connections(20)
        .connect(database.url())
        .await
        .expect("connect");
    let tenant = Uuid::now_v7();
    let now = Utc::now();
    let webhook = Uuid::now_v7();
    let mut connection = admin.acquire().await.expect("connection");
    let new = NewWebhook {
        url: "https://hooks.example.com/claims".to_string(),
        events: vec![EventType::BudgetCrossed],
        format: Format::Baton,
    };
    store::insert_webhook(&mut connection, tenant, webhook, &new, "secret", now)
        .await
        .expect("webhook");
    for _ in 0..40 {
        let delivery = NewDelivery {
            id: Uuid::now_v7(),
            webhook_id: webhook,
            event_id: Uuid::now_v7(),
            event: EventType::BudgetCrossed,
            body: "{}",
            now,
        };
        assert!(
            store::insert_delivery(&mut connection, tenant, &delivery)
                .await
                .expect("delivery")
        );
    }
    drop(connection);

    let claims = (0..16).map(|_| {
        let admin = &admin;
        async move { store::claim_due(admin, now, Duration::from_secs(60), 5).await }
    });
    let held = WritesHeld::on(&admin, "notify.deliveries").await;
    let (answers, ()) = tokio::join!(
        futures::future::join_all(claims),
        held.release_once_waiting(&admin, 4)
    );
    let mut claimed: Vec<ClaimedId> = answers
        .into_iter()
        .flat_map(|answer| answer.expect("claim"))
        .collect();
    let taken = claimed.len();
    claimed.sort_by_key(|claim| claim.id);
    claimed.dedup();
    assert_eq!(claimed.len(), taken, "a delivery was claimed twice");
    assert_eq!(taken, 40, "every due delivery was claimed");
}
