//! `UploadBatch`: one checked batch written in one tenant transaction.
//!
//! Order: reference checks (`not_found`, nothing written), sessions, agents, edges, usage with
//! its rollup deltas ([`crate::usage_rows`]), deliveries. Every step is one bulk statement over
//! `unnest` arrays, never one per row.
//!
//! Concurrency: no lock serialises a tenant's uploads (a per-tenant lock made four machines of
//! one tenant upload one at a time). Every merge below is a row-level upsert that commutes
//! (unions, least/greatest, sticky flags, summed rollup deltas), and the collision rule runs
//! against usage rows locked `FOR UPDATE` ([`crate::usage_rows::write`]). Rows are written in
//! key order so concurrent uploads lock what they share in one order; should two still wait on
//! each other (Postgres reports a deadlock and rolls one back, or a serialization failure),
//! the rolled-back upload runs again from the start, up to [`ATTEMPTS`] times, so a caller
//! never sees a conflict that a retry would have resolved.
//!
//! Merges: a session's hosts, members and client versions accumulate (sorted, at most 64 hosts,
//! 64 members and 32 versions; the unattributed `""` is never a member, so a session only keys
//! without a member uploaded has none), `outputUnderReported` once true stays true, first
//! activity only falls and last only rises, `lastPromptAt`/`lastStopAt` only rise. A delivery
//! needs no stored session (the hook records SessionStart before any transcript upload): it is
//! stored by its id, and the status evidence it carries (UserPromptSubmit, Stop) is read from
//! the deliveries into every session the batch names, so a session stored after its deliveries
//! still gets it. An agent keeps its first kind and parent; its model follows its newest
//! activity; a stored `ended` is sticky. An edge's first proof wins. A delivery is stored once
//! by its id.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_transcripts::PriceTable;

use crate::store::{Tx, db_error};
use crate::validate::{AgentKey, Batch, SessionKey};

/// What an upload did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uploaded {
    pub sessions: u32,
    pub agents: u32,
    pub edges_inserted: u32,
    pub usage_inserted: u32,
    pub usage_replaced: u32,
    pub usage_unchanged: u32,
    pub deliveries_inserted: u32,
    pub deliveries_duplicate: u32,
    /// The latest activity instant among the usage rows this upload inserted or replaced:
    /// how far the rollups (written in this transaction) trail the activity they count.
    pub newest_usage_at: Option<DateTime<Utc>>,
    /// Budget thresholds this upload crossed (each with its message in the outbox).
    pub budget_crossings: u32,
    /// Runaway episodes this upload opened (each with its message in the outbox).
    pub runaway_flags: u32,
}

/// Times an upload runs when Postgres rolls it back for a deadlock or serialization failure.
pub const ATTEMPTS: usize = 4;

/// Writes a batch for `tenant_id`, received at `now`.
pub async fn upload(
    pool: &PgPool,
    table: &PriceTable,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<Uploaded, ApiError> {
    let mut attempt = 1;
    loop {
        match upload_once(pool, table, tenant_id, now, batch).await {
            Err(Failure::Database(error)) if attempt < ATTEMPTS && retryable(&error) => {
                attempt += 1;
                tracing::info!(
                    attempt,
                    "usage upload rolled back by a lock conflict, run again"
                );
            }
            Err(Failure::Database(error)) => return Err(db_error(error)),
            Err(Failure::Refused(error)) => return Err(error),
            Ok(uploaded) => return Ok(uploaded),
        }
    }
}

/// Why one attempt failed: a refusal to report as is, or a database error (maybe retryable).
enum Failure {
    Refused(ApiError),
    Database(sqlx::Error),
}

impl From<sqlx::Error> for Failure {
    fn from(error: sqlx::Error) -> Self {
        Failure::Database(error)
    }
}

/// Deadlock detected (40P01) or serialization failure (40001): the transaction was rolled back
/// and running it again is safe.
fn retryable(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|error| error.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}

async fn upload_once(
    pool: &PgPool,
    table: &PriceTable,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<Uploaded, Failure> {
    let mut tx = begin_tenant(pool, tenant_id).await?;
    check_references(&mut tx, tenant_id, batch).await?;
    let mut uploaded = Uploaded {
        sessions: batch.sessions.len() as u32,
        agents: batch.agents.len() as u32,
        ..Uploaded::default()
    };
    sessions(&mut tx, tenant_id, batch).await?;
    agents(&mut tx, tenant_id, batch).await?;
    uploaded.edges_inserted = edges(&mut tx, tenant_id, batch).await?;
    let written = crate::usage_rows::write(&mut tx, table, tenant_id, batch).await?;
    uploaded.usage_inserted = written.inserted;
    uploaded.usage_replaced = written.replaced;
    uploaded.usage_unchanged = written.unchanged;
    uploaded.newest_usage_at = written.newest_written_at;
    let inserted = deliveries(&mut tx, tenant_id, now, batch).await?;
    uploaded.deliveries_inserted = inserted;
    uploaded.deliveries_duplicate = batch.deliveries.len() as u32 - inserted;
    // Spend moved only if usage was written; budgets see it in this same transaction.
    if written.inserted + written.replaced > 0 {
        uploaded.budget_crossings =
            crate::budgets::check::evaluate(&mut tx, tenant_id, now).await?;
    }
    // Runaway: the sessions this batch carried usage or a prompt for (a prompt can end an
    // unattended episode); nothing to read when neither moved.
    let touched = runaway_keys(batch);
    if written.inserted + written.replaced > 0 || inserted > 0 {
        uploaded.runaway_flags =
            crate::runaway::check::evaluate(&mut tx, tenant_id, &touched, now).await?;
    }
    tx.commit().await?;
    Ok(uploaded)
}

/// The sessions a batch carries usage rows or deliveries for.
fn runaway_keys(batch: &Batch) -> std::collections::BTreeSet<(String, String)> {
    batch
        .usage
        .iter()
        .map(|row| (row.agent.clone(), row.session_id.clone()))
        .chain(
            batch
                .deliveries
                .iter()
                .map(|delivery| (delivery.agent.clone(), delivery.session_id.clone())),
        )
        .collect()
}

fn split2(keys: &[SessionKey]) -> (Vec<String>, Vec<String>) {
    keys.iter().cloned().unzip()
}

async fn check_references(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), Failure> {
    let sessions = batch.referenced_sessions();
    if !sessions.is_empty() {
        let (agents, ids) = split2(&sessions);
        let found: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM usage.sessions s \
             JOIN unnest($2::text[], $3::text[]) AS k(agent, session_id) \
               ON s.agent = k.agent AND s.session_id = k.session_id \
             WHERE s.tenant_id = $1",
        )
        .bind(tenant_id)
        .bind(&agents)
        .bind(&ids)
        .fetch_one(&mut **tx)
        .await?;
        if found != sessions.len() as i64 {
            return Err(Failure::Refused(ApiError::not_found(
                "a fact names a session that is not stored",
            )));
        }
    }
    let agents: Vec<AgentKey> = batch.referenced_agents();
    if !agents.is_empty() {
        let mut columns: [Vec<String>; 3] = Default::default();
        for (agent, session, id) in agents.iter().cloned() {
            columns[0].push(agent);
            columns[1].push(session);
            columns[2].push(id);
        }
        let found: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM usage.agents a \
             JOIN unnest($2::text[], $3::text[], $4::text[]) AS k(agent, session_id, agent_id) \
               ON a.agent = k.agent AND a.session_id = k.session_id AND a.agent_id = k.agent_id \
             WHERE a.tenant_id = $1",
        )
        .bind(tenant_id)
        .bind(&columns[0])
        .bind(&columns[1])
        .bind(&columns[2])
        .fetch_one(&mut **tx)
        .await?;
        if found != agents.len() as i64 {
            return Err(Failure::Refused(ApiError::not_found(
                "a fact names an agent that is not stored",
            )));
        }
    }
    Ok(())
}

async fn sessions(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    let mut agent = Vec::new();
    let mut session_id = Vec::new();
    let mut project = Vec::new();
    let mut versions = Vec::new();
    let mut under = Vec::new();
    let mut first = Vec::new();
    let mut last = Vec::new();
    // Key order, as every other statement here: concurrent uploads lock shared rows in one order.
    let mut ordered: Vec<_> = batch.sessions.iter().collect();
    ordered.sort_by(|a, b| (&a.agent, &a.session_id).cmp(&(&b.agent, &b.session_id)));
    for session in ordered {
        agent.push(session.agent.clone());
        session_id.push(session.session_id.clone());
        project.push(session.project_slug.clone());
        // Identifiers hold no newline, so it separates a session's versions safely.
        versions.push(session.client_versions.join("\n"));
        under.push(session.output_under_reported);
        first.push(session.first_activity_at);
        last.push(session.last_activity_at);
    }
    if !agent.is_empty() {
        sqlx::query(
            "INSERT INTO usage.sessions AS s (tenant_id, agent, session_id, project_slug, \
               host_ids, members, client_versions, output_under_reported, first_activity_at, \
               last_activity_at) \
             SELECT $1, a, i, p, ARRAY[$9::text], array_remove(ARRAY[$10::text], ''), \
               ARRAY(SELECT DISTINCT v FROM unnest(string_to_array(cv, E'\\n')) AS v ORDER BY v LIMIT 32), \
               u, f, l \
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], \
               $7::timestamptz[], $8::timestamptz[]) AS d(a, i, p, cv, u, f, l) \
             ON CONFLICT (tenant_id, agent, session_id) DO UPDATE SET \
               project_slug = EXCLUDED.project_slug, \
               host_ids = ARRAY(SELECT DISTINCT h FROM unnest(s.host_ids || EXCLUDED.host_ids) AS h \
                 ORDER BY h LIMIT 64), \
               members = ARRAY(SELECT DISTINCT m FROM unnest(s.members || EXCLUDED.members) AS m \
                 ORDER BY m LIMIT 64), \
               client_versions = ARRAY(SELECT DISTINCT v FROM \
                 unnest(s.client_versions || EXCLUDED.client_versions) AS v ORDER BY v LIMIT 32), \
               output_under_reported = s.output_under_reported OR EXCLUDED.output_under_reported, \
               first_activity_at = LEAST(s.first_activity_at, EXCLUDED.first_activity_at), \
               last_activity_at = GREATEST(s.last_activity_at, EXCLUDED.last_activity_at)",
        )
        .bind(tenant_id)
        .bind(&agent)
        .bind(&session_id)
        .bind(&project)
        .bind(&versions)
        .bind(&under)
        .bind(&first)
        .bind(&last)
        .bind(&batch.host_id)
        .bind(&batch.member)
        .execute(&mut **tx)
        .await?;
    }
    // Stored sessions this host (and member) now reports agents, edges or usage for count it
    // among their hosts (and members).
    let (agents, ids) = split2(&batch.referenced_sessions());
    if !agents.is_empty() {
        sqlx::query(
            "UPDATE usage.sessions s SET host_ids = ARRAY(SELECT DISTINCT h FROM \
                 unnest(s.host_ids || ARRAY[$4::text]) AS h ORDER BY h LIMIT 64), \
               members = ARRAY(SELECT DISTINCT m FROM \
                 unnest(s.members || array_remove(ARRAY[$5::text], '')) AS m ORDER BY m LIMIT 64) \
             FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
             WHERE s.tenant_id = $1 AND s.agent = k.agent AND s.session_id = k.session_id \
               AND (NOT ($4 = ANY(s.host_ids)) OR ($5 <> '' AND NOT ($5 = ANY(s.members))))",
        )
        .bind(tenant_id)
        .bind(&agents)
        .bind(&ids)
        .bind(&batch.host_id)
        .bind(&batch.member)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

async fn agents(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    if batch.agents.is_empty() {
        return Ok(());
    }
    let mut text: [Vec<Option<String>>; 7] = Default::default();
    let mut times: [Vec<Option<DateTime<Utc>>>; 3] = Default::default();
    let mut keys: [Vec<String>; 3] = Default::default();
    let mut ordered: Vec<_> = batch.agents.iter().collect();
    ordered.sort_by(|a, b| {
        (&a.agent, &a.session_id, &a.agent_id).cmp(&(&b.agent, &b.session_id, &b.agent_id))
    });
    for agent in ordered {
        keys[0].push(agent.agent.clone());
        keys[1].push(agent.session_id.clone());
        keys[2].push(agent.agent_id.clone());
        text[0].push(Some(agent.kind.as_str().to_string()));
        text[1].push(agent.parent_agent_id.clone());
        text[2].push(agent.subagent_type.clone());
        text[3].push(agent.spawn_tool.clone());
        text[4].push(agent.model.clone());
        text[5].push(agent.ended.as_ref().map(|(word, _)| word.clone()));
        text[6].push(None);
        times[0].push(agent.first_activity_at);
        times[1].push(agent.last_activity_at);
        times[2].push(agent.ended.as_ref().map(|(_, at)| *at));
    }
    sqlx::query(
        "INSERT INTO usage.agents AS a (tenant_id, agent, session_id, agent_id, kind, \
           parent_agent_id, subagent_type, spawn_tool, model, first_activity_at, \
           last_activity_at, ended, ended_at) \
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
           $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[], \
           $12::text[], $13::timestamptz[]) \
         ON CONFLICT (tenant_id, agent, session_id, agent_id) DO UPDATE SET \
           parent_agent_id = COALESCE(a.parent_agent_id, EXCLUDED.parent_agent_id), \
           subagent_type = COALESCE(EXCLUDED.subagent_type, a.subagent_type), \
           spawn_tool = COALESCE(EXCLUDED.spawn_tool, a.spawn_tool), \
           model = CASE WHEN EXCLUDED.model IS NOT NULL AND (a.last_activity_at IS NULL \
               OR EXCLUDED.last_activity_at >= a.last_activity_at) THEN EXCLUDED.model \
             ELSE COALESCE(a.model, EXCLUDED.model) END, \
           first_activity_at = LEAST(a.first_activity_at, EXCLUDED.first_activity_at), \
           last_activity_at = GREATEST(a.last_activity_at, EXCLUDED.last_activity_at), \
           ended = COALESCE(a.ended, EXCLUDED.ended), \
           ended_at = CASE WHEN a.ended IS NULL THEN EXCLUDED.ended_at ELSE a.ended_at END",
    )
    .bind(tenant_id)
    .bind(&keys[0])
    .bind(&keys[1])
    .bind(&keys[2])
    .bind(&text[0])
    .bind(&text[1])
    .bind(&text[2])
    .bind(&text[3])
    .bind(&text[4])
    .bind(&times[0])
    .bind(&times[1])
    .bind(&text[5])
    .bind(&times[2])
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn edges(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<u32, sqlx::Error> {
    if batch.edges.is_empty() {
        return Ok(0);
    }
    let mut columns: [Vec<String>; 5] = Default::default();
    for edge in &batch.edges {
        columns[0].push(edge.agent.clone());
        columns[1].push(edge.session_id.clone());
        columns[2].push(edge.parent_agent_id.clone());
        columns[3].push(edge.child_agent_id.clone());
        columns[4].push(edge.join_path.clone());
    }
    let inserted = sqlx::query(
        "INSERT INTO usage.orchestration_edges (tenant_id, agent, session_id, parent_agent_id, \
           child_agent_id, join_path) \
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) \
         ON CONFLICT DO NOTHING",
    )
    .bind(tenant_id)
    .bind(&columns[0])
    .bind(&columns[1])
    .bind(&columns[2])
    .bind(&columns[3])
    .bind(&columns[4])
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted as u32)
}

async fn deliveries(
    tx: &mut Tx,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<u32, sqlx::Error> {
    let inserted = if batch.deliveries.is_empty() {
        0
    } else {
        insert_deliveries(tx, tenant_id, now, batch).await?
    };
    status_evidence(tx, tenant_id, batch).await?;
    Ok(inserted)
}

async fn insert_deliveries(
    tx: &mut Tx,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<u32, sqlx::Error> {
    let mut ids = Vec::new();
    let mut text: [Vec<String>; 3] = Default::default();
    let mut observed = Vec::new();
    for delivery in &batch.deliveries {
        ids.push(delivery.delivery_id);
        text[0].push(delivery.agent.clone());
        text[1].push(delivery.session_id.clone());
        text[2].push(delivery.event.clone());
        observed.push(delivery.observed_at);
    }
    let inserted = sqlx::query(
        "INSERT INTO usage.hook_deliveries (tenant_id, delivery_id, agent, session_id, event, \
           observed_at, received_at, host_id) \
         SELECT $1, d, a, s, e, o, $7, $8 FROM unnest($2::uuid[], $3::text[], $4::text[], \
           $5::text[], $6::timestamptz[]) AS u(d, a, s, e, o) \
         ON CONFLICT DO NOTHING",
    )
    .bind(tenant_id)
    .bind(&ids)
    .bind(&text[0])
    .bind(&text[1])
    .bind(&text[2])
    .bind(&observed)
    .bind(now)
    .bind(&batch.host_id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted as u32)
}

/// The status evidence of every session the batch names (carried or delivered to): the latest
/// UserPromptSubmit and Stop recorded for it raise `last_prompt_at` / `last_stop_at`, never
/// lower them (retention may since have deleted the deliveries behind a stored instant).
async fn status_evidence(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    let mut keys: Vec<(&str, &str)> = batch
        .sessions
        .iter()
        .map(|s| (s.agent.as_str(), s.session_id.as_str()))
        .chain(
            batch
                .deliveries
                .iter()
                .map(|d| (d.agent.as_str(), d.session_id.as_str())),
        )
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return Ok(());
    }
    let (agents, sessions): (Vec<&str>, Vec<&str>) = keys.into_iter().unzip();
    sqlx::query(
        "UPDATE usage.sessions s SET \
           last_prompt_at = GREATEST(s.last_prompt_at, d.prompt), \
           last_stop_at = GREATEST(s.last_stop_at, d.stop) \
         FROM (SELECT h.agent, h.session_id, \
                 max(h.observed_at) FILTER (WHERE h.event = 'UserPromptSubmit') AS prompt, \
                 max(h.observed_at) FILTER (WHERE h.event = 'Stop') AS stop \
               FROM unnest($2::text[], $3::text[]) AS k(a, i) \
               JOIN usage.hook_deliveries h \
                 ON h.tenant_id = $1 AND h.agent = k.a AND h.session_id = k.i \
                AND h.event IN ('UserPromptSubmit', 'Stop') \
               GROUP BY h.agent, h.session_id) AS d \
         WHERE s.tenant_id = $1 AND s.agent = d.agent AND s.session_id = d.session_id \
           AND (d.prompt IS NOT NULL OR d.stop IS NOT NULL)",
    )
    .bind(tenant_id)
    .bind(&agents)
    .bind(&sessions)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
