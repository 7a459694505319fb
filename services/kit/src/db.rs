//! Database plumbing shared by every context.
//!
//! One Postgres cluster, one schema per context, and two roles per context: `<owner>` owns the
//! schema and runs its migrations (NOLOGIN; reached with `SET ROLE` from the admin connection),
//! `<runtime>` is what the service logs in as: not owner, not superuser, no BYPASSRLS, holding
//! only the grants its migrations give it. Each context's migration table lives inside its own
//! schema, so two contexts never share one.
//!
//! Tenant isolation is row-level security on `baton.tenant_id`, set with
//! `set_config(..., true)` inside the transaction that uses it ([`begin_tenant`]); a pooled
//! connection never carries a tenant from one request into the next.

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

/// Where one bounded context lives in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextDb {
    /// Schema name, e.g. `registry`.
    pub schema: &'static str,
    /// Role that owns the schema and runs migrations.
    pub owner_role: &'static str,
    /// Role the running service logs in as.
    pub runtime_role: &'static str,
    /// Role for cross-tenant maintenance (sweeps, outbox relays): BYPASSRLS, never used on the
    /// request path. `None` for contexts without such work.
    pub maintenance_role: Option<&'static str>,
}

/// A context's [`ContextDb`] by the convention every context follows: schema `$schema`, roles
/// `baton_<schema>_owner` (migrations), `baton_<schema>` (the running service) and, with
/// `maintenance`, `baton_<schema>_maint`.
#[macro_export]
macro_rules! context_db {
    ($schema:literal) => {
        $crate::db::ContextDb {
            schema: $schema,
            owner_role: concat!("baton_", $schema, "_owner"),
            runtime_role: concat!("baton_", $schema),
            maintenance_role: None,
        }
    };
    ($schema:literal, maintenance) => {
        $crate::db::ContextDb {
            maintenance_role: Some(concat!("baton_", $schema, "_maint")),
            ..$crate::context_db!($schema)
        }
    };
}

/// Errors preparing or migrating a context.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database url is invalid: {0}")]
    InvalidUrl(String),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

fn options(url: &str) -> Result<PgConnectOptions, DbError> {
    PgConnectOptions::from_str(url).map_err(|error| DbError::InvalidUrl(error.to_string()))
}

/// The database name a URL points at (`baton` by default).
pub fn database_name(url: &str) -> Result<String, DbError> {
    Ok(options(url)?.get_database().unwrap_or("baton").to_string())
}

/// Creates the URL's database when it does not exist yet (connecting to `postgres` to do so).
pub async fn ensure_database(admin_url: &str) -> Result<(), DbError> {
    let name = database_name(admin_url)?;
    let mut connection =
        PgConnection::connect_with(&options(admin_url)?.database("postgres")).await?;
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS "exists!""#,
        name,
    )
    .fetch_one(&mut connection)
    .await?;
    if !exists {
        let statement = format!("CREATE DATABASE {}", quote_ident(&name));
        match sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut connection)
            .await
        {
            Ok(_) => {}
            // A concurrent creator won: the database exists, which is all we wanted.
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42P04") => {}
            Err(error) => return Err(error.into()),
        }
    }
    connection.close().await?;
    Ok(())
}

/// Drops a database, disconnecting its sessions (tests).
pub async fn drop_database(admin_url: &str) -> Result<(), DbError> {
    let name = database_name(admin_url)?;
    let mut connection =
        PgConnection::connect_with(&options(admin_url)?.database("postgres")).await?;
    let statement = format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        quote_ident(&name)
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
        .execute(&mut connection)
        .await?;
    connection.close().await?;
    Ok(())
}

/// Double-quotes an identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the context's roles and schema if missing. Roles are cluster-wide, so creation
/// tolerates a concurrent creator (another database being migrated at the same moment).
async fn prepare_context(admin: &mut PgConnection, context: &ContextDb) -> Result<(), DbError> {
    let owner = quote_ident(context.owner_role);
    let runtime = quote_ident(context.runtime_role);
    let schema = quote_ident(context.schema);
    let statements = [
        create_role_statement(context.owner_role, "NOLOGIN"),
        create_role_statement(
            context.runtime_role,
            "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS",
        ),
        format!("CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION {owner}"),
        // Grants in a context's migrations may name its maintenance role, so it exists first.
        format!("REVOKE ALL ON SCHEMA {schema} FROM PUBLIC"),
        format!("GRANT USAGE ON SCHEMA {schema} TO {runtime}"),
    ];
    for statement in statements {
        run_with_retry(admin, statement).await?;
    }
    if let Some(maintenance) = context.maintenance_role {
        let create = create_role_statement(
            maintenance,
            "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE BYPASSRLS",
        );
        run_with_retry(admin, create).await?;
        let grant = format!(
            "GRANT USAGE ON SCHEMA {schema} TO {}",
            quote_ident(maintenance)
        );
        run_with_retry(admin, grant).await?;
    }
    Ok(())
}

fn create_role_statement(role: &str, attributes: &str) -> String {
    let literal = role.replace('\'', "''");
    format!(
        "DO $$ BEGIN \
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{literal}') THEN \
             CREATE ROLE {} {attributes}; \
           END IF; \
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; \
         END $$",
        quote_ident(role)
    )
}

/// Catalog updates on cluster-wide objects can fail with "tuple concurrently updated" when two
/// migrations touch the same role at once; a short retry settles it.
async fn run_with_retry(connection: &mut PgConnection, statement: String) -> Result<(), DbError> {
    let mut attempt = 0;
    loop {
        match sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
            .execute(&mut *connection)
            .await
        {
            Ok(_) => return Ok(()),
            Err(sqlx::Error::Database(error))
                if attempt < 10 && is_concurrent_catalog_error(&*error) =>
            {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

fn is_concurrent_catalog_error(error: &dyn sqlx::error::DatabaseError) -> bool {
    matches!(
        error.code().as_deref(),
        Some("XX000") | Some("23505") | Some("40P01")
    )
}

/// A session-level advisory lock held for a whole `baton migrate`, released when dropped (its
/// connection closes) or when the process dies (Postgres releases it with the session).
pub struct MigrationLock {
    _connection: PgConnection,
}

impl MigrationLock {
    pub async fn acquire(admin_url: &str) -> Result<MigrationLock, DbError> {
        let mut connection = PgConnection::connect_with(&options(admin_url)?).await?;
        sqlx::query!("SELECT pg_advisory_lock(hashtextextended('baton.migrate', 0))")
            .execute(&mut connection)
            .await?;
        Ok(MigrationLock {
            _connection: connection,
        })
    }
}

/// Prepares the context and applies its migrations as the owner role, with the migration table
/// inside the context's own schema.
pub async fn migrate_context(
    admin_url: &str,
    context: &ContextDb,
    mut migrator: Migrator,
) -> Result<(), DbError> {
    let mut admin = PgConnection::connect_with(&options(admin_url)?).await?;
    prepare_context(&mut admin, context).await?;
    let set_role = format!("SET ROLE {}", quote_ident(context.owner_role));
    sqlx::raw_sql(sqlx::AssertSqlSafe(set_role))
        .execute(&mut admin)
        .await?;
    let table = format!("{}._sqlx_migrations", context.schema);
    migrator.dangerous_set_table_name(table.clone());
    migrator.run(&mut admin).await?;
    // Each running service compares the applied migrations with its own before it reports
    // ready (`schema::gate`); versions and checksums only, no tenant data.
    let mut readers = vec![quote_ident(context.runtime_role)];
    readers.extend(context.maintenance_role.map(quote_ident));
    let grant = format!("GRANT SELECT ON TABLE {table} TO {}", readers.join(", "));
    sqlx::raw_sql(sqlx::AssertSqlSafe(grant))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    Ok(())
}

/// A pool that logs in as the context's runtime role on the base URL's host and database.
/// `override_url`, when set, is used as-is (a deployment with per-context credentials).
pub async fn connect_runtime(
    base_url: &str,
    override_url: Option<&str>,
    context: &ContextDb,
    max_connections: u32,
) -> Result<PgPool, DbError> {
    let connect = match override_url {
        Some(url) => options(url)?,
        None => options(base_url)?.username(context.runtime_role),
    }
    .application_name(context.schema);
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(connect)
        .await?;
    Ok(pool)
}

/// A pool logging in as the context's maintenance role (cross-tenant, BYPASSRLS).
/// `override_url`, when set, is used as-is.
pub async fn connect_maintenance(
    base_url: &str,
    override_url: Option<&str>,
    context: &ContextDb,
    max_connections: u32,
) -> Result<PgPool, DbError> {
    let role = context.maintenance_role.ok_or_else(|| {
        DbError::InvalidUrl(format!("{} has no maintenance role", context.schema))
    })?;
    let connect = match override_url {
        Some(url) => options(url)?,
        None => options(base_url)?.username(role),
    }
    .application_name(context.schema);
    Ok(PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(connect)
        .await?)
}

/// Begins a transaction scoped to one tenant: row-level security sees only that tenant's rows.
pub async fn begin_tenant(
    pool: &PgPool,
    tenant_id: Uuid,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    let mut transaction = pool.begin().await?;
    sqlx::query!(
        "SELECT set_config('baton.tenant_id', $1, true)",
        tenant_id.to_string(),
    )
    .fetch_one(&mut *transaction)
    .await?;
    Ok(transaction)
}

/// Whether an error is a unique violation of the named constraint.
pub fn is_unique_violation(error: &sqlx::Error, constraint: &str) -> bool {
    match error {
        sqlx::Error::Database(database_error) => {
            database_error.code().as_deref() == Some("23505")
                && database_error.constraint() == Some(constraint)
        }
        _ => false,
    }
}
