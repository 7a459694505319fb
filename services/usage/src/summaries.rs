//! The session summary `ListSessions` and `SessionFigures` both answer: a stored session row with
//! its figures (tokens, cost, requests, the unpriced tokens by model, server-tool calls) and its
//! agent count. One
//! assembly for both reads, so the console's list and a page of `ListSessions` can never sum a
//! session two ways.

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::aggregate::Aggregated;
use crate::figures::Sums;
use crate::keys::SessionKey;
use crate::store::db_error;
use crate::tree::{SessionRow, summary};

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
    // The sums are `aggregate::USAGE_SUMS` written out (sqlx checks one literal); a group
    // has at least one row, so no sum is null.
    let figures = sqlx::query!(
        r#"SELECT t.agent, t.session_id, coalesce(t.model_key, '') AS "model!",
             sum(t.input)::int8 AS "input!", sum(t.output)::int8 AS "output!",
             sum(t.cache_read)::int8 AS "cache_read!",
             sum(t.cache_write_5m)::int8 AS "cache_write_5m!",
             sum(t.cache_write_1h)::int8 AS "cache_write_1h!",
             sum(t.reasoning)::int8 AS "reasoning!", count(*)::int8 AS "requests!",
             sum(t.cost)::text AS cost,
             sum(CASE WHEN t.priced THEN 0 ELSE t.input + t.output + t.cache_read
               + t.cache_write_5m + t.cache_write_1h END)::int8 AS "unpriced_tokens!",
             sum(t.web_search_requests)::int8 AS "web_search_requests!",
             sum(t.web_fetch_requests)::int8 AS "web_fetch_requests!",
             sum(t.server_tool_cost)::text AS server_tool_cost,
             sum(t.unpriced_calls)::int8 AS "unpriced_calls!"
           FROM unnest($2::text[], $3::text[]) AS k(agent, session_id)
           JOIN usage.token_usage t ON t.tenant_id = $1 AND t.agent = k.agent
             AND t.session_id = k.session_id
           GROUP BY 1, 2, 3"#,
        tenant_id,
        &agents,
        &ids,
    )
    .fetch_all(&mut *connection)
    .await
    .map_err(db_error)?;
    let counts = sqlx::query!(
        r#"SELECT a.agent, a.session_id, count(*)::int8 AS "count!",
             bool_or(a.agent_id = '') AS "has_main!"
           FROM unnest($2::text[], $3::text[]) AS k(agent, session_id)
           JOIN usage.agents a ON a.tenant_id = $1 AND a.agent = k.agent
             AND a.session_id = k.session_id
           GROUP BY 1, 2"#,
        tenant_id,
        &agents,
        &ids,
    )
    .fetch_all(&mut *connection)
    .await
    .map_err(db_error)?;
    let mut sums: HashMap<SessionKey, Sums> = HashMap::new();
    for figure in figures {
        let aggregated = Aggregated {
            input: figure.input,
            output: figure.output,
            cache_read: figure.cache_read,
            cache_write_5m: figure.cache_write_5m,
            cache_write_1h: figure.cache_write_1h,
            reasoning: figure.reasoning,
            requests: figure.requests,
            cost: figure.cost,
            unpriced_tokens: figure.unpriced_tokens,
            web_search_requests: figure.web_search_requests,
            web_fetch_requests: figure.web_fetch_requests,
            server_tool_cost: figure.server_tool_cost,
            unpriced_calls: figure.unpriced_calls,
        };
        sums.entry(SessionKey::new(&figure.agent, &figure.session_id))
            .or_default()
            .add(&figure.model, &aggregated.delta());
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
        .map(|row| {
            (
                SessionKey {
                    agent: row.agent,
                    session_id: row.session_id,
                },
                row.count as u32 + u32::from(!row.has_main),
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
