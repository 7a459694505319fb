//! `baton tenant create`.

use anyhow::Context;

use baton_kit::config::{DEFAULT_DATABASE_URL, Env};
use baton_kit::db;

/// Creates a tenant with one key and prints them as one JSON line.
pub async fn create(env: &Env, name: &str) -> anyhow::Result<()> {
    let name = name.trim();
    anyhow::ensure!(
        !name.is_empty() && name.chars().count() <= 200,
        "--name must be 1 to 200 characters"
    );
    let pool = db::connect_runtime(
        &env.string("BATON_DATABASE_URL", DEFAULT_DATABASE_URL),
        env.optional_string("BATON_GATEWAY__DATABASE_URL")
            .as_deref(),
        &baton_gateway::DB,
        1,
    )
    .await
    .context("connecting to the gateway database (has `baton migrate` run?)")?;
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
