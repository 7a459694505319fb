//! Services refuse traffic on a schema that is not the one their binary expects, and two
//! migrations run at once both succeed.
//!
//! "One migration behind" is made by removing the newest applied version from registry's
//! migration table after a full migrate: the version is what the gate reads, so the services
//! see a database one release older than themselves. Putting the row back is the migration
//! catching up; readiness follows without a restart.

use std::time::Duration;

use sqlx::PgPool;
use tokio::process::Command;

use baton_kit::testing::TestDatabase;
use baton_tests::{base_env, binary, spawn_with_logs};

async fn migrate(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(binary("baton"))
        .arg("migrate")
        .args(args)
        .envs(base_env(url, "unused"))
        .output()
        .await
        .expect("run baton migrate")
}

async fn readyz(base_url: &str) -> (u16, serde_json::Value) {
    let answer = reqwest::get(format!("{base_url}/readyz"))
        .await
        .expect("readyz");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("json"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_on_a_schema_one_migration_behind_stay_unready_until_it_matches() {
    let database = TestDatabase::create().await;
    let migrated = migrate(database.url(), &[]).await;
    assert!(migrated.status.success(), "{migrated:?}");
    let admin = PgPool::connect(database.url()).await.expect("admin");
    let (version, checksum, description): (i64, Vec<u8>, String) = sqlx::query_as(
        "DELETE FROM registry._sqlx_migrations WHERE version = \
           (SELECT max(version) FROM registry._sqlx_migrations) \
         RETURNING version, checksum, description",
    )
    .fetch_one(&admin)
    .await
    .expect("one behind");

    let checked = migrate(database.url(), &["--check"]).await;
    let printed = String::from_utf8_lossy(&checked.stdout).into_owned();
    assert!(
        !checked.status.success(),
        "--check fails one behind: {printed}"
    );
    assert!(
        printed.contains(&format!("registry: schema at version {}", version - 1))
            && printed.contains(&format!("binary expects {version}")),
        "{printed}"
    );
    assert!(
        printed.contains("provenance: schema at version"),
        "{printed}"
    );
    let only_gateway = migrate(database.url(), &["--check", "gateway"]).await;
    assert!(only_gateway.status.success(), "{only_gateway:?}");

    let namespace = format!("t{}", uuid::Uuid::new_v4().simple());
    let env = base_env(database.url(), &namespace);
    let (child, addresses, logs) = spawn_with_logs(&["all", "--no-migrate"], &env, "gateway").await;
    let base_url = format!("http://{}", addresses["gateway"]);
    // Wait for the registry's gate to have looked and refused (it logs its first refusal);
    // until the schema changes every later look finds the same state.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !logs.json().iter().any(|line| {
        line["message"] == "schema not ready; refusing traffic until it matches"
            && line["schema"] == "registry"
    }) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the registry's gate never logged its refusal: {:?}",
            logs.raw()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The gateway's own gate looks on its own schedule (one CI run read it before its first
    // look): its schema, which is current, must come to read true while the registry stays out.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (status, body) = loop {
        let (status, body) = readyz(&base_url).await;
        if body["checks"]["schema"] == true {
            break (status, body);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gateway's own schema is current, yet never read so: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["checks"]["registry"], false, "{body}");

    sqlx::query(
        "INSERT INTO registry._sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
         VALUES ($1, $2, now(), true, $3, 0)",
    )
    .bind(version)
    .bind(description)
    .bind(checksum)
    .execute(&admin)
    .await
    .expect("caught up");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = readyz(&base_url).await;
        if status == 200 {
            assert_eq!(body["status"], "ready");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never became ready: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let checked = migrate(database.url(), &["--check"]).await;
    assert!(checked.status.success(), "{checked:?}");
    drop(child);
    baton_kit::testing::delete_bus_namespace(&namespace);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_migrations_at_once_both_succeed_and_leave_a_current_schema() {
    let database = TestDatabase::create().await;
    let (first, second) = tokio::join!(migrate(database.url(), &[]), migrate(database.url(), &[]));
    assert!(first.status.success(), "{first:?}");
    assert!(second.status.success(), "{second:?}");
    let again = migrate(database.url(), &[]).await;
    assert!(again.status.success(), "a third run is a no-op: {again:?}");
    let checked = migrate(database.url(), &["--check"]).await;
    assert!(checked.status.success(), "{checked:?}");
}
