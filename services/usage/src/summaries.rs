//! The session summary `ListSessions` and `SessionFigures` both answer: a stored session row with
//! its figures (tokens, cost, requests, the unpriced tokens by model, server-tool calls) and its
//! agent count. One
//! assembly for both reads, so the console's list and a page of `ListSessions` can never sum a
//! session two ways.

use std::collections::HashMap;

use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, Row};
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::aggregate::{Aggregated, USAGE_SUMS};
use crate::figures::Sums;
use crate::keys::SessionKey;
use crate::store::db_error;
use crate::tree::{SessionRow, summary};

/// A `usage.sessions` row selected with the summary's columns (`agent, session_id,
/// project_slug, host_ids, members, client_versions, output_under_reported, first_activity_at,
/// last_activity_at`).
pub fn session_row(row: &PgRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        agent: row.try_get("agent")?,
        session_id: row.try_get("session_id")?,
        project_slug: row.try_get("project_slug")?,
        host_ids: row.try_get("host_ids")?,
        members: row.try_get("members")?,
        client_versions: row.try_get("client_versions")?,
        output_under_reported: row.try_get("output_under_reported")?,
        first_activity_at: row.try_get("first_activity_at")?,
        last_activity_at: row.try_get("last_activity_at")?,
        ..SessionRow::default()
    })
}

/// One model's aggregated usage within one session, as the figures query returns it.
#[derive(Debug, sqlx::FromRow)]
struct ModelFigure {
    agent: String,
    session_id: String,
    model: String,
    #[sqlx(flatten)]
    sums: Aggregated,
}

/// The summaries of `sessions`, in their order, read in the caller's (tenant) transaction.
pub async fn summarise(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    sessions: &[SessionRow],
) -> Result<Vec<proto::SessionSummary>, ApiError> {
    let (agents, ids): (Vec<String>, Vec<String>) = sessions
        .iter()
        .map(|session| (session.agent.clone(), session.session_id.clone()))
        .unzip();
    let statement = format!(
        "SELECT t.agent, t.session_id, coalesce(t.model_key, '') AS model, {USAGE_SUMS} \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.token_usage t ON t.tenant_id = $1 AND t.agent = k.agent \
           AND t.session_id = k.session_id \
         GROUP BY 1, 2, 3"
    );
    let figures: Vec<ModelFigure> = sqlx::query_as(AssertSqlSafe(statement))
        .bind(tenant_id)
        .bind(&agents)
        .bind(&ids)
        .fetch_all(&mut *connection)
        .await
        .map_err(db_error)?;
    let counts: Vec<(String, String, i64, bool)> = sqlx::query_as(
        "SELECT a.agent, a.session_id, count(*)::int8, bool_or(a.agent_id = '') \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.agents a ON a.tenant_id = $1 AND a.agent = k.agent \
           AND a.session_id = k.session_id \
         GROUP BY 1, 2",
    )
    .bind(tenant_id)
    .bind(&agents)
    .bind(&ids)
    .fetch_all(&mut *connection)
    .await
    .map_err(db_error)?;
    let mut sums: HashMap<SessionKey, Sums> = HashMap::new();
    for figure in figures {
        sums.entry(SessionKey::new(&figure.agent, &figure.session_id))
            .or_default()
            .add(&figure.model, &figure.sums.delta());
    }
    let mut runaway: HashMap<SessionKey, Vec<String>> = HashMap::new();
    for (agent, session_id, reason) in
        crate::runaway::store::open_reasons(&mut *connection, tenant_id, &agents, &ids)
            .await
            .map_err(db_error)?
    {
        runaway
            .entry(SessionKey { agent, session_id })
            .or_default()
            .push(reason);
    }
    // The main agent is counted whether or not its row arrived.
    let agent_counts: HashMap<SessionKey, u32> = counts
        .into_iter()
        .map(|(agent, session_id, count, has_main)| {
            (
                SessionKey { agent, session_id },
                count as u32 + u32::from(!has_main),
            )
        })
        .collect();
    Ok(sessions
        .iter()
        .map(|session| {
            let key = SessionKey::new(&session.agent, &session.session_id);
            let mut summary = summary(
                session,
                agent_counts.get(&key).copied().unwrap_or(1),
                &sums.get(&key).cloned().unwrap_or_default(),
            );
            summary.runaway = runaway.remove(&key).unwrap_or_default();
            summary
        })
        .collect())
}
