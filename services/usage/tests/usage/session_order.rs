//! ListSessions in first-activity order (the console's one list of sessions): newest start
//! first, no lower bound or span limit, each row positioned so a listing resumes after any row,
//! and cursors bound to the order that issued them.

use tonic::Code;

use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;

use crate::*;

/// Sessions whose first-activity order differs from their last-activity order; one of them
/// started two years before the others.
fn sessions() -> proto::UploadBatchRequest {
    let mut request = batch("h");
    request.sessions = [
        ("s-old", "2024-02-01T09:00:00Z", "2026-03-01T10:25:00Z"),
        ("s-mid", "2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z"),
        ("s-new", "2026-03-01T10:00:00Z", "2026-03-01T10:05:00Z"),
    ]
    .iter()
    .map(|(id, first, last)| {
        let mut fact = session(id);
        fact.first_activity_at = ts(first);
        fact.last_activity_at = ts(last);
        fact
    })
    .collect();
    request
}

fn first_activity(limit: u32, cursor: Option<String>) -> proto::ListSessionsRequest {
    proto::ListSessionsRequest {
        limit: Some(limit),
        cursor,
        order: proto::SessionOrder::FirstActivity.into(),
        ..proto::ListSessionsRequest::default()
    }
}

fn ids(page: &proto::ListSessionsResponse) -> Vec<&str> {
    page.sessions
        .iter()
        .map(|summary| summary.session_id.as_str())
        .collect()
}

#[tokio::test]
async fn first_activity_order_lists_newest_start_first_without_a_lower_bound() {
    let (harness, tenant) = Harness::with_tenant().await;
    harness.upload(tenant, NOW, sessions()).await;
    let list = |request| harness.grpc.list_sessions(call(tenant, NOW, request));

    let all = list(first_activity(10, None))
        .await
        .expect("all")
        .into_inner();
    assert_eq!(ids(&all), ["s-new", "s-mid", "s-old"]);
    assert!(all.next_cursor.is_none());
    assert!(all.sessions.iter().all(|row| !row.position.is_empty()));

    // Resuming from any row's position lists exactly what follows it.
    let after_mid = list(first_activity(10, Some(all.sessions[1].position.clone())))
        .await
        .expect("after s-mid")
        .into_inner();
    assert_eq!(ids(&after_mid), ["s-old"]);

    // A full page's next cursor is its last row's position.
    let first = list(first_activity(2, None))
        .await
        .expect("page")
        .into_inner();
    assert_eq!(ids(&first), ["s-new", "s-mid"]);
    assert_eq!(
        first.next_cursor.as_deref(),
        Some(first.sessions[1].position.as_str())
    );

    // The last-activity listing keeps its 30-day default window and its order.
    let recent = list(proto::ListSessionsRequest {
        limit: Some(10),
        ..proto::ListSessionsRequest::default()
    })
    .await
    .expect("last activity")
    .into_inner();
    assert_eq!(ids(&recent), ["s-old", "s-new", "s-mid"]);

    // A cursor is refused under the order that did not issue it.
    let last_cursor = recent.sessions[0].position.clone();
    let status = list(first_activity(10, Some(last_cursor)))
        .await
        .expect_err("last-activity cursor in first-activity order");
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = list(proto::ListSessionsRequest {
        cursor: Some(all.sessions[0].position.clone()),
        ..proto::ListSessionsRequest::default()
    })
    .await
    .expect_err("first-activity cursor in last-activity order");
    assert_eq!(status.code(), Code::InvalidArgument);

    let status = list(proto::ListSessionsRequest {
        order: 7,
        ..proto::ListSessionsRequest::default()
    })
    .await
    .expect_err("unknown order");
    assert_eq!(status.code(), Code::InvalidArgument);
}
