//! The briefing's section queries. Each returns at most `limit` items and the total count of
//! matching rows (a window count taken before the limit).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::error::ApiError;

/// Which memories a selector admits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub scope: Option<String>,
    pub project: Option<String>,
    /// With a project: memories without a project join too.
    pub include_unscoped: bool,
}

/// A commitment item with the section's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitmentItemRow {
    pub id: Uuid,
    pub memory_id: Uuid,
    pub topic: String,
    pub status: String,
    pub due_at: Option<DateTime<Utc>>,
    pub total: i64,
}

/// A memory item with the section's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryItemRow {
    pub id: Uuid,
    pub memory_type: String,
    pub topic: String,
    pub scope: String,
    pub project: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub total: i64,
}

/// A `query_as!` reading one briefing section into `$row`: `$1` the tenant, `$2` to `$4` the
/// filter (scope, project, include unscoped), `$5` the section's own argument, `$6` the limit.
macro_rules! section {
    ($row:path, $statement:literal, $tenant_id:expr, $filter:expr, $own:expr, $limit:expr) => {
        sqlx::query_as!(
            $row,
            $statement,
            $tenant_id,
            $filter.scope.as_deref(),
            $filter.project.as_deref(),
            $filter.include_unscoped,
            $own,
            $limit
        )
    };
}

/// Open and waiting commitments of open memories; with `due_before`, only those due earlier.
/// Soonest due first, undated last.
#[tracing::instrument(name = "db.provenance.briefing_commitments", skip_all)]
pub async fn commitments(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    filter: &Filter,
    due_before: Option<DateTime<Utc>>,
    limit: i64,
) -> Result<Vec<CommitmentItemRow>, ApiError> {
    Ok(section!(
        CommitmentItemRow,
        "SELECT c.id, c.memory_id, m.topic, c.status, c.due_at, count(*) OVER () AS \"total!\" \
         FROM provenance.commitments c \
         JOIN provenance.memories m ON m.tenant_id = c.tenant_id AND m.id = c.memory_id \
         WHERE c.tenant_id = $1 AND m.status = 'open' AND c.status IN ('open', 'waiting') \
           AND ($2::text IS NULL OR m.scope = $2) \
           AND ($3::text IS NULL OR m.project = $3 OR ($4 AND m.project IS NULL)) \
           AND ($5::timestamptz IS NULL OR c.due_at < $5) \
         ORDER BY c.due_at ASC NULLS LAST, c.created_at ASC, c.id \
         LIMIT $6",
        tenant_id,
        filter,
        due_before,
        limit
    )
    .fetch_all(connection)
    .await?)
}

/// Open memories of the given types, most recently updated first.
#[tracing::instrument(name = "db.provenance.briefing_memories", skip_all)]
pub async fn newest(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    filter: &Filter,
    memory_types: &[&str],
    limit: i64,
) -> Result<Vec<MemoryItemRow>, ApiError> {
    Ok(section!(
        MemoryItemRow,
        "SELECT m.id, m.memory_type, m.topic, m.scope, m.project, m.created_at, m.updated_at, \
                count(*) OVER () AS \"total!\" \
         FROM provenance.memories m \
         WHERE m.tenant_id = $1 AND m.status = 'open' AND m.memory_type = ANY($5) \
           AND ($2::text IS NULL OR m.scope = $2) \
           AND ($3::text IS NULL OR m.project = $3 OR ($4 AND m.project IS NULL)) \
         ORDER BY m.updated_at DESC, m.id DESC \
         LIMIT $6",
        tenant_id,
        filter,
        memory_types as &[&str],
        limit
    )
    .fetch_all(connection)
    .await?)
}

/// Open blockers and still-open commitments untouched since `untouched_since`, oldest first:
/// the items most likely to have gone stale while their gate cleared.
#[tracing::instrument(name = "db.provenance.briefing_stale", skip_all)]
pub async fn stale(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    filter: &Filter,
    untouched_since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<MemoryItemRow>, ApiError> {
    Ok(section!(
        MemoryItemRow,
        "SELECT m.id, m.memory_type, m.topic, m.scope, m.project, m.created_at, m.updated_at, \
                count(*) OVER () AS \"total!\" \
         FROM provenance.memories m \
         LEFT JOIN provenance.commitments c ON c.tenant_id = m.tenant_id AND c.memory_id = m.id \
         WHERE m.tenant_id = $1 AND m.status = 'open' \
           AND (m.memory_type = 'blocker' \
                OR (m.memory_type = 'commitment' AND c.status IN ('open', 'waiting'))) \
           AND greatest(m.updated_at, coalesce(c.updated_at, m.updated_at)) < $5 \
           AND ($2::text IS NULL OR m.scope = $2) \
           AND ($3::text IS NULL OR m.project = $3 OR ($4 AND m.project IS NULL)) \
         ORDER BY m.updated_at ASC, m.id \
         LIMIT $6",
        tenant_id,
        filter,
        untouched_since,
        limit
    )
    .fetch_all(connection)
    .await?)
}
