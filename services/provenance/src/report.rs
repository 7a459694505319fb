//! The closer report's provenance figures, as counts and metadata only (never content):
//!
//! - `WriteCounts`: write events since an instant (create, revise, resolve, unresolve,
//!   archive; not imports, implicit supersedes or embedding failures, which no one wrote),
//!   those stamped with a session run, and memories created.
//! - `CommitmentTrails`: for up to [`MAX_TRAILS`] memory ids, the commitment's status now and
//!   every status-changing event (resolve, unresolve, archive) with its actor and run, oldest
//!   first. Ids that name no memory of the tenant answer nothing.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use crate::service::Provenance;

/// Most memory ids one `CommitmentTrails` call takes.
pub const MAX_TRAILS: usize = 500;

/// Write counts since an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteCounts {
    pub writes: i64,
    pub attributed: i64,
    pub created: i64,
}

/// One status-changing event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailEvent {
    pub memory_id: Uuid,
    pub event_kind: String,
    pub actor_kind: String,
    pub session_run_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A memory's commitment status now and its status-changing events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trail {
    pub memory_id: Uuid,
    /// Empty when the memory is not a commitment.
    pub status: String,
    pub memory_status: String,
    pub events: Vec<TrailEvent>,
}

#[tracing::instrument(name = "db.provenance.write_counts", skip_all)]
async fn write_counts(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    since: DateTime<Utc>,
) -> Result<WriteCounts, ApiError> {
    Ok(sqlx::query_as!(
        WriteCounts,
        r#"SELECT count(*) AS "writes!", count(session_run_id) AS "attributed!",
                  count(*) FILTER (WHERE event_kind = 'create') AS "created!"
           FROM provenance.memory_events
           WHERE tenant_id = $1 AND created_at >= $2 AND actor_kind <> 'importer'
             AND event_kind IN ('create', 'revise', 'resolve', 'unresolve', 'archive')"#,
        tenant_id,
        since,
    )
    .fetch_one(connection)
    .await?)
}

#[tracing::instrument(name = "db.provenance.trails", skip_all)]
async fn trails(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    memory_ids: &[Uuid],
) -> Result<Vec<Trail>, ApiError> {
    let heads = sqlx::query!(
        r#"SELECT m.id, c.status AS "status?", m.status AS memory_status
           FROM provenance.memories m
           LEFT JOIN provenance.commitments c
             ON c.tenant_id = m.tenant_id AND c.memory_id = m.id
           WHERE m.tenant_id = $1 AND m.id = ANY($2)"#,
        tenant_id,
        memory_ids,
    )
    .fetch_all(&mut *connection)
    .await?;
    let events = sqlx::query_as!(
        TrailEvent,
        "SELECT memory_id, event_kind, actor_kind, session_run_id, created_at \
         FROM provenance.memory_events \
         WHERE tenant_id = $1 AND memory_id = ANY($2) \
           AND event_kind IN ('resolve', 'unresolve', 'archive') \
         ORDER BY memory_id, id",
        tenant_id,
        memory_ids,
    )
    .fetch_all(connection)
    .await?;
    Ok(heads
        .into_iter()
        .map(|head| Trail {
            memory_id: head.id,
            status: head.status.unwrap_or_default(),
            memory_status: head.memory_status,
            events: events
                .iter()
                .filter(|event| event.memory_id == head.id)
                .cloned()
                .collect(),
        })
        .collect())
}

/// Validates a trail request's ids: 1..=[`MAX_TRAILS`] uuids, duplicates dropped.
pub fn trail_ids(ids: &[String]) -> Result<Vec<Uuid>, ApiError> {
    if ids.is_empty() || ids.len() > MAX_TRAILS {
        return Err(ApiError::invalid_input(format!(
            "memoryIds must hold 1 to {MAX_TRAILS} ids"
        )));
    }
    let mut parsed = Vec::with_capacity(ids.len());
    for id in ids {
        let id = crate::validate::memory_id("memoryIds[]", id)?;
        if !parsed.contains(&id) {
            parsed.push(id);
        }
    }
    Ok(parsed)
}

impl Provenance {
    /// The tenant's write counts since `since`.
    pub async fn write_counts(
        &self,
        tenant_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<WriteCounts, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let counts = write_counts(&mut transaction, tenant_id, since).await?;
        transaction.commit().await?;
        Ok(counts)
    }

    /// The trails of the tenant's memories among `memory_ids`.
    pub async fn trails(
        &self,
        tenant_id: Uuid,
        memory_ids: &[Uuid],
    ) -> Result<Vec<Trail>, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let trails = trails(&mut transaction, tenant_id, memory_ids).await?;
        transaction.commit().await?;
        Ok(trails)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trail_requests_take_one_to_five_hundred_uuids_and_drop_repeats() {
        assert!(trail_ids(&[]).is_err());
        assert!(trail_ids(&["nope".to_string()]).is_err());
        let many: Vec<String> = (0..=MAX_TRAILS)
            .map(|n| Uuid::from_u128(n as u128 + 1).to_string())
            .collect();
        assert!(trail_ids(&many).is_err());
        let id = Uuid::now_v7().to_string();
        assert_eq!(trail_ids(&[id.clone(), id]).expect("valid").len(), 1);
    }
}
