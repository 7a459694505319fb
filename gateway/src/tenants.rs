//! The tenant directory: creating tenants and keys, resolving a presented key.

use sqlx::PgPool;
use uuid::Uuid;

use crate::keys;

/// A tenant and the one key created with it (shown once).
#[derive(Debug, Clone)]
pub struct CreatedTenant {
    pub tenant_id: Uuid,
    pub api_key: String,
}

/// What a key may do. A key has exactly one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Calls the hook-facing API (`/api/v1`); cannot sign in to the console.
    Ingest,
    /// Signs in to `/console`; refused by the API.
    Console,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Ingest => "ingest",
            Scope::Console => "console",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "ingest" => Some(Scope::Ingest),
            "console" => Some(Scope::Console),
            _ => None,
        }
    }

    /// A stored key's scope: console only when it says so (the migration made every other key
    /// an ingest key, and the table's check allows nothing else).
    pub fn of_stored(scopes: &[String]) -> Scope {
        if scopes.iter().any(|scope| scope == "console") {
            Scope::Console
        } else {
            Scope::Ingest
        }
    }
}

/// A stored key, as the auth check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub tenant_id: Uuid,
    pub secret_sha256: Vec<u8>,
    pub scopes: Vec<String>,
    /// The person the key speaks for (ingest keys; `None` reads as unattributed).
    pub member: Option<String>,
}

impl StoredKey {
    pub fn scope(&self) -> Scope {
        Scope::of_stored(&self.scopes)
    }
}

/// Why a key could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateKeyError {
    #[error("no live tenant {0}")]
    UnknownTenant(Uuid),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Mints one more key for a live tenant, speaking for `member` when given (already
/// validated with `baton_kit::member::member`); the text is returned once and never stored.
pub async fn create_key(
    pool: &PgPool,
    tenant_id: Uuid,
    scope: Scope,
    member: Option<&str>,
) -> Result<String, CreateKeyError> {
    let key = keys::generate();
    let inserted = sqlx::query!(
        "INSERT INTO gateway.api_keys (prefix, tenant_id, secret_sha256, scopes, member) \
         SELECT $1, t.id, $3, ARRAY[$4::text], $5 FROM gateway.tenants AS t \
         WHERE t.id = $2 AND t.deleted_at IS NULL",
        key.prefix,
        tenant_id,
        key.secret_sha256,
        scope.as_str(),
        member,
    )
    .execute(pool)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(CreateKeyError::UnknownTenant(tenant_id));
    }
    Ok(key.text)
}

/// Creates a tenant with one API key, in one transaction.
pub async fn create_tenant(pool: &PgPool, name: &str) -> Result<CreatedTenant, sqlx::Error> {
    let tenant_id = Uuid::now_v7();
    let key = keys::generate();
    let mut transaction = pool.begin().await?;
    sqlx::query!(
        "INSERT INTO gateway.tenants (id, name) VALUES ($1, $2)",
        tenant_id,
        name,
    )
    .execute(&mut *transaction)
    .await?;
    sqlx::query!(
        "INSERT INTO gateway.api_keys (prefix, tenant_id, secret_sha256, scopes) \
         VALUES ($1, $2, $3, ARRAY['ingest'])",
        key.prefix,
        tenant_id,
        key.secret_sha256,
    )
    .execute(&mut *transaction)
    .await?;
    transaction.commit().await?;
    Ok(CreatedTenant {
        tenant_id,
        api_key: key.text,
    })
}

/// Every tenant not deleted, oldest first (the operator's report over all tenants).
pub async fn live_tenants(pool: &PgPool) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar!("SELECT id FROM gateway.tenants WHERE deleted_at IS NULL ORDER BY id")
        .fetch_all(pool)
        .await
}

/// The live key with this prefix (not revoked, tenant not deleted). A read only: nothing is
/// written for a prefix whose secret has not been verified.
#[tracing::instrument(name = "db.gateway.find_key", skip_all)]
pub async fn find_live_key(pool: &PgPool, prefix: &str) -> Result<Option<StoredKey>, sqlx::Error> {
    sqlx::query_as!(
        StoredKey,
        "SELECT k.tenant_id, k.secret_sha256, k.scopes, k.member \
         FROM gateway.api_keys AS k JOIN gateway.tenants AS t ON t.id = k.tenant_id \
         WHERE k.prefix = $1 AND k.revoked_at IS NULL AND t.deleted_at IS NULL",
        prefix,
    )
    .fetch_optional(pool)
    .await
}

/// Records that a key was used, after its secret verified (at most once per cache period).
#[tracing::instrument(name = "db.gateway.touch_key", skip_all)]
pub async fn touch_key(pool: &PgPool, prefix: &str) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE gateway.api_keys SET last_used_at = now() WHERE prefix = $1",
        prefix,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A key as the tenant's list shows it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedKey {
    pub prefix: String,
    pub scopes: Vec<String>,
    pub member: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl ListedKey {
    pub fn scope(&self) -> Scope {
        Scope::of_stored(&self.scopes)
    }
}

/// Every key of a tenant, newest first (revoked ones too, marked), without secrets.
pub async fn list_keys(pool: &PgPool, tenant_id: Uuid) -> Result<Vec<ListedKey>, sqlx::Error> {
    sqlx::query_as!(
        ListedKey,
        "SELECT prefix, scopes, member, created_at, last_used_at, revoked_at \
         FROM gateway.api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, prefix",
        tenant_id,
    )
    .fetch_all(pool)
    .await
}
