//! `provenance.memory_events`: append-only. The runtime role can insert and read, nothing else.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::memory::{ActorKind, EventKind};

/// Appends one event; returns its uuidv7 id.
#[tracing::instrument(name = "db.provenance.insert_event", skip_all, fields(kind = kind.as_str()))]
pub async fn insert(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    memory_id: Uuid,
    kind: EventKind,
    actor: ActorKind,
    payload: Option<&serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<Uuid, ApiError> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO provenance.memory_events (tenant_id, id, memory_id, event_kind, actor_kind, \
           payload, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        tenant_id,
        id,
        memory_id,
        kind.as_str(),
        actor.as_str(),
        payload,
        now,
    )
    .execute(connection)
    .await?;
    Ok(id)
}

/// One event of a memory's history: metadata and the payload's shape, never its values (the
/// shape is computed in the database so values never leave it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    pub id: Uuid,
    pub event_kind: String,
    pub actor_kind: String,
    pub created_at: DateTime<Utc>,
    pub json_type: Option<String>,
    pub byte_length: Option<i32>,
}

/// A memory's events, oldest first.
#[tracing::instrument(name = "db.provenance.history", skip_all)]
pub async fn history(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    memory_id: Uuid,
) -> Result<Vec<HistoryRow>, ApiError> {
    Ok(sqlx::query_as!(
        HistoryRow,
        r#"SELECT id, event_kind, actor_kind, created_at,
                  jsonb_typeof(payload) AS "json_type?",
                  octet_length(payload::text) AS "byte_length?"
           FROM provenance.memory_events WHERE tenant_id = $1 AND memory_id = $2 ORDER BY id"#,
        tenant_id,
        memory_id,
    )
    .fetch_all(connection)
    .await?)
}

/// The ids of a run's first `limit` events in id order (index-only on the session index).
#[tracing::instrument(name = "db.provenance.run_event_ids", skip_all)]
pub async fn run_event_ids(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>, ApiError> {
    Ok(sqlx::query_scalar!(
        "SELECT id FROM provenance.memory_events \
         WHERE tenant_id = $1 AND session_run_id = $2 \
         ORDER BY id LIMIT $3",
        tenant_id,
        session_run_id.to_string(),
        limit,
    )
    .fetch_all(connection)
    .await?)
}

/// One row of the typed provenance read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEventRow {
    pub id: Uuid,
    pub memory_id: Uuid,
    pub event_kind: String,
    pub actor_kind: String,
    pub created_at: DateTime<Utc>,
}

struct PageRecord {
    total: i64,
    id: Option<Uuid>,
    memory_id: Option<Uuid>,
    event_kind: Option<String>,
    actor_kind: Option<String>,
    created_at: Option<DateTime<Utc>>,
}

/// One page of a run's events after `cursor` (`limit + 1` rows at most, within the first 500)
/// and the count of the run's ids seen (at most 501), in one round trip
/// (`provenance.run_events_page`, which sets the tenant itself).
#[tracing::instrument(name = "db.provenance.run_events_page", skip_all)]
pub async fn run_events_page(
    pool: &PgPool,
    tenant_id: Uuid,
    session_run_id: Uuid,
    cursor: Option<Uuid>,
    limit: u32,
) -> Result<(usize, Vec<RunEventRow>), ApiError> {
    // A set-returning function's columns are of unknown nullability: the count is always
    // there, the event columns are null on the count-only row.
    let records = sqlx::query_as!(
        PageRecord,
        r#"SELECT total AS "total!", id AS "id?", memory_id AS "memory_id?",
                  event_kind AS "event_kind?", actor_kind AS "actor_kind?",
                  created_at AS "created_at?"
           FROM provenance.run_events_page($1, $2, $3, $4)"#,
        tenant_id,
        session_run_id.to_string(),
        cursor,
        limit as i32,
    )
    .fetch_all(pool)
    .await?;
    let total = records.first().map_or(0, |record| record.total as usize);
    let rows = records
        .into_iter()
        .filter_map(|record| {
            Some(RunEventRow {
                id: record.id?,
                memory_id: record.memory_id?,
                event_kind: record.event_kind?,
                actor_kind: record.actor_kind?,
                created_at: record.created_at?,
            })
        })
        .collect();
    Ok((total, rows))
}
