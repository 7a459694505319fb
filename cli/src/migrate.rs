//! `baton migrate`: roles, schemas and migrations of every context.

use anyhow::Context;

use baton_kit::config::{CommonSettings, ConfigError, Env, load};
use baton_kit::{db, schema};

use crate::settings::{ContextUrl, ContextUrls, MigrateSettings};
use crate::target::Target;

/// The admin URL: `BATON_MIGRATE_DATABASE_URL`, else `BATON_DATABASE_URL`. It must be allowed to
/// create roles and schemas (a superuser locally; the migrations Job's credentials in k8s).
pub fn admin_url(env: &Env) -> Result<String, ConfigError> {
    let settings: MigrateSettings = load(env)?;
    let url = match settings.migrate_database_url {
        Some(url) => url,
        None => load::<CommonSettings>(env)?.database_url.0,
    };
    Ok(url.expose().to_string())
}

/// Creates the database if missing, then migrates each context into its own schema.
pub async fn migrate_all(admin_url: &str) -> anyhow::Result<()> {
    db::ensure_database(admin_url)
        .await
        .context("creating the database")?;
    // One migration at a time per database: two Jobs (or a Job and `serve` migrating at
    // start) would otherwise race on grants to cluster-wide roles ("tuple concurrently
    // updated"). The second waits, then finds every migration applied and changes nothing.
    let _lock = db::MigrationLock::acquire(admin_url)
        .await
        .context("taking the migration lock")?;
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
    db::migrate_context(admin_url, &baton_usage::DB, baton_usage::migrator())
        .await
        .context("migrating usage")?;
    db::migrate_context(admin_url, &baton_notify::DB, baton_notify::migrator())
        .await
        .context("migrating notify")?;
    db::migrate_context(admin_url, &baton_gateway::DB, baton_gateway::migrator())
        .await
        .context("migrating gateway")?;
    // The bundled price rows: only new or changed rows are written (and re-price what they
    // affect), so a second migrate changes nothing.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(admin_url)
        .await
        .context("connecting to load prices")?;
    baton_usage::pricing::import(&pool, baton_usage_model::pricing::BUNDLED)
        .await
        .context("loading the bundled price table")?;
    pool.close().await;
    Ok(())
}

/// One context as `--check` sees it: its name, where it lives, its embedded migrations and its
/// own database URL (`BATON_<CONTEXT>__DATABASE_URL`).
struct Checked {
    target: Target,
    db: &'static db::ContextDb,
    migrator: fn() -> sqlx::migrate::Migrator,
    url: fn(&ContextUrls) -> &ContextUrl,
}

const CONTEXTS: [Checked; 7] = [
    Checked {
        target: Target::Registry,
        db: &baton_registry::DB,
        migrator: baton_registry::migrator,
        url: |urls| &urls.registry,
    },
    Checked {
        target: Target::Provenance,
        db: &baton_provenance::DB,
        migrator: baton_provenance::migrator,
        url: |urls| &urls.provenance,
    },
    Checked {
        target: Target::Triage,
        db: &baton_triage::DB,
        migrator: baton_triage::migrator,
        url: |urls| &urls.triage,
    },
    Checked {
        target: Target::Closer,
        db: &baton_closer::DB,
        migrator: baton_closer::migrator,
        url: |urls| &urls.closer,
    },
    Checked {
        target: Target::Usage,
        db: &baton_usage::DB,
        migrator: baton_usage::migrator,
        url: |urls| &urls.usage,
    },
    Checked {
        target: Target::Notify,
        db: &baton_notify::DB,
        migrator: baton_notify::migrator,
        url: |urls| &urls.notify,
    },
    Checked {
        target: Target::Gateway,
        db: &baton_gateway::DB,
        migrator: baton_gateway::migrator,
        url: |urls| &urls.gateway,
    },
];

/// `baton migrate --check [TARGET...]`: one line per context, then success only when every
/// one is current. Each context is read with its own URL when one is set (a pod's init
/// container has only its service's credentials), else with the admin URL.
pub async fn check(env: &Env, targets: &[Target]) -> anyhow::Result<()> {
    let wanted = |target: Target| {
        targets.is_empty() || targets.contains(&Target::All) || targets.contains(&target)
    };
    let urls: ContextUrls = load(env)?;
    let mut behind = Vec::new();
    for context in CONTEXTS.iter().filter(|context| wanted(context.target)) {
        let url = match &(context.url)(&urls).database_url {
            Some(url) => url.expose().to_string(),
            None => admin_url(env)?,
        };
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect(&url)
            .await
            .with_context(|| format!("connecting to check {}", context.db.schema))?;
        let state = schema::state(&pool, context.db, &(context.migrator)())
            .await
            .with_context(|| format!("reading the {} schema version", context.db.schema))?;
        println!("{}: {}", context.db.schema, state.describe());
        if !state.is_current() {
            behind.push(context.db.schema);
        }
        pool.close().await;
    }
    if behind.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("schema not current: {}", behind.join(", "))
    }
}

pub async fn run(env: &Env) -> anyhow::Result<()> {
    migrate_all(&admin_url(env)?).await?;
    eprintln!("migrations applied");
    Ok(())
}
