//! `baton tenant create`.

use anyhow::Context;

use baton_gateway::tenants::Scope;
use baton_kit::config::{DEFAULT_DATABASE_URL, Env};
use baton_kit::db;

async fn gateway_pool(env: &Env) -> anyhow::Result<sqlx::PgPool> {
    db::connect_runtime(
        &env.string("BATON_DATABASE_URL", DEFAULT_DATABASE_URL),
        env.optional_string("BATON_GATEWAY__DATABASE_URL")
            .as_deref(),
        &baton_gateway::DB,
        1,
    )
    .await
    .context("connecting to the gateway database (has `baton migrate` run?)")
}

/// Creates a tenant with one key and prints them as one JSON line.
pub async fn create(env: &Env, name: &str) -> anyhow::Result<()> {
    let name = name.trim();
    anyhow::ensure!(
        !name.is_empty() && name.chars().count() <= 200,
        "--name must be 1 to 200 characters"
    );
    let pool = gateway_pool(env).await?;
    let created = baton_gateway::tenants::create_tenant(&pool, name)
        .await
        .context("creating the tenant")?;
    let line = serde_json::json!({
        "tenantId": created.tenant_id.to_string(),
        "apiKey": created.api_key,
    });
    println!("{line}");
    Ok(())
}

/// Mints one more key for a live tenant and prints it as one JSON line.
pub async fn create_key(env: &Env, tenant: &str, scope: &str) -> anyhow::Result<()> {
    let tenant_id = uuid::Uuid::parse_str(tenant.trim())
        .map_err(|_| anyhow::anyhow!("--tenant must be a tenant id (a uuid)"))?;
    let scope =
        Scope::parse(scope).ok_or_else(|| anyhow::anyhow!("--scope must be ingest or console"))?;
    let pool = gateway_pool(env).await?;
    let key = baton_gateway::tenants::create_key(&pool, tenant_id, scope)
        .await
        .context("creating the key")?;
    let line = serde_json::json!({
        "tenantId": tenant_id.to_string(),
        "scope": scope.as_str(),
        "apiKey": key,
    });
    println!("{line}");
    Ok(())
}
