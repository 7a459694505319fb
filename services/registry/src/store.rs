//! Persistence of `registry.agent_sessions`. Every function takes the caller's transaction, so
//! a decision and its write share one lock and one commit.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use baton_kit::selector::Selector;

use crate::session::{BriefedMemory, Session};

/// Builds a [`Session`] from the record of any `sqlx::query!` that selects the whole row: `id,
/// agent, session_id, source, project, scope, selector AS "selector: Json<Selector>", opened_at,
/// closed_at, last_seen_at, activation_epoch, briefing_delivered_at, briefed_memories AS
/// "briefed_memories: Json<Vec<BriefedMemory>>"` (the lists, which never show briefed memories,
/// select `'[]'::jsonb` under that name). The list is written out in each statement because
/// sqlx's macros check one string literal against the schema; this macro is what keeps the
/// statements' records and [`Session`] in step.
macro_rules! session_from {
    ($record:ident) => {{
        $crate::session::Session {
            id: $record.id,
            agent: $record.agent,
            session_id: $record.session_id,
            // The CHECK constraint admits only these two values.
            source: $crate::session::Source::parse(&$record.source)
                .unwrap_or($crate::session::Source::Startup),
            project: $record.project,
            scope: $record.scope,
            selector: $record.selector.0,
            opened_at: $record.opened_at,
            closed_at: $record.closed_at,
            last_seen_at: $record.last_seen_at,
            activation_epoch: $record.activation_epoch,
            briefing_delivered_at: $record.briefing_delivered_at,
            briefed_memories: $record.briefed_memories.0,
        }
    }};
}
pub(crate) use session_from;

/// `sqlx::query!` over whole `registry.agent_sessions` rows: the select list [`session_from`]
/// reads, then `$rest` (a string literal: the `WHERE` clause and what follows it), then the
/// statement's arguments.
macro_rules! select_sessions {
    ($rest:literal $(+ $more:literal)*, $($argument:expr),+ $(,)?) => {
        sqlx::query!(
            r#"SELECT id, agent, session_id, source, project, scope,
                 selector AS "selector: Json<Selector>", opened_at, closed_at, last_seen_at,
                 activation_epoch, briefing_delivered_at,
                 briefed_memories AS "briefed_memories: Json<Vec<BriefedMemory>>"
               FROM registry.agent_sessions "#
                + $rest $(+ $more)*,
            $($argument),+
        )
    };
}

/// The two whole-row reads of one locking mode: `$by_key` (the row for a natural key) and
/// `$by_id` (the row for a run id), each statement ending in `$lock`.
macro_rules! row_reads {
    ($lock:literal, $by_key:ident, $by_key_span:literal, $by_id:ident, $by_id_span:literal) => {
        #[doc = concat!("The row for a natural key", $lock, ".")]
        #[tracing::instrument(name = $by_key_span, skip_all)]
        pub async fn $by_key(
            connection: &mut PgConnection,
            tenant_id: Uuid,
            agent: &str,
            session_id: &str,
        ) -> Result<Option<Session>, sqlx::Error> {
            let record = select_sessions!(
                "WHERE tenant_id = $1 AND agent = $2 AND session_id = $3" + $lock,
                tenant_id,
                agent,
                session_id,
            )
            .fetch_optional(connection)
            .await?;
            Ok(record.map(|record| session_from!(record)))
        }

        #[doc = concat!("The row for a run id", $lock, ".")]
        #[tracing::instrument(name = $by_id_span, skip_all)]
        pub async fn $by_id(
            connection: &mut PgConnection,
            tenant_id: Uuid,
            id: Uuid,
        ) -> Result<Option<Session>, sqlx::Error> {
            let record =
                select_sessions!("WHERE tenant_id = $1 AND id = $2" + $lock, tenant_id, id)
                    .fetch_optional(connection)
                    .await?;
            Ok(record.map(|record| session_from!(record)))
        }
    };
}

// Locked for update: the reads a decision takes before it writes.
row_reads!(
    " FOR UPDATE",
    lock_by_key,
    "db.registry.lock_by_key",
    lock_by_id,
    "db.registry.lock_by_id"
);
// Unlocked: identity is frozen at insert, and reads that decide nothing need no lock.
row_reads!(
    "",
    find_by_key,
    "db.registry.find_by_key",
    find_by_id,
    "db.registry.find_by_id"
);

/// Up to two leased-open rows of a project (NULL matches NULL), locked: enough to tell zero,
/// one and several apart.
#[tracing::instrument(name = "db.registry.lock_open_of_project", skip_all)]
pub async fn lock_open_of_project(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    project: Option<&str>,
    lease_cutoff: DateTime<Utc>,
) -> Result<Vec<Session>, sqlx::Error> {
    let records = select_sessions!(
        "WHERE tenant_id = $1 AND project IS NOT DISTINCT FROM $2 \
           AND closed_at IS NULL AND last_seen_at > $3 \
         ORDER BY id LIMIT 2 FOR UPDATE",
        tenant_id,
        project,
        lease_cutoff,
    )
    .fetch_all(connection)
    .await?;
    Ok(records
        .into_iter()
        .map(|record| session_from!(record))
        .collect())
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
    sqlx::query_scalar!(
        "SELECT project FROM registry.agent_sessions \
         WHERE tenant_id = $1 AND agent = $2 AND session_id = $3",
        tenant_id,
        agent,
        session_id,
    )
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
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)
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
    let record = sqlx::query!(
        r#"INSERT INTO registry.agent_sessions (tenant_id, id, agent, session_id, source,
             project, scope, selector, opened_at, closed_at, last_seen_at, activation_epoch,
             briefing_delivered_at, briefed_memories)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
           ON CONFLICT ON CONSTRAINT agent_sessions_natural_key DO NOTHING
           RETURNING id, agent, session_id, source, project, scope,
             selector AS "selector: Json<Selector>", opened_at, closed_at, last_seen_at,
             activation_epoch, briefing_delivered_at,
             briefed_memories AS "briefed_memories: Json<Vec<BriefedMemory>>""#,
        tenant_id,
        session.id,
        session.agent,
        session.session_id,
        session.source.as_str(),
        session.project,
        session.scope,
        Json(&session.selector) as _,
        session.opened_at,
        session.closed_at,
        session.last_seen_at,
        session.activation_epoch,
        session.briefing_delivered_at,
        Json(&session.briefed_memories) as _,
    )
    .fetch_optional(connection)
    .await?;
    Ok(record.map(|record| session_from!(record)))
}

/// Writes the mutable columns of a row the transaction holds locked. Identity columns
/// (agent, session_id, source, project, scope, selector, opened_at) are never rewritten.
#[tracing::instrument(name = "db.registry.update", skip_all)]
pub async fn update(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session: &Session,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE registry.agent_sessions \
         SET closed_at = $3, last_seen_at = $4, activation_epoch = $5, \
             briefing_delivered_at = $6, briefed_memories = $7 \
         WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        session.id,
        session.closed_at,
        session.last_seen_at,
        session.activation_epoch,
        session.briefing_delivered_at,
        Json(&session.briefed_memories) as _,
    )
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
    sqlx::query!(
        "UPDATE registry.agent_sessions SET last_message_excerpt = $3 \
         WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        id,
        excerpt,
    )
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    // The function's result columns carry no NOT NULL; each is a row's column that has one.
    sqlx::query_as!(
        Refreshed,
        r#"SELECT tenant_id AS "tenant_id!", agent AS "agent!", session_id AS "session_id!",
             id AS "id!", activation_epoch AS "activation_epoch!",
             last_seen_at AS "last_seen_at!"
           FROM registry.refresh_live_batch($1, $2, $3, $4, $5, $6)"#,
        &tenant_ids,
        &column(|refresh| refresh.agent.clone()),
        &column(|refresh| refresh.session_id.clone()),
        &nows,
        &cutoffs,
        &excerpts as &[Option<String>],
    )
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
    let excerpt = sqlx::query_scalar!(
        "SELECT last_message_excerpt FROM registry.agent_sessions WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        id,
    )
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
    let result = sqlx::query!(
        "UPDATE registry.agent_sessions SET last_message_excerpt = NULL \
         WHERE tenant_id = $1 AND id = $2 AND activation_epoch = $3 AND closed_at IS NOT NULL",
        tenant_id,
        id,
        epoch,
    )
    .execute(connection)
    .await?;
    Ok(result.rows_affected() == 1)
}
