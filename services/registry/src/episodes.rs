//! Persistence of `registry.process_episodes` and the `/clear` successor link. Every function
//! takes the caller's transaction.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::liveness::EpisodeTimes;

/// Episodes one read returns (newest first).
pub const MAX_EPISODES_READ: i64 = 50;

/// Why an episode ended, as the sidecar reports it on its last pulse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The watched client process is gone.
    ProcessExited,
    /// The session closed while the process lives on (Claude Code's /clear).
    SessionClosed,
    /// The sidecar was told to stop (uninstall).
    Stopped,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::ProcessExited => "process_exited",
            EndReason::SessionClosed => "session_closed",
            EndReason::Stopped => "stopped",
        }
    }

    pub fn parse(text: &str) -> Option<EndReason> {
        match text {
            "process_exited" => Some(EndReason::ProcessExited),
            "session_closed" => Some(EndReason::SessionClosed),
            "stopped" => Some(EndReason::Stopped),
            _ => None,
        }
    }
}

/// One pulse, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulse {
    pub episode_id: Uuid,
    pub client: String,
    pub client_version: Option<String>,
    pub host_client: Option<String>,
    pub host_id: String,
    pub pid: u32,
    pub end_reason: Option<EndReason>,
    /// The machine's display label, when its owner configured one.
    pub host_label: Option<String>,
}

/// One stored episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episode {
    pub id: Uuid,
    pub client: String,
    pub client_version: Option<String>,
    pub host_client: Option<String>,
    pub host_id: String,
    pub pid: i64,
    pub started_at: DateTime<Utc>,
    pub last_pulse_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
    pub host_label: Option<String>,
}

impl Episode {
    pub fn times(&self) -> EpisodeTimes {
        EpisodeTimes {
            started_at: self.started_at,
            last_pulse_at: self.last_pulse_at,
            ended_at: self.ended_at,
        }
    }
}

/// Records a pulse at `at`: the first pulse of an episode inserts it; later ones move
/// `last_pulse_at` forward only, fill a version learned late, and end it once (the first end
/// wins). A label replaces the stored one unless the pulse is older than the newest seen (a
/// replay); a pulse without a label keeps it. An episode id already used by another session is
/// left alone (false).
#[tracing::instrument(name = "db.registry.record_pulse", skip_all)]
pub async fn record_pulse(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
    pulse: &Pulse,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let ended_at = pulse.end_reason.map(|_| at);
    let written = sqlx::query!(
        "INSERT INTO registry.process_episodes (tenant_id, id, session_run_id, client, \
           client_version, host_client, host_id, pid, started_at, last_pulse_at, ended_at, \
           end_reason, host_label) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12) \
         ON CONFLICT (tenant_id, id) DO UPDATE SET \
           last_pulse_at = GREATEST(process_episodes.last_pulse_at, EXCLUDED.last_pulse_at), \
           client_version = COALESCE(process_episodes.client_version, EXCLUDED.client_version), \
           ended_at = COALESCE(process_episodes.ended_at, EXCLUDED.ended_at), \
           end_reason = COALESCE(process_episodes.end_reason, EXCLUDED.end_reason), \
           host_label = CASE \
             WHEN EXCLUDED.last_pulse_at >= process_episodes.last_pulse_at \
               THEN COALESCE(EXCLUDED.host_label, process_episodes.host_label) \
             ELSE COALESCE(process_episodes.host_label, EXCLUDED.host_label) END \
         WHERE process_episodes.session_run_id = EXCLUDED.session_run_id",
        tenant_id,
        pulse.episode_id,
        session_run_id,
        pulse.client,
        pulse.client_version,
        pulse.host_client,
        pulse.host_id,
        i64::from(pulse.pid),
        at,
        ended_at,
        pulse.end_reason.map(EndReason::as_str),
        pulse.host_label,
    )
    .execute(connection)
    .await?;
    Ok(written.rows_affected() == 1)
}

/// A session's newest episodes.
#[tracing::instrument(name = "db.registry.episodes_of", skip_all)]
pub async fn episodes_of(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
) -> Result<Vec<Episode>, sqlx::Error> {
    sqlx::query_as!(
        Episode,
        "SELECT id, client, client_version, host_client, host_id, pid, started_at, \
           last_pulse_at, ended_at, end_reason, host_label \
         FROM registry.process_episodes \
         WHERE tenant_id = $1 AND session_run_id = $2 \
         ORDER BY started_at DESC, id DESC LIMIT $3",
        tenant_id,
        session_run_id,
        MAX_EPISODES_READ,
    )
    .fetch_all(connection)
    .await
}

/// One episode of [`episodes_of_sessions`], with the session it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEpisode {
    pub session_run_id: Uuid,
    pub episode: Episode,
}

/// The newest episodes of each of several sessions in ONE query: per session the same
/// [`MAX_EPISODES_READ`] newest that [`episodes_of`] reads, so a list derives each state
/// exactly as GetLiveness does. Newest first within each session.
#[tracing::instrument(name = "db.registry.episodes_of_sessions", skip_all, fields(sessions = session_run_ids.len()))]
pub async fn episodes_of_sessions(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_ids: &[Uuid],
) -> Result<Vec<SessionEpisode>, sqlx::Error> {
    if session_run_ids.is_empty() {
        return Ok(Vec::new());
    }
    let records = sqlx::query!(
        "SELECT session_run_id, id, client, client_version, host_client, host_id, pid, \
           started_at, last_pulse_at, ended_at, end_reason, host_label \
         FROM ( \
           SELECT *, row_number() OVER ( \
               PARTITION BY session_run_id ORDER BY started_at DESC, id DESC) AS rank \
           FROM registry.process_episodes \
           WHERE tenant_id = $1 AND session_run_id = ANY($2) \
         ) AS ranked \
         WHERE rank <= $3 \
         ORDER BY session_run_id, started_at DESC, id DESC",
        tenant_id,
        session_run_ids,
        MAX_EPISODES_READ,
    )
    .fetch_all(connection)
    .await?;
    Ok(records
        .into_iter()
        .map(|record| SessionEpisode {
            session_run_id: record.session_run_id,
            episode: Episode {
                id: record.id,
                client: record.client,
                client_version: record.client_version,
                host_client: record.host_client,
                host_id: record.host_id,
                pid: record.pid,
                started_at: record.started_at,
                last_pulse_at: record.last_pulse_at,
                ended_at: record.ended_at,
                end_reason: record.end_reason,
                host_label: record.host_label,
            },
        })
        .collect())
}

/// Links a just-inserted session to the session it follows (same agent), when that one exists.
#[tracing::instrument(name = "db.registry.link_follows", skip_all)]
pub async fn link_follows(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
    agent: &str,
    follows_session_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE registry.agent_sessions SET follows_run_id = predecessor.id \
         FROM registry.agent_sessions AS predecessor \
         WHERE agent_sessions.tenant_id = $1 AND agent_sessions.id = $2 \
           AND predecessor.tenant_id = $1 AND predecessor.agent = $3 \
           AND predecessor.session_id = $4 AND predecessor.id <> $2",
        tenant_id,
        session_run_id,
        agent,
        follows_session_id,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// The run a session follows, if any.
#[tracing::instrument(name = "db.registry.follows_of", skip_all)]
pub async fn follows_of(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
) -> Result<Option<Uuid>, sqlx::Error> {
    let follows = sqlx::query_scalar!(
        "SELECT follows_run_id FROM registry.agent_sessions WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        session_run_id,
    )
    .fetch_optional(connection)
    .await?;
    Ok(follows.flatten())
}

/// The newest session (by `opened_at`) that follows a run: its `/clear` successor.
#[tracing::instrument(name = "db.registry.followed_by", skip_all)]
pub async fn followed_by(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM registry.agent_sessions \
         WHERE tenant_id = $1 AND follows_run_id = $2 \
         ORDER BY opened_at DESC, id DESC LIMIT 1",
        tenant_id,
        session_run_id,
    )
    .fetch_optional(connection)
    .await
}
