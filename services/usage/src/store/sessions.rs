//! `usage.sessions`: a session by its natural key, as every host and member that reports it
//! adds to it.
//!
//! Merge rules, each a named piece of the statements below:
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

use std::sync::LazyLock;

use uuid::Uuid;

use super::{Tx, activity_only_widens};
use crate::keys::SessionKey;
use crate::validate::{Batch, MAX_CLIENT_VERSIONS, Session};

/// Most hosts a session lists.
pub const MAX_HOSTS: usize = 64;
/// Most members a session lists.
pub const MAX_MEMBERS: usize = 64;

/// `values` distinct and sorted, the first `cap` kept: the shape of every accumulated list,
/// so a session reported from everywhere stays one bounded row and two uploads merged in
/// either order store the same list.
fn sorted_capped(values: &str, alias: &str, cap: usize) -> String {
    format!(
        "ARRAY(SELECT DISTINCT {alias} FROM unnest({values}) AS {alias} \
           ORDER BY {alias} LIMIT {cap})"
    )
}

/// Hosts accumulate: the stored hosts and `added`, sorted, at most [`MAX_HOSTS`].
fn hosts_accumulate(added: &str) -> String {
    let hosts = sorted_capped(&format!("s.host_ids || {added}"), "h", MAX_HOSTS);
    format!("host_ids = {hosts}")
}

/// Members accumulate: the stored members and `added`, sorted, at most [`MAX_MEMBERS`].
fn members_accumulate(added: &str) -> String {
    let members = sorted_capped(&format!("s.members || {added}"), "m", MAX_MEMBERS);
    format!("members = {members}")
}

/// The uploading member (bound at `parameter`) as the list it adds: empty for an
/// unattributed upload, because `""` is never stored as a member.
fn uploading_member(parameter: &str) -> String {
    format!("array_remove(ARRAY[{parameter}::text], '')")
}

/// Client versions accumulate: the stored versions and the uploaded ones, sorted, at most
/// [`MAX_CLIENT_VERSIONS`] (the table's check).
fn client_versions_accumulate() -> String {
    let versions = sorted_capped(
        "s.client_versions || EXCLUDED.client_versions",
        "v",
        MAX_CLIENT_VERSIONS,
    );
    format!("client_versions = {versions}")
}

/// The project slug follows the latest upload that carries the session.
const PROJECT_SLUG_FOLLOWS_LATEST: &str = "project_slug = EXCLUDED.project_slug";

/// `outputUnderReported` is sticky: once an upload saw the harness under-report output, the
/// session's figures stay marked, whatever a later upload says.
const OUTPUT_UNDER_REPORTED_STICKY: &str =
    "output_under_reported = s.output_under_reported OR EXCLUDED.output_under_reported";

/// The sessions upsert: a new session as uploaded (its versions sorted and capped), a stored
/// one merged rule by rule.
static UPSERT_SESSIONS: LazyLock<String> = LazyLock::new(|| {
    let versions = sorted_capped("string_to_array(cv, E'\\n')", "v", MAX_CLIENT_VERSIONS);
    let merge = [
        PROJECT_SLUG_FOLLOWS_LATEST.to_string(),
        hosts_accumulate("EXCLUDED.host_ids"),
        members_accumulate("EXCLUDED.members"),
        client_versions_accumulate(),
        OUTPUT_UNDER_REPORTED_STICKY.to_string(),
        activity_only_widens("s"),
    ]
    .join(", ");
    format!(
        "INSERT INTO usage.sessions AS s (tenant_id, agent, session_id, project_slug, \
           host_ids, members, client_versions, output_under_reported, first_activity_at, \
           last_activity_at) \
         SELECT $1, a, i, p, ARRAY[$9::text], {member}, {versions}, u, f, l \
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], \
           $7::timestamptz[], $8::timestamptz[]) AS d(a, i, p, cv, u, f, l) \
         ON CONFLICT (tenant_id, agent, session_id) DO UPDATE SET {merge}",
        member = uploading_member("$10"),
    )
});

/// Upserts the sessions the batch carries, in key order (as every statement of an upload,
/// so concurrent uploads lock shared rows in one order).
pub async fn upsert(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    if batch.sessions.is_empty() {
        return Ok(());
    }
    let mut ordered: Vec<(SessionKey, &Session)> = batch
        .sessions
        .iter()
        .map(|session| (session.key(), session))
        .collect();
    ordered.sort_by(|left, right| left.0.cmp(&right.0));
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
    sqlx::query(UPSERT_SESSIONS.as_str())
        .bind(tenant_id)
        .bind(&agents)
        .bind(&ids)
        .bind(&project)
        .bind(&versions)
        .bind(&under)
        .bind(&first)
        .bind(&last)
        .bind(&batch.host_id)
        .bind(&batch.member)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A stored session's hosts and members take the uploading host and member, skipping the
/// rows that already list both.
static ADD_REPORTERS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE usage.sessions s SET {hosts}, {members} \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         WHERE s.tenant_id = $1 AND s.agent = k.agent AND s.session_id = k.session_id \
           AND (NOT ($4 = ANY(s.host_ids)) OR ($5 <> '' AND NOT ($5 = ANY(s.members))))",
        hosts = hosts_accumulate("ARRAY[$4::text]"),
        members = members_accumulate(&uploading_member("$5")),
    )
});

/// Stored sessions this host (and member) now reports agents, edges or usage for, without
/// carrying them, count it among their hosts (and members).
pub async fn add_reporters(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), sqlx::Error> {
    let referenced = batch.referenced_sessions();
    if referenced.is_empty() {
        return Ok(());
    }
    let [agents, ids] = SessionKey::columns(&referenced);
    sqlx::query(ADD_REPORTERS.as_str())
        .bind(tenant_id)
        .bind(&agents)
        .bind(&ids)
        .bind(&batch.host_id)
        .bind(&batch.member)
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
    sqlx::query_scalar(
        "SELECT count(*) FROM usage.sessions s \
         JOIN unnest($2::text[], $3::text[]) AS k(agent, session_id) \
           ON s.agent = k.agent AND s.session_id = k.session_id \
         WHERE s.tenant_id = $1",
    )
    .bind(tenant_id)
    .bind(&agents)
    .bind(&ids)
    .fetch_one(&mut **tx)
    .await
}

/// The status instants only rise: the latest UserPromptSubmit and Stop recorded for a session
/// raise `last_prompt_at` / `last_stop_at`, never lower them (retention may since have deleted
/// the deliveries behind a stored instant).
const STATUS_INSTANTS_ONLY_RISE: &str = "last_prompt_at = GREATEST(s.last_prompt_at, d.prompt), \
     last_stop_at = GREATEST(s.last_stop_at, d.stop)";

/// For each session named, its latest UserPromptSubmit and Stop among the recorded deliveries.
static STATUS_EVIDENCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE usage.sessions s SET {STATUS_INSTANTS_ONLY_RISE} \
         FROM (SELECT h.agent, h.session_id, \
                 max(h.observed_at) FILTER (WHERE h.event = 'UserPromptSubmit') AS prompt, \
                 max(h.observed_at) FILTER (WHERE h.event = 'Stop') AS stop \
               FROM unnest($2::text[], $3::text[]) AS k(a, i) \
               JOIN usage.hook_deliveries h \
                 ON h.tenant_id = $1 AND h.agent = k.a AND h.session_id = k.i \
                AND h.event IN ('UserPromptSubmit', 'Stop') \
               GROUP BY h.agent, h.session_id) AS d \
         WHERE s.tenant_id = $1 AND s.agent = d.agent AND s.session_id = d.session_id \
           AND (d.prompt IS NOT NULL OR d.stop IS NOT NULL)"
    )
});

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
    sqlx::query(STATUS_EVIDENCE.as_str())
        .bind(tenant_id)
        .bind(&agents)
        .bind(&sessions)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
