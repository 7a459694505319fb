//! `baton pricing import FILE` and `baton usage retention`: the usage context's operator
//! commands.

use anyhow::Context;

use baton_kit::config::{CommonSettings, Env, SecretUrl, load};
use baton_usage::config::{RetentionConfig, UsageSettings};

use crate::migrate;

/// Adds a price file's rows (the repository's schema) and re-prices the usage they affect.
/// Runs with the migration credentials: prices are reference data shared by every tenant.
pub async fn pricing_import(env: &Env, file: &std::path::Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&migrate::admin_url(env)?)
        .await
        .context("connecting")?;
    let imported = baton_usage::pricing::import(&pool, &text)
        .await
        .context("importing prices")?;
    println!(
        "{}",
        serde_json::json!({
            "rowsChanged": imported.rows_changed,
            "usageRepriced": imported.usage_repriced,
        })
    );
    Ok(())
}

/// Runs hook-delivery retention once as the usage maintenance role and prints its journal.
pub async fn retention(env: &Env) -> anyhow::Result<()> {
    let common: CommonSettings = load(env)?;
    let settings: UsageSettings = load(env)?;
    let config = RetentionConfig::from(&settings);
    let pool = baton_kit::db::connect_maintenance(
        common.database_url.0.expose(),
        settings
            .maintenance_database_url
            .as_ref()
            .map(SecretUrl::expose),
        &baton_usage::DB,
        2,
    )
    .await
    .context("connecting as the usage maintenance role")?;
    let journal = baton_usage::retention::run_once(&pool, &config, chrono::Utc::now())
        .await
        .context("running retention")?;
    match journal {
        Some(journal) => println!("{}", serde_json::to_string(&journal)?),
        None => println!("{{\"kept\":true}}"),
    }
    Ok(())
}
