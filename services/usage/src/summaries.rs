//! The session summary `ListSessions` and `SessionFigures` both answer: a stored session row with
//! its figures (tokens, cost, requests, the unpriced tokens by model) and its agent count. One
//! assembly for both reads, so the console's list and a page of `ListSessions` can never sum a
//! session two ways.

use std::collections::HashMap;

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::figures::Sums;
use crate::store::db_error;
use crate::tree::{SessionRow, summary};

/// A `usage.sessions` row selected with the summary's columns (`agent, session_id,
/// project_slug, host_ids, client_versions, output_under_reported, first_activity_at,
/// last_activity_at`).
pub fn session_row(row: &PgRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        agent: row.try_get("agent")?,
        session_id: row.try_get("session_id")?,
        project_slug: row.try_get("project_slug")?,
        host_ids: row.try_get("host_ids")?,
        client_versions: row.try_get("client_versions")?,
        output_under_reported: row.try_get("output_under_reported")?,
        first_activity_at: row.try_get("first_activity_at")?,
        last_activity_at: row.try_get("last_activity_at")?,
        ..SessionRow::default()
    })
}

/// One model's aggregated usage within one session, as the figures query returns it.
type ModelFigure = (
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    Option<String>,
    i64,
);

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
    let figures: Vec<ModelFigure> = sqlx::query_as(
        "SELECT t.agent, t.session_id, coalesce(t.model_key, ''), sum(t.input)::int8, \
           sum(t.output)::int8, sum(t.cache_read)::int8, sum(t.cache_write_5m)::int8, \
           sum(t.cache_write_1h)::int8, count(*)::int8, sum(t.cost)::text, \
           sum(CASE WHEN t.priced THEN 0 ELSE t.input + t.output + t.cache_read \
             + t.cache_write_5m + t.cache_write_1h END)::int8 \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.token_usage t ON t.tenant_id = $1 AND t.agent = k.agent \
           AND t.session_id = k.session_id \
         GROUP BY 1, 2, 3",
    )
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
    let mut sums: HashMap<(String, String), Sums> = HashMap::new();
    for (agent, session, model, i, o, cr, c5, c1, n, cost, unpriced) in figures {
        let cost = cost.and_then(|text| text.parse::<i128>().ok()).unwrap_or(0);
        sums.entry((agent, session)).or_default().add(
            &model,
            [i, o, cr, c5, c1],
            n,
            cost,
            unpriced,
        );
    }
    // The main agent is counted whether or not its row arrived.
    let agent_counts: HashMap<(String, String), u32> = counts
        .into_iter()
        .map(|(agent, session, count, has_main)| {
            ((agent, session), count as u32 + u32::from(!has_main))
        })
        .collect();
    Ok(sessions
        .iter()
        .map(|session| {
            let key = (session.agent.clone(), session.session_id.clone());
            summary(
                session,
                agent_counts.get(&key).copied().unwrap_or(1),
                &sums.get(&key).cloned().unwrap_or_default(),
            )
        })
        .collect())
}
