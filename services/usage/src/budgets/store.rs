//! Persistence of budgets and their crossing ledger. Every function takes the caller's tenant
//! transaction (row-level security as every read).

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// A stored budget.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Budget {
    pub id: Uuid,
    pub scope: String,
    pub subject: Option<String>,
    pub period: String,
    pub limit_micros: i64,
    pub thresholds: Vec<i32>,
    pub timezone: String,
    pub created_at: DateTime<Utc>,
}

/// Most budgets one tenant may keep.
pub const MAX_BUDGETS: i64 = 100;

/// Inserts `budget` unless the tenant already keeps [`MAX_BUDGETS`]; `false` when it does.
pub async fn insert(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    budget: &Budget,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO usage.budgets \
           (tenant_id, id, scope, subject, period, limit_micros, thresholds, timezone, created_at) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 \
         WHERE (SELECT count(*) FROM usage.budgets WHERE tenant_id = $1) < $10",
        tenant_id,
        budget.id,
        &budget.scope,
        budget.subject.as_deref(),
        &budget.period,
        budget.limit_micros,
        &budget.thresholds,
        &budget.timezone,
        budget.created_at,
        MAX_BUDGETS,
    )
    .execute(connection)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The tenant's budgets, oldest first.
pub async fn all(
    connection: &mut PgConnection,
    tenant_id: Uuid,
) -> Result<Vec<Budget>, sqlx::Error> {
    sqlx::query_as!(
        Budget,
        "SELECT id, scope, subject, period, limit_micros, thresholds, timezone, created_at \
         FROM usage.budgets WHERE tenant_id = $1 ORDER BY created_at, id",
        tenant_id,
    )
    .fetch_all(connection)
    .await
}

/// Deletes one budget (and, by cascade, its crossings); `false` when there was none.
pub async fn delete(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query!(
        "DELETE FROM usage.budgets WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        id,
    )
    .execute(connection)
    .await?;
    Ok(deleted.rows_affected() == 1)
}

/// What the budget watches spent in `[start, end)`, 10⁻¹⁵ USD, from the rollups (a period
/// starts at a local midnight, a whole number of 15-minute buckets).
pub async fn spend(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    budget: &Budget,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<i128, sqlx::Error> {
    let total: Option<String> = sqlx::query_scalar!(
        "SELECT sum(cost)::text FROM usage.rollups \
         WHERE tenant_id = $1 AND bucket >= $2 AND bucket < $3 \
           AND ($4 <> 'project' OR project_slug = $5) AND ($4 <> 'member' OR member = $5)",
        tenant_id,
        start,
        end,
        &budget.scope,
        budget.subject.as_deref(),
    )
    .fetch_one(connection)
    .await?;
    Ok(total
        .and_then(|text| text.split('.').next().and_then(|whole| whole.parse().ok()))
        .unwrap_or(0))
}

/// The thresholds already crossed in the period starting `first_day`.
pub async fn crossed(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    budget_id: Uuid,
    first_day: NaiveDate,
) -> Result<Vec<u32>, sqlx::Error> {
    let rows: Vec<i32> = sqlx::query_scalar!(
        "SELECT threshold FROM usage.budget_crossings \
         WHERE tenant_id = $1 AND budget_id = $2 AND period_start = $3",
        tenant_id,
        budget_id,
        first_day.to_string(),
    )
    .fetch_all(connection)
    .await?;
    Ok(rows.into_iter().map(|threshold| threshold as u32).collect())
}

/// Records one crossing; `false` when it was recorded already (by anyone, ever).
pub async fn record_crossing(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    budget_id: Uuid,
    first_day: NaiveDate,
    threshold: u32,
    spent: i128,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO usage.budget_crossings \
           (tenant_id, budget_id, period_start, threshold, crossed_at, spent) \
         VALUES ($1, $2, $3, $4, $5, $6::text::numeric) ON CONFLICT DO NOTHING",
        tenant_id,
        budget_id,
        first_day.to_string(),
        threshold as i32,
        at,
        spent.to_string(),
    )
    .execute(connection)
    .await?;
    Ok(inserted.rows_affected() == 1)
}
