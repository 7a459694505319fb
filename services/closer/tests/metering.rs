//! The closer's generation budget against a real database: two passes of one tenant that
//! reserve at once cannot both take its last tokens.

use chrono::{TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_closer::metering::{Meter, PassKey};
use baton_kit::testing::{TestDatabase, WritesHeld, init_logging};

/// Two reservations of 60 tokens against a budget of 100, lined up: the first is held at its
/// insert while the second waits. The second must count the first's reservation, so it is
/// refused; deciding without the tenant's lock, it would count none and both would reserve.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_passes_reserving_at_once_cannot_both_take_the_last_tokens() {
    init_logging();
    let database =
        TestDatabase::migrated(vec![(&baton_closer::DB, baton_closer::migrator())]).await;
    let admin = PgPool::connect(database.url()).await.expect("admin pool");
    let runtime = baton_kit::db::connect_runtime(database.url(), None, &baton_closer::DB, 4)
        .await
        .expect("runtime pool");
    let tenant_id = Uuid::now_v7();
    sqlx::query("INSERT INTO closer.budgets (tenant_id, monthly_token_limit) VALUES ($1, 100)")
        .bind(tenant_id)
        .execute(&admin)
        .await
        .expect("budget");
    let meter = Meter::new(runtime, 1_000_000);
    let now = Utc
        .with_ymd_and_hms(2026, 11, 20, 12, 0, 0)
        .single()
        .expect("valid");
    let reserve = || {
        let pass = PassKey {
            tenant_id,
            run_id: Uuid::now_v7(),
            epoch: 1,
        };
        meter.reserve(pass, 60, now)
    };
    let held = WritesHeld::on(&admin, "closer.usage").await;
    let (first, second, ()) =
        tokio::join!(reserve(), reserve(), held.release_once_waiting(&admin, 2));
    let granted = [first.expect("first"), second.expect("second")]
        .iter()
        .filter(|reservation| reservation.is_some())
        .count();
    assert_eq!(granted, 1);
    let reserved: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(tokens), 0)::bigint FROM closer.usage WHERE kind = 'reservation'",
    )
    .fetch_one(&admin)
    .await
    .expect("sum");
    assert_eq!(reserved, 60);
}
