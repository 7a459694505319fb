//! ListSessions over gRPC: keyset paging, filters, cursor and limit bounds, tenant isolation.

use std::collections::HashSet;

use tonic::Code;
use uuid::Uuid;

use baton_kit::ErrorCode;
use baton_kit::clock::to_timestamp;
use baton_proto::common::v1 as common;
use baton_proto::registry::v1 as proto;

use crate::Harness;
use crate::console_client::{Beat, Console, ago, key, run_ids};

fn list(limit: u32) -> proto::ListSessionsRequest {
    proto::ListSessionsRequest {
        limit,
        ..Default::default()
    }
}

fn invalid(status: &tonic::Status) -> bool {
    status.code() == Code::InvalidArgument
        && ErrorCode::from_status(status) == ErrorCode::InvalidInput
}

#[tokio::test]
async fn pages_run_newest_first_across_three_pages_without_duplicates_or_gaps() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    let mut opened = Vec::new();
    for index in 0..7 {
        let at = ago(3600 - index * 60);
        let run = console.open(&format!("p{index}"), at).await;
        opened.push((at, Uuid::parse_str(&run).expect("uuid")));
    }
    // Two sessions opened in the same millisecond: the id breaks the tie.
    for name in ["tie-a", "tie-b"] {
        let at = ago(60);
        let run = console.open(name, at).await;
        opened.push((at, Uuid::parse_str(&run).expect("uuid")));
    }
    opened.sort_by(|a, b| b.cmp(a));
    let expected: Vec<String> = opened.iter().map(|(_, id)| id.to_string()).collect();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = console
            .list_sessions(proto::ListSessionsRequest {
                cursor: cursor.clone(),
                ..list(3)
            })
            .await
            .expect("page");
        pages += 1;
        assert_eq!(page.sessions.len(), 3, "page {pages} is full");
        seen.extend(run_ids(&page));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
        assert!(pages < 3, "the third page is the last");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, expected, "newest opened first, id descending on ties");
    assert_eq!(
        seen.iter().collect::<HashSet<_>>().len(),
        9,
        "no duplicates"
    );

    let all = console.list_sessions(list(0)).await.expect("default limit");
    assert_eq!(run_ids(&all), expected, "0 means 50");
    assert_eq!(all.next_cursor, None);
    assert!(console.list_sessions(list(100)).await.is_ok());
    let too_many = console.list_sessions(list(101)).await.expect_err("101");
    assert!(invalid(&too_many), "{too_many:?}");
}

#[tokio::test]
async fn filters_narrow_the_list_and_states_are_derived_at_the_request_instant() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    let live = console.open("live", ago(10)).await;
    let idle = console
        .open_with(
            proto::OpenRequest {
                key: Some(key("idle")),
                source: proto::Source::Startup.into(),
                project: Some("baton".to_string()),
                briefed_memories: Some(proto::BriefedMemories {
                    items: vec![common::BriefedMemory {
                        id: Uuid::now_v7().to_string(),
                        topic: "finish it".to_string(),
                        status: "open".to_string(),
                    }],
                }),
                ..Default::default()
            },
            ago(3600),
        )
        .await;
    let gone = console.open("gone", ago(3500)).await;
    let killed = Beat {
        end_reason: Some("process_exited"),
        ..Beat::new("gone", Uuid::now_v7(), "host-a", ago(1800))
    };
    console.pulse(&killed).await;
    let shut = console.open("shut", ago(3400)).await;
    console.close("shut", ago(3000)).await;
    let other = console
        .open_with(
            proto::OpenRequest {
                key: Some(key("other")),
                source: proto::Source::Startup.into(),
                project: Some("other".to_string()),
                ..Default::default()
            },
            ago(300),
        )
        .await;
    let middle = console.open("middle", ago(250)).await;
    let codex = console
        .open_with(
            proto::OpenRequest {
                key: Some(proto::SessionKey {
                    agent: "codex".to_string(),
                    session_id: "cx".to_string(),
                }),
                source: proto::Source::Startup.into(),
                project: Some("baton".to_string()),
                ..Default::default()
            },
            ago(200),
        )
        .await;

    let cases: Vec<(&str, proto::ListSessionsRequest, Vec<&String>)> = vec![
        (
            "no filter",
            list(0),
            vec![&live, &codex, &middle, &other, &shut, &gone, &idle],
        ),
        (
            "project, trimmed",
            proto::ListSessionsRequest {
                project: Some(" other ".to_string()),
                ..list(0)
            },
            vec![&other],
        ),
        (
            "agent",
            proto::ListSessionsRequest {
                agent: Some("codex".to_string()),
                ..list(0)
            },
            vec![&codex],
        ),
        (
            "opened window is half-open",
            proto::ListSessionsRequest {
                opened_from: Some(to_timestamp(ago(300))),
                opened_to: Some(to_timestamp(ago(200))),
                ..list(0)
            },
            vec![&middle, &other],
        ),
        (
            "live",
            proto::ListSessionsRequest {
                state: proto::SessionState::Live.into(),
                ..list(0)
            },
            vec![&live],
        ),
        (
            "idle",
            proto::ListSessionsRequest {
                state: proto::SessionState::Idle.into(),
                ..list(0)
            },
            vec![&codex, &middle, &other, &idle],
        ),
        (
            "disconnected: the killed client",
            proto::ListSessionsRequest {
                state: proto::SessionState::Disconnected.into(),
                ..list(0)
            },
            vec![&gone],
        ),
        (
            "closed",
            proto::ListSessionsRequest {
                state: proto::SessionState::Closed.into(),
                ..list(0)
            },
            vec![&shut],
        ),
        (
            "project and state together",
            proto::ListSessionsRequest {
                project: Some("baton".to_string()),
                state: proto::SessionState::Idle.into(),
                ..list(0)
            },
            vec![&codex, &middle, &idle],
        ),
    ];
    for (name, request, expected) in cases {
        let page = console.list_sessions(request).await.expect(name);
        let expected: Vec<String> = expected.into_iter().cloned().collect();
        assert_eq!(run_ids(&page), expected, "{name}");
        assert_eq!(page.next_cursor, None, "{name}: one page");
    }

    let all = console.list_sessions(list(0)).await.expect("all");
    let summary = |run: &String| {
        all.sessions
            .iter()
            .find(|summary| summary.session.as_ref().map(|s| &s.session_run_id) == Some(run))
            .expect("listed")
            .clone()
    };
    let gone_summary = summary(&gone);
    assert_eq!(gone_summary.host_id.as_deref(), Some("host-a"));
    assert_eq!(gone_summary.state, proto::SessionState::Disconnected as i32);
    let idle_summary = summary(&idle);
    assert_eq!(idle_summary.host_id, None, "no sidecar ever reported");
    let idle_session = idle_summary.session.expect("session");
    assert!(idle_session.briefed_memories.is_empty(), "lists carry none");
    assert!(idle_session.briefing_delivered_at.is_some());

    let backwards = console
        .list_sessions(proto::ListSessionsRequest {
            opened_from: Some(to_timestamp(ago(100))),
            opened_to: Some(to_timestamp(ago(200))),
            ..list(0)
        })
        .await
        .expect_err("backwards window");
    assert!(invalid(&backwards), "{backwards:?}");
    let unknown_state = console
        .list_sessions(proto::ListSessionsRequest {
            state: 99,
            ..list(0)
        })
        .await
        .expect_err("unknown state");
    assert!(invalid(&unknown_state), "{unknown_state:?}");
}

#[tokio::test]
async fn a_state_filter_scans_five_times_the_limit_and_returns_sparse_pages() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    // Newest first: five idle sessions, then the disconnected one, then one more idle.
    let oldest = console.open("oldest", ago(9000)).await;
    let gone = console.open("gone", ago(8000)).await;
    let killed = Beat {
        end_reason: Some("process_exited"),
        ..Beat::new("gone", Uuid::now_v7(), "host-a", ago(7000))
    };
    console.pulse(&killed).await;
    for index in 0..5 {
        console
            .open(&format!("quiet{index}"), ago(6000 - index * 100))
            .await;
    }
    let filtered = |cursor: Option<String>| proto::ListSessionsRequest {
        state: proto::SessionState::Disconnected.into(),
        cursor,
        ..list(1)
    };

    let first = console.list_sessions(filtered(None)).await.expect("first");
    assert!(first.sessions.is_empty(), "five scanned, none matched");
    assert!(first.next_cursor.is_some(), "more rows follow the scan");
    let second = console
        .list_sessions(filtered(first.next_cursor))
        .await
        .expect("second");
    assert_eq!(run_ids(&second), vec![gone]);
    assert!(second.next_cursor.is_some(), "an older row follows");
    let third = console
        .list_sessions(filtered(second.next_cursor))
        .await
        .expect("third");
    assert!(third.sessions.is_empty());
    assert_eq!(third.next_cursor, None, "the scan reached the end");

    let everything = console.list_sessions(list(0)).await.expect("all");
    assert_eq!(run_ids(&everything).last(), Some(&oldest));
}

#[tokio::test]
async fn a_malformed_cursor_is_invalid_input() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    for index in 0..3 {
        console
            .open(&format!("c{index}"), ago(600 - index * 60))
            .await;
    }
    let first = console.list_sessions(list(2)).await.expect("first");
    let cursor = first.next_cursor.clone().expect("more");
    let rest = console
        .list_sessions(proto::ListSessionsRequest {
            cursor: Some(cursor.clone()),
            ..list(2)
        })
        .await
        .expect("a returned cursor works");
    assert_eq!(rest.sessions.len(), 1);
    for bad in [
        "nope".to_string(),
        String::new(),
        format!("{cursor}0"),
        cursor.replace('.', "-"),
        "123.not-a-uuid".to_string(),
    ] {
        let refused = console
            .list_sessions(proto::ListSessionsRequest {
                cursor: Some(bad.clone()),
                ..list(2)
            })
            .await
            .expect_err("malformed");
        assert!(invalid(&refused), "{bad:?}: {refused:?}");
        assert!(
            refused.message().contains("cursor"),
            "{}",
            refused.message()
        );
    }
}

#[tokio::test]
async fn another_tenants_sessions_never_appear() {
    let harness = Harness::new().await;
    let (mut mine, mut theirs) = Console::start_two(&harness).await;
    let mut my_runs = Vec::new();
    for index in 0..2 {
        my_runs.push(mine.open(&format!("m{index}"), ago(900 - index * 60)).await);
    }
    for index in 0..3 {
        // Same natural keys in the other tenant, opened in between and after.
        theirs
            .open(&format!("m{index}"), ago(870 - index * 60))
            .await;
    }
    theirs.open("later", ago(300)).await;
    my_runs.reverse();
    let page = mine.list_sessions(list(0)).await.expect("mine");
    assert_eq!(run_ids(&page), my_runs);
    let their_page = theirs.list_sessions(list(2)).await.expect("theirs");
    let their_cursor = their_page.next_cursor.expect("more of theirs");
    let crossed = mine
        .list_sessions(proto::ListSessionsRequest {
            cursor: Some(their_cursor),
            ..list(0)
        })
        .await
        .expect("a cursor is only a position");
    for run in run_ids(&crossed) {
        assert!(my_runs.contains(&run), "only mine");
    }
}

#[tokio::test]
async fn find_sessions_answers_the_known_keys_of_this_tenant_only() {
    let harness = Harness::new().await;
    let (mut mine, mut theirs) = Console::start_two(&harness).await;
    let known = mine.open("known", ago(600)).await;
    mine.close("known", ago(300)).await;
    let live = mine.open("live", ago(30)).await;
    theirs.open("theirs", ago(60)).await;

    let found = mine
        .find_sessions(vec![
            key("known"),
            key("live"),
            key("live"),
            key("never-seen"),
            key("theirs"),
        ])
        .await
        .expect("find");
    let mut answered: Vec<(String, i32)> = found
        .sessions
        .iter()
        .map(|summary| {
            let session = summary.session.as_ref().expect("session");
            (session.session_run_id.clone(), summary.state)
        })
        .collect();
    answered.sort();
    let mut expected = vec![
        (known, proto::SessionState::Closed as i32),
        (live, proto::SessionState::Live as i32),
    ];
    expected.sort();
    assert_eq!(answered, expected, "each known key once, with its state");
    assert!(
        found
            .sessions
            .iter()
            .all(|summary| summary.position.is_empty())
    );

    for (name, keys) in [
        ("no keys", Vec::new()),
        (
            "201 keys",
            (0..201).map(|i| key(&format!("s{i}"))).collect(),
        ),
        (
            "an invalid harness",
            vec![proto::SessionKey {
                agent: "Not A Harness!".to_string(),
                session_id: "s".to_string(),
            }],
        ),
    ] {
        let refused = mine.find_sessions(keys).await.expect_err(name);
        assert!(invalid(&refused), "{name}: {refused:?}");
    }
}

#[tokio::test]
async fn every_listed_row_carries_the_cursor_that_resumes_after_it() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    for index in 0..4 {
        console
            .open(&format!("r{index}"), ago(600 - index * 60))
            .await;
    }
    let all = console.list_sessions(list(0)).await.expect("all");
    let after_second = console
        .list_sessions(proto::ListSessionsRequest {
            cursor: Some(all.sessions[1].position.clone()),
            ..list(0)
        })
        .await
        .expect("resume");
    assert_eq!(run_ids(&after_second), run_ids(&all)[2..]);
}
