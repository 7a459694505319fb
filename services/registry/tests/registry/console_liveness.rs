//! GetLiveness's /clear successor and the pulse's host label over gRPC.

use tonic::Code;
use uuid::Uuid;

use baton_kit::ErrorCode;
use baton_proto::registry::v1 as proto;

use crate::Harness;
use crate::console_client::{Beat, Console, ago, key};

fn following(session_id: &str, follows: &str) -> proto::OpenRequest {
    proto::OpenRequest {
        key: Some(key(session_id)),
        source: proto::Source::Startup.into(),
        follows_session_id: Some(follows.to_string()),
        ..Default::default()
    }
}

#[tokio::test]
async fn get_liveness_names_the_newest_clear_successor() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    let first = console.open("first", ago(600)).await;
    assert_eq!(
        console.liveness(&first).await.followed_by_session_run_id,
        None
    );

    let second = console
        .open_with(following("second", "first"), ago(500))
        .await;
    let read = console.liveness(&first).await;
    assert_eq!(read.followed_by_session_run_id.as_ref(), Some(&second));
    let successor = console.liveness(&second).await;
    assert_eq!(successor.follows_session_run_id.as_ref(), Some(&first));
    assert_eq!(successor.followed_by_session_run_id, None);

    let third = console
        .open_with(following("third", "first"), ago(400))
        .await;
    assert_eq!(
        console
            .liveness(&first)
            .await
            .followed_by_session_run_id
            .as_ref(),
        Some(&third),
        "the newest opened follower"
    );

    let page = console
        .list_sessions(proto::ListSessionsRequest::default())
        .await
        .expect("list");
    let summary = page
        .sessions
        .iter()
        .find(|summary| summary.session.as_ref().map(|s| &s.session_run_id) == Some(&second))
        .expect("listed");
    assert_eq!(summary.follows_session_run_id.as_ref(), Some(&first));
}

#[tokio::test]
async fn a_pulse_label_is_validated_and_the_newest_pulse_wins() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    let run = console.open("labelled", ago(600)).await;
    let episode = Uuid::now_v7();
    let long = "a".repeat(256);
    for bad in ["desk\u{7}top", "two\nlines", "   ", long.as_str()] {
        let refused = console
            .try_pulse(
                &Beat {
                    host_label: Some(bad),
                    ..Beat::new("labelled", episode, "host-a", ago(500))
                },
                None,
            )
            .await
            .expect_err("refused label");
        assert_eq!(refused.code(), Code::InvalidArgument, "{bad:?}");
        assert_eq!(ErrorCode::from_status(&refused), ErrorCode::InvalidInput);
        assert!(
            refused.message().contains("hostLabel"),
            "{}",
            refused.message()
        );
    }
    let label = |read: &proto::GetLivenessResponse| read.episodes[0].host_label.clone();

    console
        .pulse(&Beat {
            host_label: Some("  Ana's laptop "),
            ..Beat::new("labelled", episode, "host-a", ago(400))
        })
        .await;
    let read = console.liveness(&run).await;
    assert_eq!(label(&read).as_deref(), Some("Ana's laptop"), "trimmed");

    console
        .pulse(&Beat::new("labelled", episode, "host-a", ago(300)))
        .await;
    let read = console.liveness(&run).await;
    assert_eq!(
        label(&read).as_deref(),
        Some("Ana's laptop"),
        "no label keeps it"
    );

    let replay = Beat {
        host_label: Some("stale"),
        ..Beat::new("labelled", episode, "host-a", ago(200))
    };
    console
        .try_pulse(&replay, Some(ago(350)))
        .await
        .expect("replayed pulse");
    let read = console.liveness(&run).await;
    assert_eq!(
        label(&read).as_deref(),
        Some("Ana's laptop"),
        "an older observation does not win"
    );

    console
        .pulse(&Beat {
            host_label: Some("renamed"),
            ..Beat::new("labelled", episode, "host-a", ago(100))
        })
        .await;
    let read = console.liveness(&run).await;
    assert_eq!(label(&read).as_deref(), Some("renamed"));
}
