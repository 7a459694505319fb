//! The console's list queries over `registry.agent_sessions` and `registry.process_episodes`.
//! Every function takes the caller's tenant transaction; briefed memories are never read (the
//! lists show none).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

use baton_kit::selector::Selector;

use crate::session::{BriefedMemory, Session};
use crate::session_list::Bounds;
use crate::store::session_from;

/// A listed session: the row, the run it follows and its members.
pub struct Listed {
    pub session: Session,
    pub follows: Option<Uuid>,
    pub members: Vec<String>,
}

/// Builds a [`Listed`] from a list query's record: the session columns, `follows_run_id` and
/// `members`.
macro_rules! listed_from {
    ($record:ident) => {{
        Listed {
            follows: $record.follows_run_id,
            members: $record.members,
            session: session_from!($record),
        }
    }};
}

/// The filters a page's query applies in SQL (the state filter cannot be: it is derived).
pub struct SessionScan<'a> {
    pub bounds: Bounds,
    pub project: Option<&'a str>,
    pub agent: Option<&'a str>,
    /// A member's sessions; [`baton_kit::member::UNATTRIBUTED`]: those no member reported.
    pub member: Option<&'a str>,
    pub rows: i64,
}

/// Up to `scan.rows` sessions inside the bounds, newest opened first (ties: id descending),
/// each with the run it follows. One range scan of `agent_sessions_by_opened`.
#[tracing::instrument(name = "db.registry.sessions_page", skip_all)]
pub async fn sessions_page(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    scan: &SessionScan<'_>,
) -> Result<Vec<Listed>, sqlx::Error> {
    let records = sqlx::query!(
        r#"SELECT id, agent, session_id, source, project, scope,
             selector AS "selector: Json<Selector>", opened_at, closed_at, last_seen_at,
             activation_epoch, briefing_delivered_at,
             '[]'::jsonb AS "briefed_memories!: Json<Vec<BriefedMemory>>", follows_run_id, members
           FROM registry.agent_sessions
           WHERE tenant_id = $1 AND (opened_at, id) < ($2, $3) AND opened_at >= $4
             AND ($5::text IS NULL OR project = $5) AND ($6::text IS NULL OR agent = $6)
             AND ($8::text IS NULL
               OR ($8 = $9 AND cardinality(members) = 0) OR ($8 <> $9 AND $8 = ANY(members)))
           ORDER BY opened_at DESC, id DESC LIMIT $7"#,
        tenant_id,
        scan.bounds.upper.opened_at,
        scan.bounds.upper.id,
        scan.bounds.lower,
        scan.project,
        scan.agent,
        scan.rows,
        scan.member,
        baton_kit::member::UNATTRIBUTED,
    )
    .fetch_all(connection)
    .await?;
    Ok(records
        .into_iter()
        .map(|record| listed_from!(record))
        .collect())
}

/// The sessions of these natural keys (`agents[i]`, `session_ids[i]`), each with the run it
/// follows; keys with no row are absent. One probe of the natural-key index per key.
#[tracing::instrument(name = "db.registry.sessions_by_keys", skip_all)]
pub async fn sessions_by_keys(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agents: &[String],
    session_ids: &[String],
) -> Result<Vec<Listed>, sqlx::Error> {
    let records = sqlx::query!(
        r#"SELECT s.id, s.agent, s.session_id, s.source, s.project, s.scope,
             s.selector AS "selector: Json<Selector>", s.opened_at, s.closed_at,
             s.last_seen_at, s.activation_epoch, s.briefing_delivered_at,
             '[]'::jsonb AS "briefed_memories!: Json<Vec<BriefedMemory>>", s.follows_run_id,
             s.members
           FROM unnest($2::text[], $3::text[]) AS k(agent, session_id)
           JOIN registry.agent_sessions AS s
             ON s.tenant_id = $1 AND s.agent = k.agent AND s.session_id = k.session_id"#,
        tenant_id,
        agents,
        session_ids,
    )
    .fetch_all(connection)
    .await?;
    Ok(records
        .into_iter()
        .map(|record| listed_from!(record))
        .collect())
}

/// A pulse of [`pulses_since`]: the episode's machine-facing fields and its session.
pub struct PulseRow {
    pub pulse: crate::machines::HostPulse,
    pub session: Session,
}

/// Up to `rows` of the tenant's episodes whose last pulse is at or after `since`, newest
/// first, each joined to its session. One range scan of `process_episodes_by_last_pulse`.
#[tracing::instrument(name = "db.registry.pulses_since", skip_all)]
pub async fn pulses_since(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    since: DateTime<Utc>,
    rows: i64,
) -> Result<Vec<PulseRow>, sqlx::Error> {
    let records = sqlx::query!(
        r#"SELECT e.id AS episode_id, e.client, e.client_version, e.host_client, e.host_id,
             e.pid, e.last_pulse_at, e.host_label,
             s.id, s.agent, s.session_id, s.source, s.project, s.scope,
             s.selector AS "selector: Json<Selector>", s.opened_at, s.closed_at,
             s.last_seen_at, s.activation_epoch, s.briefing_delivered_at,
             '[]'::jsonb AS "briefed_memories!: Json<Vec<BriefedMemory>>"
           FROM registry.process_episodes AS e
           JOIN registry.agent_sessions AS s
             ON s.tenant_id = e.tenant_id AND s.id = e.session_run_id
           WHERE e.tenant_id = $1 AND e.last_pulse_at >= $2
           ORDER BY e.last_pulse_at DESC, e.id DESC LIMIT $3"#,
        tenant_id,
        since,
        rows,
    )
    .fetch_all(connection)
    .await?;
    Ok(records
        .into_iter()
        .map(|record| {
            let pulse = crate::machines::HostPulse {
                episode_id: record.episode_id,
                session_run_id: record.id,
                host_id: record.host_id,
                host_label: record.host_label,
                client: record.client,
                client_version: record.client_version,
                host_client: record.host_client,
                pid: record.pid,
                last_pulse_at: record.last_pulse_at,
            };
            PulseRow {
                pulse,
                session: session_from!(record),
            }
        })
        .collect())
}
