//! Persistence of `registry.agent_sessions`. Every function takes the caller's transaction, so
//! a decision and its write share one lock and one commit.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use baton_kit::selector::Selector;

use crate::session::{BriefedMemory, Session, Source};

/// The columns [`SessionRecord`] reads, as one literal so every query can `concat!` it.
macro_rules! session_columns {
    () => {
        "id, agent, session_id, source, project, scope, selector, opened_at, closed_at, \
         last_seen_at, activation_epoch, briefing_delivered_at, briefed_memories"
    };
}

/// A session row as stored; other reads flatten it into their own rows.
#[derive(sqlx::FromRow)]
pub(crate) struct SessionRecord {
    id: Uuid,
    agent: String,
    session_id: String,
    source: String,
    project: Option<String>,
    scope: Option<String>,
    selector: Json<Selector>,
    opened_at: DateTime<Utc>,
    closed_at: Option<DateTime<Utc>>,
    last_seen_at: DateTime<Utc>,
    activation_epoch: i64,
    briefing_delivered_at: Option<DateTime<Utc>>,
    briefed_memories: Json<Vec<BriefedMemory>>,
}

impl From<SessionRecord> for Session {
    fn from(record: SessionRecord) -> Session {
        Session {
            id: record.id,
            agent: record.agent,
            session_id: record.session_id,
            // The CHECK constraint admits only these two values.
            source: Source::parse(&record.source).unwrap_or(Source::Startup),
            project: record.project,
            scope: record.scope,
            selector: record.selector.0,
            opened_at: record.opened_at,
            closed_at: record.closed_at,
            last_seen_at: record.last_seen_at,
            activation_epoch: record.activation_epoch,
            briefing_delivered_at: record.briefing_delivered_at,
            briefed_memories: record.briefed_memories.0,
        }
    }
}

/// The row for a natural key, locked for update.
#[tracing::instrument(name = "db.registry.lock_by_key", skip_all)]
pub async fn lock_by_key(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
) -> Result<Option<Session>, sqlx::Error> {
    let record: Option<SessionRecord> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM registry.agent_sessions \
          WHERE tenant_id = $1 AND agent = $2 AND session_id = $3 FOR UPDATE"
    ))
    .bind(tenant_id)
    .bind(agent)
    .bind(session_id)
    .fetch_optional(connection)
    .await?;
    Ok(record.map(Session::from))
}

/// The row for a run id, locked for update.
#[tracing::instrument(name = "db.registry.lock_by_id", skip_all)]
pub async fn lock_by_id(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Session>, sqlx::Error> {
    let record: Option<SessionRecord> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM registry.agent_sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE"
    ))
    .bind(tenant_id)
    .bind(id)
    .fetch_optional(connection)
    .await?;
    Ok(record.map(Session::from))
}

/// Up to two leased-open rows of a project (NULL matches NULL), locked: enough to tell zero,
/// one and several apart.
#[tracing::instrument(name = "db.registry.lock_open_of_project", skip_all)]
pub async fn lock_open_of_project(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    project: Option<&str>,
    lease_cutoff: DateTime<Utc>,
) -> Result<Vec<Session>, sqlx::Error> {
    let records: Vec<SessionRecord> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM registry.agent_sessions \
          WHERE tenant_id = $1 AND project IS NOT DISTINCT FROM $2 \
            AND closed_at IS NULL AND last_seen_at > $3 \
          ORDER BY id LIMIT 2 FOR UPDATE"
    ))
    .bind(tenant_id)
    .bind(project)
    .bind(lease_cutoff)
    .fetch_all(connection)
    .await?;
    Ok(records.into_iter().map(Session::from).collect())
}

/// The row for a natural key, unlocked.
#[tracing::instrument(name = "db.registry.find_by_key", skip_all)]
pub async fn find_by_key(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
) -> Result<Option<Session>, sqlx::Error> {
    let record: Option<SessionRecord> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM registry.agent_sessions WHERE tenant_id = $1 AND agent = $2 AND session_id = $3"
    ))
    .bind(tenant_id)
    .bind(agent)
    .bind(session_id)
    .fetch_optional(connection)
    .await?;
    Ok(record.map(Session::from))
}

/// The row for a run id, unlocked.
#[tracing::instrument(name = "db.registry.find_by_id", skip_all)]
pub async fn find_by_id(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Session>, sqlx::Error> {
    let record: Option<SessionRecord> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM registry.agent_sessions WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant_id)
    .bind(id)
    .fetch_optional(connection)
    .await?;
    Ok(record.map(Session::from))
}

/// The project a natural key's row was opened with (`Some(None)`: a row without project).
/// Identity is frozen at insert, so reading it without a lock is safe.
#[tracing::instrument(name = "db.registry.project_of", skip_all)]
pub async fn project_of(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
) -> Result<Option<Option<String>>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT project FROM registry.agent_sessions \
         WHERE tenant_id = $1 AND agent = $2 AND session_id = $3",
    )
    .bind(tenant_id)
    .bind(agent)
    .bind(session_id)
    .fetch_optional(connection)
    .await
}

/// Takes the tenant+project advisory lock for the rest of the transaction. Open takes it so that
/// "the tenant's single open session of a project" can be decided without a phantom insert.
#[tracing::instrument(name = "db.registry.lock_project", skip_all)]
pub async fn lock_project(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    project: Option<&str>,
) -> Result<(), sqlx::Error> {
    // A project is never empty (1..256 after trim), so "" stands for "no project".
    let key = format!("registry.project:{tenant_id}:{}", project.unwrap_or(""));
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(connection)
        .await?;
    Ok(())
}

/// Inserts a new row unless the natural key exists; `None` when another open got there first.
#[tracing::instrument(name = "db.registry.insert", skip_all)]
pub async fn insert_if_absent(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session: &Session,
) -> Result<Option<Session>, sqlx::Error> {
    let record: Option<SessionRecord> = sqlx::query_as(concat!(
        "INSERT INTO registry.agent_sessions (tenant_id, id, agent, session_id, source, project, \
           scope, selector, opened_at, closed_at, last_seen_at, activation_epoch, \
           briefing_delivered_at, briefed_memories) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT ON CONSTRAINT agent_sessions_natural_key DO NOTHING \
         RETURNING ",
        session_columns!()
    ))
    .bind(tenant_id)
    .bind(session.id)
    .bind(&session.agent)
    .bind(&session.session_id)
    .bind(session.source.as_str())
    .bind(&session.project)
    .bind(&session.scope)
    .bind(Json(&session.selector))
    .bind(session.opened_at)
    .bind(session.closed_at)
    .bind(session.last_seen_at)
    .bind(session.activation_epoch)
    .bind(session.briefing_delivered_at)
    .bind(Json(&session.briefed_memories))
    .fetch_optional(connection)
    .await?;
    Ok(record.map(Session::from))
}

/// Writes the mutable columns of a row the transaction holds locked. Identity columns
/// (agent, session_id, source, project, scope, selector, opened_at) are never rewritten.
#[tracing::instrument(name = "db.registry.update", skip_all)]
pub async fn update(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session: &Session,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE registry.agent_sessions \
         SET closed_at = $3, last_seen_at = $4, activation_epoch = $5, \
             briefing_delivered_at = $6, briefed_memories = $7 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(session.id)
    .bind(session.closed_at)
    .bind(session.last_seen_at)
    .bind(session.activation_epoch)
    .bind(session.briefing_delivered_at)
    .bind(Json(&session.briefed_memories))
    .execute(connection)
    .await?;
    Ok(())
}

/// Stores the last assistant message excerpt of a row the transaction holds.
#[tracing::instrument(name = "db.registry.set_excerpt", skip_all)]
pub async fn set_excerpt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    excerpt: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE registry.agent_sessions SET last_message_excerpt = $3 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(excerpt)
    .execute(connection)
    .await?;
    Ok(())
}

/// One live refresh of a batch: the natural key and the request's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRefresh {
    pub tenant_id: Uuid,
    pub agent: String,
    pub session_id: String,
    pub now: DateTime<Utc>,
    /// `now − lease`: the row is live when `last_seen_at` is strictly after it.
    pub cutoff: DateTime<Utc>,
    pub excerpt: Option<String>,
}

/// A refreshed row, with the natural key it answers.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Refreshed {
    pub tenant_id: Uuid,
    pub agent: String,
    pub session_id: String,
    pub id: Uuid,
    pub activation_epoch: i64,
    pub last_seen_at: DateTime<Utc>,
}

/// Table B's "live" row for a whole batch in one statement and one round trip
/// (`registry.refresh_live_batch`, run in its own implicit transaction that sets each tenant in
/// turn). Only rows live at their request's `now` are refreshed and returned; the predicate is
/// `Lease::liveness == Live` written in SQL. Keys must be unique and sorted (see the batcher).
#[tracing::instrument(name = "db.registry.refresh_live_batch", skip_all, fields(batch = refreshes.len()))]
pub async fn refresh_live_batch(
    pool: &PgPool,
    refreshes: &[LiveRefresh],
) -> Result<Vec<Refreshed>, sqlx::Error> {
    let column = |pick: fn(&LiveRefresh) -> String| refreshes.iter().map(pick).collect::<Vec<_>>();
    let tenant_ids: Vec<Uuid> = refreshes.iter().map(|refresh| refresh.tenant_id).collect();
    let nows: Vec<DateTime<Utc>> = refreshes.iter().map(|refresh| refresh.now).collect();
    let cutoffs: Vec<DateTime<Utc>> = refreshes.iter().map(|refresh| refresh.cutoff).collect();
    let excerpts: Vec<Option<String>> = refreshes
        .iter()
        .map(|refresh| refresh.excerpt.clone())
        .collect();
    sqlx::query_as(
        "SELECT tenant_id, agent, session_id, id, activation_epoch, last_seen_at \
         FROM registry.refresh_live_batch($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant_ids)
    .bind(column(|refresh| refresh.agent.clone()))
    .bind(column(|refresh| refresh.session_id.clone()))
    .bind(nows)
    .bind(cutoffs)
    .bind(excerpts)
    .fetch_all(pool)
    .await
}

/// The excerpt of a row (the closer's input).
#[tracing::instrument(name = "db.registry.excerpt", skip_all)]
pub async fn excerpt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<String>, sqlx::Error> {
    let excerpt: Option<Option<String>> = sqlx::query_scalar(
        "SELECT last_message_excerpt FROM registry.agent_sessions WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(id)
    .fetch_optional(connection)
    .await?;
    Ok(excerpt.flatten())
}

/// Clears the excerpt only while the row is still closed at `epoch`; false when fenced.
#[tracing::instrument(name = "db.registry.consume_excerpt", skip_all)]
pub async fn consume_excerpt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    epoch: i64,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE registry.agent_sessions SET last_message_excerpt = NULL \
         WHERE tenant_id = $1 AND id = $2 AND activation_epoch = $3 AND closed_at IS NOT NULL",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(epoch)
    .execute(connection)
    .await?;
    Ok(result.rows_affected() == 1)
}
