//! `baton migrate`: roles, schemas and migrations of every context.

use anyhow::Context;

use baton_kit::config::{DEFAULT_DATABASE_URL, Env};
use baton_kit::db;

/// The admin URL: `BATON_MIGRATE_DATABASE_URL`, else `BATON_DATABASE_URL`. It must be allowed to
/// create roles and schemas (a superuser locally; the migrations Job's credentials in k8s).
pub fn admin_url(env: &Env) -> String {
    env.optional_string("BATON_MIGRATE_DATABASE_URL")
        .unwrap_or_else(|| env.string("BATON_DATABASE_URL", DEFAULT_DATABASE_URL))
}

/// Creates the database if missing, then migrates each context into its own schema.
pub async fn migrate_all(admin_url: &str) -> anyhow::Result<()> {
    db::ensure_database(admin_url)
        .await
        .context("creating the database")?;
    db::migrate_context(admin_url, &baton_registry::DB, baton_registry::migrator())
        .await
        .context("migrating registry")?;
    db::migrate_context(
        admin_url,
        &baton_provenance::DB,
        baton_provenance::migrator(),
    )
    .await
    .context("migrating provenance")?;
    db::migrate_context(admin_url, &baton_triage::DB, baton_triage::migrator())
        .await
        .context("migrating triage")?;
    db::migrate_context(admin_url, &baton_closer::DB, baton_closer::migrator())
        .await
        .context("migrating closer")?;
    db::migrate_context(admin_url, &baton_gateway::DB, baton_gateway::migrator())
        .await
        .context("migrating gateway")?;
    Ok(())
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    migrate_all(&admin_url(env)).await?;
    eprintln!("migrations applied");
    Ok(())
}
