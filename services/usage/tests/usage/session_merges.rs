//! How a stored session takes what later uploads say of it: one test per merge rule of
//! `store::sessions`, each through `UploadBatch` and read back from the table.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::members::call_as;
use crate::*;

/// Uploads `request` for `tenant` as `member` (none: unattributed).
pub async fn upload(
    harness: &Harness,
    tenant: Uuid,
    member: Option<&str>,
    request: proto::UploadBatchRequest,
) -> proto::UploadBatchResponse {
    harness
        .grpc
        .upload_batch(call_as(tenant, NOW, member, request))
        .await
        .expect("upload")
        .into_inner()
}

/// One column of the stored session `s-1`.
pub async fn stored<T>(harness: &Harness, tenant: Uuid, column: &str) -> T
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + Unpin,
{
    let statement =
        format!("SELECT {column} FROM usage.sessions WHERE tenant_id = $1 AND session_id = 's-1'");
    sqlx::query_scalar(AssertSqlSafe(statement))
        .bind(tenant)
        .fetch_one(&harness.admin)
        .await
        .expect("stored session")
}

/// A request carrying nothing but a usage row for the stored `s-1`.
fn reporting(host: &str, key: &str) -> proto::UploadBatchRequest {
    let mut request = batch(host);
    request.usage = vec![lead(key, "claude-opus-4-5", "2026-03-01T10:01:00Z", 1)];
    request
}

fn names(prefix: &str, numbers: std::ops::Range<u32>) -> Vec<String> {
    numbers
        .map(|number| format!("{prefix}-{number:02}"))
        .collect()
}

#[tokio::test]
async fn a_sessions_hosts_accumulate_sorted_and_capped() {
    let (harness, tenant) = Harness::with_tenant().await;
    // Seventy hosts carry the session, the last in order first.
    for host in names("h", 0..70).into_iter().rev() {
        let mut request = batch(&host);
        request.sessions = vec![session("s-1")];
        upload(&harness, tenant, None, request).await;
    }
    let hosts: Vec<String> = stored(&harness, tenant, "host_ids").await;
    assert_eq!(hosts, names("h", 0..64), "carried: sorted, the first 64");
    // A host reporting only usage for the stored session counts too, under the same cap.
    upload(&harness, tenant, None, reporting("a-host", "k1")).await;
    let hosts: Vec<String> = stored(&harness, tenant, "host_ids").await;
    let expected: Vec<String> = ["a-host".to_string()]
        .into_iter()
        .chain(names("h", 0..63))
        .collect();
    assert_eq!(hosts, expected, "reported: sorted, the first 64");
}

#[tokio::test]
async fn a_sessions_members_accumulate_sorted_and_capped() {
    let (harness, tenant) = Harness::with_tenant().await;
    // Seventy members carry the session, the last in order first; an unattributed key too,
    // which takes no place.
    let members = names("m", 0..70);
    let uploaders = members.iter().rev().map(Some).chain([None]);
    for member in uploaders {
        let mut request = batch("h");
        request.sessions = vec![session("s-1")];
        upload(&harness, tenant, member.map(String::as_str), request).await;
    }
    let stored_members: Vec<String> = stored(&harness, tenant, "members").await;
    assert_eq!(
        stored_members,
        names("m", 0..64),
        "carried: sorted, the first 64"
    );
    // A member reporting only usage for the stored session counts too, under the same cap.
    upload(&harness, tenant, Some("a-member"), reporting("h", "k1")).await;
    let stored_members: Vec<String> = stored(&harness, tenant, "members").await;
    let expected: Vec<String> = ["a-member".to_string()]
        .into_iter()
        .chain(names("m", 0..63))
        .collect();
    assert_eq!(stored_members, expected, "reported: sorted, the first 64");
}

#[tokio::test]
async fn a_sessions_client_versions_accumulate_sorted_and_capped() {
    let (harness, tenant) = Harness::with_tenant().await;
    let carrying = |versions: Vec<String>| {
        let mut request = batch("h");
        let mut fact = session("s-1");
        fact.client_versions = versions;
        request.sessions = vec![fact];
        request
    };
    let first = vec![
        "2.1.9".to_string(),
        "2.1.10".to_string(),
        "2.1.9".to_string(),
    ];
    upload(&harness, tenant, None, carrying(first)).await;
    let versions: Vec<String> = stored(&harness, tenant, "client_versions").await;
    assert_eq!(
        versions,
        ["2.1.10", "2.1.9"],
        "a new session: distinct, sorted"
    );
    upload(&harness, tenant, None, carrying(names("v", 10..42))).await;
    let versions: Vec<String> = stored(&harness, tenant, "client_versions").await;
    let expected: Vec<String> = ["2.1.10".to_string(), "2.1.9".to_string()]
        .into_iter()
        .chain(names("v", 10..40))
        .collect();
    assert_eq!(versions, expected, "merged: sorted, the first 32");
    upload(&harness, tenant, None, carrying(names("v", 0..1))).await;
    let versions: Vec<String> = stored(&harness, tenant, "client_versions").await;
    let expected: Vec<String> = ["2.1.10".to_string(), "2.1.9".to_string()]
        .into_iter()
        .chain(names("v", 0..1))
        .chain(names("v", 10..39))
        .collect();
    assert_eq!(
        versions, expected,
        "an earlier version takes its place in order"
    );
}

#[tokio::test]
async fn a_sessions_output_under_reported_once_true_stays_true() {
    let (harness, tenant) = Harness::with_tenant().await;
    for (under_reported, expected) in [(false, false), (true, true), (false, true)] {
        let mut request = batch("h");
        let mut fact = session("s-1");
        fact.output_under_reported = under_reported;
        request.sessions = vec![fact];
        upload(&harness, tenant, None, request).await;
        let stored_flag: bool = stored(&harness, tenant, "output_under_reported").await;
        assert_eq!(
            stored_flag, expected,
            "after an upload saying {under_reported}"
        );
    }
}

#[tokio::test]
async fn a_sessions_project_slug_follows_the_latest_upload_carrying_it() {
    let (harness, tenant) = Harness::with_tenant().await;
    for slug in ["-home-me-repo", "-home-me-renamed"] {
        let mut request = batch("h");
        let mut fact = session("s-1");
        fact.project_slug = slug.to_string();
        request.sessions = vec![fact];
        upload(&harness, tenant, None, request).await;
        let stored_slug: String = stored(&harness, tenant, "project_slug").await;
        assert_eq!(stored_slug, slug);
    }
}

/// A stored activity span: first and last activity.
type Span = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// Each upload carries the session and its subagent `a1` with one activity span; both rows
/// keep the widest span seen.
#[tokio::test]
async fn first_activity_only_falls_and_last_only_rises_for_sessions_and_agents() {
    let (harness, tenant) = Harness::with_tenant().await;
    // (case, uploaded first and last, stored first and last)
    let cases = [
        (
            "first upload",
            (Some("10:00"), Some("10:20")),
            ("10:00", "10:20"),
        ),
        (
            "a narrower span",
            (Some("10:05"), Some("10:15")),
            ("10:00", "10:20"),
        ),
        (
            "an earlier start",
            (Some("09:50"), Some("10:10")),
            ("09:50", "10:20"),
        ),
        (
            "a later end",
            (Some("10:25"), Some("10:28")),
            ("09:50", "10:28"),
        ),
        ("no span at all", (None, None), ("09:50", "10:28")),
    ];
    let instant = |time: &str| format!("2026-03-01T{time}:00Z");
    for (case, (first, last), (stored_first, stored_last)) in cases {
        let mut request = batch("h");
        let mut fact = session("s-1");
        fact.first_activity_at = first.and_then(|time| ts(&instant(time)));
        fact.last_activity_at = last.and_then(|time| ts(&instant(time)));
        let mut agent = subagent("s-1", "a1", "claude-haiku-4-5");
        agent.first_activity_at = fact.first_activity_at;
        agent.last_activity_at = fact.last_activity_at;
        request.sessions = vec![fact];
        request.agents = vec![agent];
        upload(&harness, tenant, None, request).await;
        let expected = (
            Some(at(&instant(stored_first))),
            Some(at(&instant(stored_last))),
        );
        let spans: Vec<Span> = sqlx::query_as(
            "SELECT first_activity_at, last_activity_at FROM usage.sessions WHERE tenant_id = $1 \
             UNION ALL SELECT first_activity_at, last_activity_at FROM usage.agents \
               WHERE tenant_id = $1",
        )
        .bind(tenant)
        .fetch_all(&harness.admin)
        .await
        .expect("spans");
        assert_eq!(spans, [expected, expected], "{case}: session, then agent");
    }
}

#[tokio::test]
async fn a_sessions_prompt_and_stop_instants_only_rise() {
    let (harness, tenant) = Harness::with_tenant().await;
    let status = || async {
        let prompt: Option<DateTime<Utc>> = stored(&harness, tenant, "last_prompt_at").await;
        let stop: Option<DateTime<Utc>> = stored(&harness, tenant, "last_stop_at").await;
        (prompt, stop)
    };
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    request.deliveries = vec![
        delivery("s-1", "UserPromptSubmit", "2026-03-01T10:10:00Z"),
        delivery("s-1", "Stop", "2026-03-01T10:12:00Z"),
    ];
    upload(&harness, tenant, None, request).await;
    let latest = (
        Some(at("2026-03-01T10:10:00Z")),
        Some(at("2026-03-01T10:12:00Z")),
    );
    assert_eq!(status().await, latest);
    // Retention deletes the deliveries behind the stored instants; earlier ones arrive.
    sqlx::query("DELETE FROM usage.hook_deliveries WHERE tenant_id = $1")
        .bind(tenant)
        .execute(&harness.admin)
        .await
        .expect("as retention would");
    let mut earlier = batch("h");
    earlier.deliveries = vec![
        delivery("s-1", "UserPromptSubmit", "2026-03-01T10:05:00Z"),
        delivery("s-1", "Stop", "2026-03-01T10:06:00Z"),
    ];
    upload(&harness, tenant, None, earlier).await;
    assert_eq!(status().await, latest, "earlier evidence lowers nothing");
    let mut later = batch("h");
    later.deliveries = vec![delivery("s-1", "UserPromptSubmit", "2026-03-01T10:25:00Z")];
    upload(&harness, tenant, None, later).await;
    assert_eq!(
        status().await,
        (Some(at("2026-03-01T10:25:00Z")), latest.1),
        "a later prompt raises its instant alone"
    );
}
