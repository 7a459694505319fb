//! Members over gRPC: the `x-baton-member` of each open, heartbeat and pulse is recorded on the
//! session once, first seen first; ListSessions filters by member (and `unattributed`); an
//! invalid member is refused before anything is written; another tenant's calls attribute
//! nothing here.

use tonic::Code;
use uuid::Uuid;

use baton_proto::registry::v1 as proto;

use crate::Harness;
use crate::console_client::{Beat, Console, ago};

fn members_of(page: &proto::ListSessionsResponse) -> Vec<(String, Vec<String>)> {
    page.sessions
        .iter()
        .map(|summary| {
            let session = summary.session.as_ref().expect("session");
            (session.session_id.clone(), summary.members.clone())
        })
        .collect()
}

fn filtered(member: &str) -> proto::ListSessionsRequest {
    proto::ListSessionsRequest {
        member: Some(member.to_string()),
        ..Default::default()
    }
}

#[tokio::test]
async fn each_reporting_member_is_recorded_once_and_the_list_filters_by_member() {
    let harness = Harness::new().await;
    let (mut console, stranger) = Console::start_two(&harness).await;
    let mut alice = console.as_member("alice");
    let mut bob = console.as_member("bob");
    alice.open("shared", ago(600)).await;
    alice.heartbeat("shared", ago(590)).await;
    bob.heartbeat("shared", ago(580)).await;
    alice.heartbeat("shared", ago(570)).await;
    bob.open("bobs", ago(500)).await;
    console.open("nobodys", ago(400)).await;
    // A pulse attributes too (the sidecar sends the same key's member).
    let mut carol = console.as_member("carol");
    carol
        .pulse(&Beat::new("nobodys", Uuid::now_v7(), "host-a", ago(390)))
        .await;
    console.open("unclaimed", ago(300)).await;
    // Another tenant's member on the same natural key attributes nothing here.
    stranger.as_member("mallory").open("shared", ago(200)).await;

    let all = console
        .list_sessions(Default::default())
        .await
        .expect("all");
    assert_eq!(
        members_of(&all),
        [
            ("unclaimed".to_string(), vec![]),
            ("nobodys".to_string(), vec!["carol".to_string()]),
            ("bobs".to_string(), vec!["bob".to_string()]),
            (
                "shared".to_string(),
                vec!["alice".to_string(), "bob".to_string()]
            ),
        ]
    );
    let names = |page: &proto::ListSessionsResponse| -> Vec<String> {
        members_of(page).into_iter().map(|(name, _)| name).collect()
    };
    for (member, expected) in [
        ("alice", vec!["shared"]),
        ("bob", vec!["bobs", "shared"]),
        ("unattributed", vec!["unclaimed"]),
        ("mallory", vec![]),
    ] {
        let page = console.list_sessions(filtered(member)).await.expect(member);
        assert_eq!(names(&page), expected, "{member}");
    }
    let refused = console
        .list_sessions(filtered("not a name"))
        .await
        .expect_err("invalid filter");
    assert_eq!(refused.code(), Code::InvalidArgument);

    // An invalid member is refused before the open is written.
    let refused = console
        .as_member("-dash")
        .try_open("never", ago(100))
        .await
        .expect_err("invalid member");
    assert_eq!(refused.code(), Code::InvalidArgument);
    let after = console
        .list_sessions(Default::default())
        .await
        .expect("after");
    assert_eq!(after.sessions.len(), 4, "nothing opened");
}
