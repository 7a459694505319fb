//! `usage.agents`: one agent of a session (the main agent with agent id `""`), as every upload
//! that sees it adds to it.
//!
//! Merge rules, each named by a comment in the upsert:
//! - an agent keeps its first kind (the statement never sets `kind` again) and the first
//!   parent known;
//! - its subagent type and spawn tool follow the latest upload that names them;
//! - its model follows its newest activity;
//! - first activity only falls, last activity only rises;
//! - a stored `ended` is sticky, with its `ended_at`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Tx;
use crate::keys::AgentKey;
use crate::validate::{Agent, Batch};

/// Upserts the agents the batch carries, in key order.
pub async fn upsert(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    if batch.agents.is_empty() {
        return Ok(());
    }
    let ordered = super::in_key_order(&batch.agents, Agent::key);
    let keys = AgentKey::columns(ordered.iter().map(|(key, _)| key));
    // kind, parent, subagent type, spawn tool, model, ended.
    let mut text: [Vec<Option<String>>; 6] = Default::default();
    // first activity, last activity, ended at.
    let mut times: [Vec<Option<DateTime<Utc>>>; 3] = Default::default();
    for (_, agent) in ordered {
        text[0].push(Some(agent.kind.as_str().to_string()));
        text[1].push(agent.parent_agent_id.clone());
        text[2].push(agent.subagent_type.clone());
        text[3].push(agent.spawn_tool.clone());
        text[4].push(agent.model.clone());
        text[5].push(agent.ended.as_ref().map(|(word, _)| word.clone()));
        times[0].push(agent.first_activity_at);
        times[1].push(agent.last_activity_at);
        times[2].push(agent.ended.as_ref().map(|(_, at)| *at));
    }
    sqlx::query!(
        r#"INSERT INTO usage.agents AS a (tenant_id, agent, session_id, agent_id, kind,
             parent_agent_id, subagent_type, spawn_tool, model, first_activity_at,
             last_activity_at, ended, ended_at)
           SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
             $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[],
             $12::text[], $13::timestamptz[])
           ON CONFLICT (tenant_id, agent, session_id, agent_id) DO UPDATE SET
             -- (the first kind stays: kind is never set again)
             -- the first parent known stays; a missing one is filled by the first upload
             -- that proves it
             parent_agent_id = COALESCE(a.parent_agent_id, EXCLUDED.parent_agent_id),
             -- subagent type and spawn tool follow the latest upload that names them
             subagent_type = COALESCE(EXCLUDED.subagent_type, a.subagent_type),
             spawn_tool = COALESCE(EXCLUDED.spawn_tool, a.spawn_tool),
             -- the model follows the newest activity: an uploaded model replaces the stored
             -- one when its upload's last activity is no older than the stored one (or none
             -- is stored); otherwise the stored model stays and a missing one is filled
             model = CASE WHEN EXCLUDED.model IS NOT NULL
                 AND (a.last_activity_at IS NULL
                   OR EXCLUDED.last_activity_at >= a.last_activity_at)
               THEN EXCLUDED.model ELSE COALESCE(a.model, EXCLUDED.model) END,
             -- first activity only falls, last activity only rises
             first_activity_at = LEAST(a.first_activity_at, EXCLUDED.first_activity_at),
             last_activity_at = GREATEST(a.last_activity_at, EXCLUDED.last_activity_at),
             -- a stored end is sticky, with its ended_at (a resumed transcript may report an
             -- end again, or none)
             ended = COALESCE(a.ended, EXCLUDED.ended),
             ended_at = CASE WHEN a.ended IS NULL THEN EXCLUDED.ended_at ELSE a.ended_at END"#,
        tenant_id,
        &keys[0],
        &keys[1],
        &keys[2],
        &text[0] as &[Option<String>],
        &text[1] as &[Option<String>],
        &text[2] as &[Option<String>],
        &text[3] as &[Option<String>],
        &text[4] as &[Option<String>],
        &times[0] as &[Option<DateTime<Utc>>],
        &times[1] as &[Option<DateTime<Utc>>],
        &text[5] as &[Option<String>],
        &times[2] as &[Option<DateTime<Utc>>],
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// How many of `keys` (distinct) the tenant has stored.
pub async fn count_stored(
    tx: &mut Tx,
    tenant_id: Uuid,
    keys: &[AgentKey],
) -> Result<i64, sqlx::Error> {
    let [agents, sessions, ids] = AgentKey::columns(keys);
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM usage.agents a
           JOIN unnest($2::text[], $3::text[], $4::text[]) AS k(agent, session_id, agent_id)
             ON a.agent = k.agent AND a.session_id = k.session_id AND a.agent_id = k.agent_id
           WHERE a.tenant_id = $1"#,
        tenant_id,
        &agents,
        &sessions,
        &ids,
    )
    .fetch_one(&mut **tx)
    .await
}
