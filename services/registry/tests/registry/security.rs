//! The runtime role and row-level security.

use uuid::Uuid;

use crate::{Harness, startup, t};

#[tokio::test]
async fn runtime_role_is_not_owner_superuser_or_bypassrls() {
    let harness = Harness::new().await;
    let (superuser, bypass): (bool, bool) =
        sqlx::query_as("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            .fetch_one(&harness.runtime_pool)
            .await
            .expect("role attributes");
    assert!(!superuser && !bypass);
    let current: String = sqlx::query_scalar("SELECT current_user::text")
        .fetch_one(&harness.runtime_pool)
        .await
        .expect("user");
    assert_eq!(current, "baton_registry");
    let owner: String = sqlx::query_scalar(
        "SELECT tableowner::text FROM pg_tables WHERE schemaname = 'registry' AND tablename = 'agent_sessions'",
    )
    .fetch_one(&harness.runtime_pool)
    .await
    .expect("owner");
    assert_ne!(owner, current);
    let forced: bool = sqlx::query_scalar(
        "SELECT relforcerowsecurity FROM pg_class WHERE oid = 'registry.agent_sessions'::regclass",
    )
    .fetch_one(&harness.runtime_pool)
    .await
    .expect("rls flag");
    assert!(forced);
}

#[tokio::test]
async fn another_tenant_sees_zero_rows_and_no_tenant_sees_nothing() {
    let (harness, owner) = Harness::with_tenant().await;
    harness.open(owner, &startup("mine"), t(0)).await;
    let mut transaction = baton_kit::db::begin_tenant(&harness.runtime_pool, Uuid::now_v7())
        .await
        .expect("begin");
    let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.agent_sessions")
        .fetch_one(&mut *transaction)
        .await
        .expect("count");
    assert_eq!(visible, 0);
    transaction.rollback().await.expect("rollback");
    let unscoped: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.agent_sessions")
        .fetch_one(&harness.runtime_pool)
        .await
        .expect("count");
    assert_eq!(unscoped, 0, "no tenant set, no rows");
    let mut own = baton_kit::db::begin_tenant(&harness.runtime_pool, owner)
        .await
        .expect("begin");
    let mine: i64 = sqlx::query_scalar("SELECT count(*) FROM registry.agent_sessions")
        .fetch_one(&mut *own)
        .await
        .expect("count");
    assert_eq!(mine, 1);
}

#[tokio::test]
async fn runtime_role_cannot_delete_sessions() {
    let (harness, owner) = Harness::with_tenant().await;
    harness.open(owner, &startup("keep"), t(0)).await;
    let mut transaction = baton_kit::db::begin_tenant(&harness.runtime_pool, owner)
        .await
        .expect("begin");
    let deleted = sqlx::query("DELETE FROM registry.agent_sessions")
        .execute(&mut *transaction)
        .await;
    assert!(
        deleted.is_err(),
        "a close is an update; DELETE is not granted"
    );
}
