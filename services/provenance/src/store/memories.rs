//! `provenance.memories` and `provenance.commitments`.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::db::is_unique_violation;
use baton_kit::error::{ApiError, ErrorCode};

use crate::memory::{CommitmentStatus, MemoryStatus, MemoryType};
use crate::validate::NewMemory;

/// A commitment as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitmentRow {
    pub id: Uuid,
    pub status: CommitmentStatus,
    pub due_at: Option<DateTime<Utc>>,
}

/// A memory with its commitment (when it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRow {
    pub id: Uuid,
    pub memory_type: MemoryType,
    pub topic: String,
    pub content: String,
    pub scope: String,
    pub project: Option<String>,
    pub tags: Vec<String>,
    pub status: MemoryStatus,
    pub predecessor_id: Option<Uuid>,
    pub superseded_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub commitment: Option<CommitmentRow>,
}

struct MemoryRecord {
    id: Uuid,
    memory_type: String,
    topic: String,
    content: String,
    scope: String,
    project: Option<String>,
    tags: Vec<String>,
    status: String,
    predecessor_id: Option<Uuid>,
    superseded_by: Option<Uuid>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    commitment_id: Option<Uuid>,
    commitment_status: Option<String>,
    due_at: Option<DateTime<Utc>>,
}

impl MemoryRecord {
    fn into_row(self) -> Result<MemoryRow, ApiError> {
        let invalid = || ApiError::internal("stored memory has an unknown type or status");
        let commitment = match (self.commitment_id, self.commitment_status) {
            (Some(id), Some(status)) => Some(CommitmentRow {
                id,
                status: CommitmentStatus::parse(&status).ok_or_else(invalid)?,
                due_at: self.due_at,
            }),
            _ => None,
        };
        Ok(MemoryRow {
            id: self.id,
            memory_type: MemoryType::parse(&self.memory_type).ok_or_else(invalid)?,
            topic: self.topic,
            content: self.content,
            scope: self.scope,
            project: self.project,
            tags: self.tags,
            status: MemoryStatus::parse(&self.status).ok_or_else(invalid)?,
            predecessor_id: self.predecessor_id,
            superseded_by: self.superseded_by,
            created_at: self.created_at,
            updated_at: self.updated_at,
            commitment,
        })
    }
}

/// A `query_as!` reading one [`MemoryRecord`] by `$1` tenant and `$2` id, the statement ending
/// in `$tail` (a locking clause or nothing). The commitment's columns come from the outer join,
/// so they are read as nullable.
macro_rules! select_memory {
    ($tail:literal, $tenant_id:expr, $id:expr) => {
        sqlx::query_as!(
            MemoryRecord,
            r#"SELECT m.id, m.memory_type, m.topic, m.content, m.scope, m.project, m.tags,
                      m.status, m.predecessor_id, m.superseded_by, m.created_at, m.updated_at,
                      c.id AS "commitment_id?", c.status AS "commitment_status?",
                      c.due_at AS "due_at?"
               FROM provenance.memories m
               LEFT JOIN provenance.commitments c
                 ON c.tenant_id = m.tenant_id AND c.memory_id = m.id
               WHERE m.tenant_id = $1 AND m.id = $2 "#
                + $tail,
            $tenant_id,
            $id
        )
    };
}

/// A memory by id.
#[tracing::instrument(name = "db.provenance.find_memory", skip_all)]
pub async fn find(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<MemoryRow>, ApiError> {
    let record = select_memory!("", tenant_id, id)
        .fetch_optional(connection)
        .await?;
    record.map(MemoryRecord::into_row).transpose()
}

/// A memory by id, with its row (and its commitment's row) locked for the transaction.
///
/// The commitment is read a second time, locked. The first statement's snapshot is taken
/// before it waits for the memory's lock, and a commitment moves without touching its memory's
/// row, so after a wait that read still shows the commitment as it was before the transaction
/// that held the lock moved it. The second statement starts after the wait and sees what that
/// transaction left.
#[tracing::instrument(name = "db.provenance.lock_memory", skip_all)]
pub async fn lock(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<MemoryRow>, ApiError> {
    let record = select_memory!("FOR UPDATE OF m", tenant_id, id)
        .fetch_optional(&mut *connection)
        .await?;
    let mut row = record.map(MemoryRecord::into_row).transpose()?;
    if let Some(commitment) = row.as_mut().and_then(|row| row.commitment.as_mut()) {
        let now = sqlx::query!(
            "SELECT status, due_at FROM provenance.commitments \
             WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
            tenant_id,
            commitment.id,
        )
        .fetch_one(connection)
        .await?;
        commitment.status = CommitmentStatus::parse(&now.status)
            .ok_or_else(|| ApiError::internal("stored commitment has an unknown status"))?;
        commitment.due_at = now.due_at;
    }
    Ok(row)
}

/// Where a new memory comes from, when it revises another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lineage<'a> {
    pub predecessor_id: Uuid,
    pub edge_intent: &'a str,
}

/// Inserts an open memory; a live duplicate (same type, topic and content) is 409
/// `duplicate_memory`.
#[tracing::instrument(name = "db.provenance.insert_memory", skip_all)]
pub async fn insert(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    memory: &NewMemory,
    lineage: Option<Lineage<'_>>,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let result = sqlx::query!(
        "INSERT INTO provenance.memories (tenant_id, id, memory_type, topic, content, \
           content_sha256, scope, project, tags, status, predecessor_id, edge_intent, \
           created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'open', $10, $11, $12, $12)",
        tenant_id,
        id,
        memory.memory_type.as_str(),
        memory.topic,
        memory.content,
        memory.content_sha256(),
        memory.scope,
        memory.project.as_deref(),
        &memory.tags,
        lineage.map(|lineage| lineage.predecessor_id),
        lineage.map(|lineage| lineage.edge_intent),
        now,
    )
    .execute(connection)
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(error) if is_unique_violation(&error, "memories_live_content") => Err(ApiError::new(
            ErrorCode::DuplicateMemory,
            "a live memory with this type, topic and content exists",
        )),
        Err(error) => Err(error.into()),
    }
}

/// Inserts the commitment of a commitment memory.
#[tracing::instrument(name = "db.provenance.insert_commitment", skip_all)]
pub async fn insert_commitment(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    memory_id: Uuid,
    status: CommitmentStatus,
    due_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Uuid, ApiError> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO provenance.commitments (tenant_id, id, memory_id, status, due_at, \
           created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        tenant_id,
        id,
        memory_id,
        status.as_str(),
        due_at,
        now,
    )
    .execute(connection)
    .await?;
    Ok(id)
}

/// Runs a conditional `UPDATE` of one row (a `sqlx::query!` statement and its arguments) on
/// `$connection`: true when it moved the row, false when the row no longer met the condition.
macro_rules! moved_one {
    ($connection:expr, $statement:literal $(, $arg:expr)* $(,)?) => {
        sqlx::query!($statement $(, $arg)*)
            .execute($connection)
            .await
            .map(|result| result.rows_affected() == 1)
            .map_err(ApiError::from)
    };
}

/// Compare-and-set of a memory's status; false when it was no longer `from`.
#[tracing::instrument(name = "db.provenance.set_memory_status", skip_all)]
pub async fn set_status(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    from: MemoryStatus,
    to: MemoryStatus,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    moved_one!(
        connection,
        "UPDATE provenance.memories SET status = $4, updated_at = $5, \
           valid_to = CASE WHEN $4 = 'open' THEN NULL ELSE $5::timestamptz END \
         WHERE tenant_id = $1 AND id = $2 AND status = $3",
        tenant_id,
        id,
        from.as_str(),
        to.as_str(),
        now,
    )
}

/// Marks an open memory superseded by `successor_id`; false when it was no longer open.
#[tracing::instrument(name = "db.provenance.supersede", skip_all)]
pub async fn supersede(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    successor_id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    moved_one!(
        connection,
        "UPDATE provenance.memories SET status = 'superseded', superseded_by = $3, \
           updated_at = $4, valid_to = $4 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'open'",
        tenant_id,
        id,
        successor_id,
        now,
    )
}

/// Compare-and-set of a commitment's status; false when it was no longer `from`.
#[tracing::instrument(name = "db.provenance.set_commitment_status", skip_all)]
pub async fn set_commitment_status(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    commitment_id: Uuid,
    from: CommitmentStatus,
    to: CommitmentStatus,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    moved_one!(
        connection,
        "UPDATE provenance.commitments SET status = $4, updated_at = $5 \
         WHERE tenant_id = $1 AND id = $2 AND status = $3",
        tenant_id,
        commitment_id,
        from.as_str(),
        to.as_str(),
        now,
    )
}
