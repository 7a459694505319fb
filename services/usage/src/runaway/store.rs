//! Persistence of runaway policies and episodes, in the caller's tenant transaction.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::runaway::rules::{Policy, Reason};

/// The tenant's policy, or the defaults when it set none.
pub async fn policy(connection: &mut PgConnection, tenant_id: Uuid) -> Result<Policy, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT window_minutes, spend_micros, unattended_minutes \
         FROM usage.runaway_policies WHERE tenant_id = $1",
        tenant_id,
    )
    .fetch_optional(connection)
    .await?;
    Ok(row.map_or_else(Policy::default, |row| Policy {
        window_minutes: row.window_minutes as u32,
        spend_micros: row.spend_micros,
        unattended_minutes: row.unattended_minutes as u32,
    }))
}

/// Replaces the tenant's policy.
pub async fn set_policy(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO usage.runaway_policies \
           (tenant_id, window_minutes, spend_micros, unattended_minutes, updated_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (tenant_id) DO UPDATE SET window_minutes = EXCLUDED.window_minutes, \
           spend_micros = EXCLUDED.spend_micros, \
           unattended_minutes = EXCLUDED.unattended_minutes, updated_at = EXCLUDED.updated_at",
        tenant_id,
        policy.window_minutes as i32,
        policy.spend_micros,
        policy.unattended_minutes as i32,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Opens an episode unless one is open; `true` when this call opened it.
pub async fn open(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
    reason: Reason,
    started_at: DateTime<Utc>,
    spent: i128,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO usage.runaway_episodes \
           (tenant_id, agent, session_id, reason, started_at, spent) \
         VALUES ($1, $2, $3, $4, $5, $6::text::numeric) \
         ON CONFLICT (tenant_id, agent, session_id, reason) WHERE ended_at IS NULL DO NOTHING",
        tenant_id,
        agent,
        session_id,
        reason.as_str(),
        started_at,
        spent.to_string(),
    )
    .execute(connection)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Closes the open episode of a reason at `ended_at`.
pub async fn close(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
    reason: Reason,
    ended_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE usage.runaway_episodes SET ended_at = greatest($5, started_at) \
         WHERE tenant_id = $1 AND agent = $2 AND session_id = $3 AND reason = $4 \
           AND ended_at IS NULL",
        tenant_id,
        agent,
        session_id,
        reason.as_str(),
        ended_at,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// The open episodes' reasons of these sessions, keyed `(agent, session id)`.
pub async fn open_reasons(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    agents: &[String],
    session_ids: &[String],
) -> Result<Vec<(String, String, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT e.agent, e.session_id, e.reason \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.runaway_episodes e ON e.tenant_id = $1 AND e.agent = k.agent \
           AND e.session_id = k.session_id AND e.ended_at IS NULL \
         ORDER BY 1, 2, 3",
        tenant_id,
        agents,
        session_ids,
    )
    .fetch_all(connection)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.agent, row.session_id, row.reason))
        .collect())
}
