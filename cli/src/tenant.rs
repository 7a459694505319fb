//! `baton tenant create`.

use anyhow::Context;

use baton_gateway::config::GatewaySettings;
use baton_gateway::tenants::Scope;
use baton_kit::config::{CommonSettings, Env, SecretUrl, load};
use baton_kit::db;

async fn gateway_pool(env: &Env) -> anyhow::Result<sqlx::PgPool> {
    let common: CommonSettings = load(env)?;
    let gateway: GatewaySettings = load(env)?;
    db::connect_runtime(
        common.database_url.0.expose(),
        gateway.database_url.as_ref().map(SecretUrl::expose),
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

fn tenant_id(tenant: &str) -> anyhow::Result<uuid::Uuid> {
    uuid::Uuid::parse_str(tenant.trim())
        .map_err(|_| anyhow::anyhow!("--tenant must be a tenant id (a uuid)"))
}

/// Mints one more key for a live tenant and prints it as one JSON line. A member is for
/// ingest keys only: a console key signs a person in and reports nothing.
pub async fn create_key(
    env: &Env,
    tenant: &str,
    scope: &str,
    member: Option<&str>,
) -> anyhow::Result<()> {
    let tenant_id = tenant_id(tenant)?;
    let scope =
        Scope::parse(scope).ok_or_else(|| anyhow::anyhow!("--scope must be ingest or console"))?;
    let member = member
        .map(|name| {
            baton_kit::member::member(name).map_err(|error| anyhow::anyhow!("--{}", error.detail))
        })
        .transpose()?;
    anyhow::ensure!(
        member.is_none() || scope == Scope::Ingest,
        "--member is for ingest keys: a console key reports nothing to attribute"
    );
    let pool = gateway_pool(env).await?;
    let key = baton_gateway::tenants::create_key(&pool, tenant_id, scope, member.as_deref())
        .await
        .context("creating the key")?;
    let mut line = serde_json::json!({
        "tenantId": tenant_id.to_string(),
        "scope": scope.as_str(),
        "apiKey": key,
    });
    if let Some(member) = member {
        line["member"] = serde_json::json!(member);
    }
    println!("{line}");
    Ok(())
}

/// Prints a tenant's keys, one JSON line each, newest first; never a secret.
pub async fn list_keys(env: &Env, tenant: &str) -> anyhow::Result<()> {
    let tenant_id = tenant_id(tenant)?;
    let pool = gateway_pool(env).await?;
    let keys = baton_gateway::tenants::list_keys(&pool, tenant_id)
        .await
        .context("listing the keys")?;
    for key in keys {
        let line = serde_json::json!({
            "prefix": key.prefix,
            "scope": key.scope().as_str(),
            "member": key.member,
            "createdAt": key.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "lastUsedAt": key.last_used_at
                .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            "revokedAt": key.revoked_at
                .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        });
        println!("{line}");
    }
    Ok(())
}
