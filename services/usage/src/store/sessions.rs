//! `usage.sessions`: a session by its natural key, as every host and member that reports it
//! adds to it.
//!
//! Merge rules, each named by a comment in the statement that applies it:
//! - the project slug follows the latest upload that carries the session;
//! - hosts, members and client versions accumulate, sorted, at most 64 hosts, 64 members and
//!   32 versions; the unattributed `""` is never a member, so a session only keys without a
//!   member uploaded has none; a host or member that reports a stored session's agents, edges
//!   or usage without carrying the session counts among them too;
//! - `outputUnderReported`, once true, stays true;
//! - first activity only falls, last activity only rises;
//! - `lastPromptAt` / `lastStopAt` only rise, read from the hook deliveries recorded for the
//!   session (a delivery needs no stored session, so a session stored after its deliveries
//!   still gets their evidence).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Tx;
use crate::keys::SessionKey;
use crate::validate::{Batch, MAX_CLIENT_VERSIONS, Session};

/// Most hosts a session lists.
pub const MAX_HOSTS: usize = 64;
/// Most members a session lists.
pub const MAX_MEMBERS: usize = 64;

/// Upserts the sessions the batch carries, in key order (as every statement of an upload,
/// so concurrent uploads lock shared rows in one order).
pub async fn upsert(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    if batch.sessions.is_empty() {
        return Ok(());
    }
    let ordered = super::in_key_order(&batch.sessions, Session::key);
    let [agents, ids] = SessionKey::columns(ordered.iter().map(|(key, _)| key));
    let mut project = Vec::new();
    let mut versions = Vec::new();
    let mut under = Vec::new();
    let mut first = Vec::new();
    let mut last = Vec::new();
    for (_, session) in ordered {
        project.push(session.project_slug.clone());
        // Identifiers hold no newline, so it separates a session's versions safely.
        versions.push(session.client_versions.join("\n"));
        under.push(session.output_under_reported);
        first.push(session.first_activity_at);
        last.push(session.last_activity_at);
    }
    // Every accumulated list has one shape: distinct, sorted, the first `cap` kept, so a
    // session reported from everywhere stays one bounded row and two uploads merged in either
    // order store the same list. Identifiers hold no newline, so it separates a session's
    // uploaded versions safely.
    sqlx::query!(
        r#"INSERT INTO usage.sessions AS s (tenant_id, agent, session_id, project_slug,
             host_ids, members, client_versions, output_under_reported, first_activity_at,
             last_activity_at)
           SELECT $1, a, i, p, ARRAY[$9::text],
             -- the unattributed "" is never stored as a member
             array_remove(ARRAY[$10::text], ''),
             ARRAY(SELECT DISTINCT v FROM unnest(string_to_array(cv, E'\n')) AS v
               ORDER BY v LIMIT $13),
             u, f, l
           FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bool[],
             $7::timestamptz[], $8::timestamptz[]) AS d(a, i, p, cv, u, f, l)
           ON CONFLICT (tenant_id, agent, session_id) DO UPDATE SET
             -- the project slug follows the latest upload that carries the session
             project_slug = EXCLUDED.project_slug,
             -- hosts, members and client versions accumulate
             host_ids = ARRAY(SELECT DISTINCT h FROM unnest(s.host_ids || EXCLUDED.host_ids) AS h
               ORDER BY h LIMIT $11),
             members = ARRAY(SELECT DISTINCT m FROM unnest(s.members || EXCLUDED.members) AS m
               ORDER BY m LIMIT $12),
             client_versions = ARRAY(SELECT DISTINCT v
               FROM unnest(s.client_versions || EXCLUDED.client_versions) AS v
               ORDER BY v LIMIT $13),
             -- outputUnderReported is sticky: once seen, whatever a later upload says
             output_under_reported = s.output_under_reported OR EXCLUDED.output_under_reported,
             -- first activity only falls, last activity only rises; an upload that saw none
             -- of the span (NULL, which LEAST and GREATEST ignore) never narrows it
             first_activity_at = LEAST(s.first_activity_at, EXCLUDED.first_activity_at),
             last_activity_at = GREATEST(s.last_activity_at, EXCLUDED.last_activity_at)"#,
        tenant_id,
        &agents,
        &ids,
        &project,
        &versions,
        &under,
        &first as &[Option<DateTime<Utc>>],
        &last as &[Option<DateTime<Utc>>],
        batch.host_id,
        batch.member,
        MAX_HOSTS as i64,
        MAX_MEMBERS as i64,
        MAX_CLIENT_VERSIONS as i64,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Stored sessions this host (and member) now reports agents, edges or usage for, without
/// carrying them, count it among their hosts (and members).
pub async fn add_reporters(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    let referenced = batch.referenced_sessions();
    if referenced.is_empty() {
        return Ok(());
    }
    let [agents, ids] = SessionKey::columns(&referenced);
    // The same accumulation as the upsert's, skipping the rows that already list both.
    sqlx::query!(
        r#"UPDATE usage.sessions s SET
             host_ids = ARRAY(SELECT DISTINCT h FROM unnest(s.host_ids || ARRAY[$4::text]) AS h
               ORDER BY h LIMIT $6),
             members = ARRAY(SELECT DISTINCT m
               FROM unnest(s.members || array_remove(ARRAY[$5::text], '')) AS m
               ORDER BY m LIMIT $7)
           FROM unnest($2::text[], $3::text[]) AS k(agent, session_id)
           WHERE s.tenant_id = $1 AND s.agent = k.agent AND s.session_id = k.session_id
             AND (NOT ($4 = ANY(s.host_ids)) OR ($5 <> '' AND NOT ($5 = ANY(s.members))))"#,
        tenant_id,
        &agents,
        &ids,
        batch.host_id,
        batch.member,
        MAX_HOSTS as i64,
        MAX_MEMBERS as i64,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// How many of `keys` (distinct) the tenant has stored.
pub async fn count_stored(
    tx: &mut Tx,
    tenant_id: Uuid,
    keys: &[SessionKey],
) -> Result<i64, sqlx::Error> {
    let [agents, ids] = SessionKey::columns(keys);
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM usage.sessions s
           JOIN unnest($2::text[], $3::text[]) AS k(agent, session_id)
             ON s.agent = k.agent AND s.session_id = k.session_id
           WHERE s.tenant_id = $1"#,
        tenant_id,
        &agents,
        &ids,
    )
    .fetch_one(&mut **tx)
    .await
}

/// The status evidence of every session the batch names (carried or delivered to), read from
/// every delivery recorded for it, this batch's included.
pub async fn status_evidence(
    tx: &mut Tx,
    tenant_id: Uuid,
    batch: &Batch,
) -> Result<(), sqlx::Error> {
    let mut keys: Vec<SessionKey> = batch
        .sessions
        .iter()
        .map(|session| session.key())
        .chain(
            batch
                .deliveries
                .iter()
                .map(|delivery| delivery.session_key()),
        )
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return Ok(());
    }
    let [agents, sessions] = SessionKey::columns(&keys);
    sqlx::query!(
        r#"UPDATE usage.sessions s SET
             -- the status instants only rise: retention may since have deleted the
             -- deliveries behind a stored instant
             last_prompt_at = GREATEST(s.last_prompt_at, d.prompt),
             last_stop_at = GREATEST(s.last_stop_at, d.stop)
           FROM (SELECT h.agent, h.session_id,
                   max(h.observed_at) FILTER (WHERE h.event = 'UserPromptSubmit') AS prompt,
                   max(h.observed_at) FILTER (WHERE h.event = 'Stop') AS stop
                 FROM unnest($2::text[], $3::text[]) AS k(a, i)
                 JOIN usage.hook_deliveries h
                   ON h.tenant_id = $1 AND h.agent = k.a AND h.session_id = k.i
                  AND h.event IN ('UserPromptSubmit', 'Stop')
                 GROUP BY h.agent, h.session_id) AS d
           WHERE s.tenant_id = $1 AND s.agent = d.agent AND s.session_id = d.session_id
             AND (d.prompt IS NOT NULL OR d.stop IS NOT NULL)"#,
        tenant_id,
        &agents,
        &sessions,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}
