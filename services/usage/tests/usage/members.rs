//! Members (issue 24): usage attributed to the member of the uploading key (metadata
//! `x-baton-member`, absent for a key without one), grouped by member with `unattributed` for
//! the rest, sessions listing every member that reported them and filtered by member.

use tonic::{Code, Request};
use uuid::Uuid;

use baton_kit::member::{MEMBER_KEY, attach};
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

/// A request for `tenant` at `now` from a key speaking for `member` (none: unattributed).
pub fn call_as<T>(tenant: Uuid, now: &str, member: Option<&str>, message: T) -> Request<T> {
    let mut request = call(tenant, now, message);
    attach(&mut request, member);
    request
}

fn opus(session: &str, key: &str, when: &str, output: u64) -> proto::UsageFact {
    row(session, None, key, "claude-opus-4-5", when, output)
}

/// Alice's first machine: sessions `s-1` and `s-2`.
fn alice_on_host_a() -> proto::UploadBatchRequest {
    let mut request = batch("host-a");
    request.sessions = vec![session("s-1"), session("s-2")];
    request.usage = vec![
        opus("s-1", "k1", "2026-03-01T09:05:00Z", 1),
        opus("s-1", "k2", "2026-03-01T09:20:00Z", 2),
        opus("s-2", "k3", "2026-03-01T09:40:00Z", 4),
        opus("s-2", "k4", "2026-03-01T10:20:00Z", 8),
    ];
    request
}

/// Every output is a distinct power of two, so a sum names the rows in it. Alice uploads from
/// two hosts (the second carries `s-1`'s fact again), Bob adds rows to the stored `s-1`
/// without its fact and carries `s-3`, and a key without a member carries `s-4` and adds to
/// `s-1`. Outputs: Alice 1+2+4+8+16 = 31, Bob 32+64 = 96, unattributed 128+256 = 384.
async fn seed(harness: &Harness, tenant: Uuid) {
    let mut alice_on_host_b = batch("host-b");
    alice_on_host_b.sessions = vec![session("s-1")];
    alice_on_host_b.usage = vec![opus("s-1", "k5", "2026-03-01T10:02:00Z", 16)];
    let mut bob = batch("host-b");
    bob.sessions = vec![session("s-3")];
    bob.usage = vec![
        opus("s-1", "k6", "2026-03-01T09:06:00Z", 32),
        opus("s-3", "k7", "2026-03-01T10:05:00Z", 64),
    ];
    let mut nobody = batch("host-c");
    nobody.sessions = vec![session("s-4")];
    nobody.usage = vec![
        opus("s-4", "k8", "2026-03-01T09:30:00Z", 128),
        opus("s-1", "k9", "2026-03-01T10:21:00Z", 256),
    ];
    for (member, request) in [
        (Some("alice"), alice_on_host_a()),
        (Some("alice"), alice_on_host_b),
        (Some("bob"), bob),
        (None, nobody),
    ] {
        harness
            .grpc
            .upload_batch(call_as(tenant, NOW, member, request))
            .await
            .expect("upload");
    }
}

async fn by_member(
    harness: &Harness,
    tenant: Uuid,
    from: &str,
    to: &str,
) -> proto::QueryUsageResponse {
    harness
        .query(tenant, usage_query(from, to, "member"))
        .await
        .expect("query")
}

/// Each group's key, output tokens and requests.
fn outputs(answer: &proto::QueryUsageResponse) -> Vec<(String, u64, u64)> {
    answer
        .groups
        .iter()
        .map(|group| {
            let figures = group.figures.clone().unwrap_or_default();
            let output = figures.tokens.map_or(0, |tokens| tokens.output);
            (group.key.clone(), output, figures.requests)
        })
        .collect()
}

/// The rollups agree with the rows they sum at every rollup key, member included (the whole
/// invariant, where [`assert_rollups_consistent`] checks the tenant's totals).
async fn assert_rollups_match_rows_per_key(harness: &Harness, tenant: Uuid) {
    let per_key = |statement: &'static str| {
        let admin = harness.admin.clone();
        async move {
            let lines: Vec<String> = sqlx::query_scalar(statement)
                .bind(tenant)
                .fetch_all(&admin)
                .await
                .expect("per key");
            lines
        }
    };
    let from_rows = per_key(
        "SELECT concat_ws(',', date_bin('15 minutes', at, timestamptz '1970-01-01Z'), \
           coalesce(model_key, ''), project_slug, host_id, agent_kind, member, sum(input), \
           sum(output), count(*), sum(cost)) \
         FROM usage.token_usage WHERE tenant_id = $1 \
         GROUP BY date_bin('15 minutes', at, timestamptz '1970-01-01Z'), coalesce(model_key, ''), \
           project_slug, host_id, agent_kind, member ORDER BY 1",
    )
    .await;
    let from_rollups = per_key(
        "SELECT concat_ws(',', bucket, model, project_slug, host_id, agent_kind, member, input, \
           output, requests, cost) \
         FROM usage.rollups WHERE tenant_id = $1 AND requests <> 0 ORDER BY 1",
    )
    .await;
    assert_eq!(from_rows, from_rollups, "rollups drifted from token_usage");
    assert_rollups_consistent(&harness.admin, tenant).await;
}

#[tokio::test]
async fn group_by_member_splits_every_figure_between_members_and_unattributed() {
    let (harness, tenant) = Harness::with_tenant().await;
    seed(&harness, tenant).await;
    assert_rollups_match_rows_per_key(&harness, tenant).await;
    let expected = [
        ("alice".to_string(), 31, 5),
        ("bob".to_string(), 96, 2),
        ("unattributed".to_string(), 384, 2),
    ];
    // Whole buckets read from the rollups; the unaligned range also reads its edge buckets
    // (09:05, 09:06, 10:20, 10:21 — one row of each member at least) from token_usage.
    for (from, to) in [
        ("2026-03-01T09:00:00Z", "2026-03-01T10:30:00Z"),
        ("2026-03-01T09:04:00Z", "2026-03-01T10:29:00Z"),
    ] {
        let answer = by_member(&harness, tenant, from, to).await;
        assert_eq!(answer.group_by, "member");
        assert_eq!(outputs(&answer), expected, "{from}..{to}");
        // The groups add up to the total, figure by figure.
        let total = answer.total.clone().expect("total");
        let tokens = |figures: &proto::Figures| figures.tokens.unwrap_or_default();
        let mut summed = proto::Tokens::default();
        let (mut requests, mut cost) = (0, 0.0);
        for group in &answer.groups {
            let figures = group.figures.clone().expect("figures");
            let group_tokens = tokens(&figures);
            summed.input += group_tokens.input;
            summed.output += group_tokens.output;
            summed.cache_read += group_tokens.cache_read;
            summed.cache_write_5m += group_tokens.cache_write_5m;
            summed.cache_write_1h += group_tokens.cache_write_1h;
            summed.total += group_tokens.total;
            requests += figures.requests;
            cost += figures.cost_usd;
        }
        assert_eq!(summed, tokens(&total), "{from}..{to}");
        assert_eq!(requests, total.requests);
        assert!(
            total.cost_usd > 0.0 && (cost - total.cost_usd).abs() < 1e-9,
            "{cost} vs {}",
            total.cost_usd
        );
    }
    let status = harness
        .query(
            tenant,
            proto::QueryUsageRequest {
                group_by: "person".to_string(),
                ..proto::QueryUsageRequest::default()
            },
        )
        .await
        .expect_err("unknown grouping");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("member"), "{}", status.message());
}

async fn listed(
    harness: &Harness,
    tenant: Uuid,
    member: Option<&str>,
) -> Vec<(String, Vec<String>)> {
    let mut sessions: Vec<(String, Vec<String>)> = harness
        .grpc
        .list_sessions(call(
            tenant,
            NOW,
            proto::ListSessionsRequest {
                member: member.map(str::to_string),
                ..proto::ListSessionsRequest::default()
            },
        ))
        .await
        .expect("list")
        .into_inner()
        .sessions
        .into_iter()
        .map(|summary| (summary.session_id, summary.members))
        .collect();
    sessions.sort();
    sessions
}

fn sessions_of(listing: &[(String, Vec<String>)]) -> Vec<&str> {
    listing.iter().map(|(id, _)| id.as_str()).collect()
}

#[tokio::test]
async fn sessions_list_every_member_that_reported_them_and_filter_by_member_or_unattributed() {
    let (harness, tenant) = Harness::with_tenant().await;
    seed(&harness, tenant).await;
    let names = |list: &[&str]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
    // `s-1` took rows from Alice, Bob and a key without a member: only the members are listed.
    assert_eq!(
        listed(&harness, tenant, None).await,
        [
            ("s-1".to_string(), names(&["alice", "bob"])),
            ("s-2".to_string(), names(&["alice"])),
            ("s-3".to_string(), names(&["bob"])),
            ("s-4".to_string(), Vec::new()),
        ]
    );
    let filtered = [
        ("alice", vec!["s-1", "s-2"]),
        ("bob", vec!["s-1", "s-3"]),
        ("unattributed", vec!["s-4"]),
        ("carol", vec![]),
    ];
    for (member, expected) in filtered {
        let listing = listed(&harness, tenant, Some(member)).await;
        assert_eq!(sessions_of(&listing), expected, "{member}");
    }
    for bad in ["", "two words", "Unattributed", "-alice"] {
        let status = harness
            .grpc
            .list_sessions(call(
                tenant,
                NOW,
                proto::ListSessionsRequest {
                    member: Some(bad.to_string()),
                    ..proto::ListSessionsRequest::default()
                },
            ))
            .await
            .expect_err(bad);
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}");
    }
    // The tree and SessionFigures carry the same members.
    let tree = harness.tree(tenant, NOW).await.expect("tree");
    assert_eq!(
        tree.session.expect("summary").members,
        names(&["alice", "bob"])
    );
    let figures = harness
        .figures(tenant, vec![reference(AGENT, "s-3")])
        .await
        .expect("figures");
    assert_eq!(figures[0].members, names(&["bob"]));
}

/// The collision rule decides a re-uploaded fact whoever sends it: an unchanged copy keeps the
/// stored row's member (and host), a replacing copy moves the row, member and host together,
/// to its uploader. The session counts every member that reported it either way.
#[tokio::test]
async fn a_re_upload_keeps_the_stored_copys_member_and_a_replacing_copy_moves_it() {
    let (harness, tenant) = Harness::with_tenant().await;
    seed(&harness, tenant).await;
    let range = ("2026-03-01T09:04:00Z", "2026-03-01T10:29:00Z");
    let grouped = by_member(&harness, tenant, range.0, range.1).await;

    let before = snapshot(&harness.admin, tenant).await;
    let again = harness
        .grpc
        .upload_batch(call_as(tenant, NOW, Some("alice"), alice_on_host_a()))
        .await
        .expect("same member again")
        .into_inner();
    assert_eq!(
        (
            again.usage_inserted,
            again.usage_replaced,
            again.usage_unchanged
        ),
        (0, 0, 4)
    );
    assert_eq!(
        snapshot(&harness.admin, tenant).await,
        before,
        "nothing changed"
    );

    let mut bob_on_host_d = alice_on_host_a();
    bob_on_host_d.host_id = "host-d".to_string();
    let copied = harness
        .grpc
        .upload_batch(call_as(tenant, NOW, Some("bob"), bob_on_host_d))
        .await
        .expect("another member, same facts")
        .into_inner();
    assert_eq!(copied.usage_unchanged, 4);
    assert_eq!(by_member(&harness, tenant, range.0, range.1).await, grouped);
    let owner = |key: &'static str| {
        let admin = harness.admin.clone();
        async move {
            let owner: (String, String) = sqlx::query_as(
                "SELECT member, host_id FROM usage.token_usage \
                 WHERE tenant_id = $1 AND dedup_key = $2",
            )
            .bind(tenant)
            .bind(key)
            .fetch_one(&admin)
            .await
            .expect("row");
            owner
        }
    };
    assert_eq!(
        owner("k3").await,
        ("alice".to_string(), "host-a".to_string())
    );
    let sessions = listed(&harness, tenant, Some("bob")).await;
    assert_eq!(
        sessions_of(&sessions),
        ["s-1", "s-2", "s-3"],
        "s-2 now counts Bob"
    );

    let mut larger = batch("host-d");
    larger.usage = vec![opus("s-2", "k3", "2026-03-01T09:40:00Z", 40)];
    let replaced = harness
        .grpc
        .upload_batch(call_as(tenant, NOW, Some("bob"), larger))
        .await
        .expect("replacing copy")
        .into_inner();
    assert_eq!(replaced.usage_replaced, 1);
    assert_eq!(owner("k3").await, ("bob".to_string(), "host-d".to_string()));
    assert_eq!(
        outputs(&by_member(&harness, tenant, range.0, range.1).await),
        [
            ("alice".to_string(), 27, 4),
            ("bob".to_string(), 136, 3),
            ("unattributed".to_string(), 384, 2),
        ]
    );
    assert_rollups_match_rows_per_key(&harness, tenant).await;
}

#[tokio::test]
async fn a_malformed_member_is_refused_and_nothing_is_stored() {
    let (harness, tenant) = Harness::with_tenant().await;
    for bad in ["two words", "unattributed", "-alice", &"a".repeat(65)] {
        let mut request = call(tenant, NOW, alice_on_host_a());
        request
            .metadata_mut()
            .insert(MEMBER_KEY, bad.parse().expect("ascii metadata"));
        let status = harness.grpc.upload_batch(request).await.expect_err(bad);
        assert_eq!(status.code(), Code::InvalidArgument, "{bad}");
    }
    assert!(snapshot(&harness.admin, tenant).await.is_empty());
}
