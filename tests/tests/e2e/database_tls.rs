//! The stack over TLS to Postgres: a private cluster that rejects every TCP connection that is
//! not TLS, a CA made in the test, and Baton configured only by `BATON_DATABASE_SSLMODE` and
//! `BATON_DATABASE_SSLROOTCERT` on a plain URL.

use serde_json::json;

use baton_tests::Baton;
use baton_tests::private_postgres::PrivatePostgres;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stack_runs_over_verified_tls_to_postgres() {
    let (cluster, ca) = PrivatePostgres::start_with_tls();
    let ca = ca.to_string_lossy().to_string();
    let plain = cluster.admin_url();
    let refused = sqlx::PgPool::connect(&format!("{plain}?sslmode=disable")).await;
    assert!(
        refused.is_err(),
        "the cluster refuses connections without TLS"
    );
    let verified = format!("{plain}?sslmode=verify-full&sslrootcert={ca}");
    let database = baton_kit::testing::TestDatabase::create_on(&verified).await;
    // The processes get the plain URL and the two TLS variables, nothing in the URL.
    let plain_database_url = database.url().split('?').next().expect("url").to_string();
    let baton = Baton::start_on_database(
        database,
        &[
            ("BATON_DATABASE_URL", plain_database_url.as_str()),
            ("BATON_DATABASE_SSLMODE", "verify-full"),
            ("BATON_DATABASE_SSLROOTCERT", ca.as_str()),
        ],
    )
    .await;
    let (_, client) = baton.tenant_client("tls").await;
    client
        .open(&json!({"agent": "claude-code", "sessionId": "tls-1", "source": "startup"}))
        .await;
    let admin = baton.admin().await;
    let (encrypted, plain_connections): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
         FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.usename::text LIKE 'baton%'",
    )
    .fetch_one(&admin)
    .await
    .expect("pg_stat_ssl");
    assert!(encrypted > 0, "Baton's roles are connected over TLS");
    assert_eq!(plain_connections, 0, "and none without it");
}
