//! The briefing: each section's content and limits, and that reading it writes nothing.

use chrono::Duration;

use baton_kit::selector::Selector;
use baton_provenance::briefing::{BriefingQuery, Mode};
use baton_provenance::link::Provenance as WriteProvenance;
use baton_provenance::memory::{ActorKind, CommitmentStatus, MemoryType};

use crate::{Harness, call, memory, t};

#[tokio::test]
async fn sections_hold_what_they_promise_within_their_limits() {
    let (harness, tenant) = Harness::with_tenant().await;
    let long_ago = call(tenant, t(0));
    let now = t(24 * 30);
    let today = call(tenant, now);
    let write = |at: baton_kit::grpc::CallContext,
                 memory_type,
                 topic: &str,
                 content: &str,
                 project: Option<&str>,
                 due: Option<chrono::DateTime<chrono::Utc>>| {
        let mut new_memory = memory(memory_type, topic, content, project);
        new_memory.due_at = due;
        let provenance = harness.provenance.clone();
        async move {
            provenance
                .remember(
                    &at,
                    &new_memory,
                    ActorKind::UserApi,
                    WriteProvenance::Default,
                )
                .await
                .expect("remember")
        }
    };
    // Old, still-open commitment and blocker: stale candidates.
    let stale_commitment = write(
        long_ago,
        MemoryType::Commitment,
        "old",
        "renew the cert",
        Some("baton"),
        None,
    )
    .await;
    write(
        long_ago,
        MemoryType::Blocker,
        "gate",
        "waiting on legal",
        Some("baton"),
        None,
    )
    .await;
    // Fresh commitments: two overdue, one due later, one undated.
    for (topic, content, due_in_days) in [
        ("a", "overdue one", -2),
        ("b", "overdue two", -1),
        ("c", "due later", 3),
    ] {
        write(
            today,
            MemoryType::Commitment,
            topic,
            content,
            Some("baton"),
            Some(now + Duration::days(due_in_days)),
        )
        .await;
    }
    let resolved = write(
        today,
        MemoryType::Commitment,
        "d",
        "already done",
        Some("baton"),
        None,
    )
    .await;
    harness
        .transition(
            &today,
            resolved.memory_id,
            CommitmentStatus::Resolved,
            WriteProvenance::Default,
        )
        .await
        .expect("resolve");
    for index in 0..4 {
        write(
            today,
            MemoryType::Decision,
            "choice",
            &format!("decision {index}"),
            Some("baton"),
            None,
        )
        .await;
    }
    write(
        today,
        MemoryType::Preference,
        "style",
        "short commits",
        None,
        None,
    )
    .await;
    write(
        today,
        MemoryType::Decision,
        "elsewhere",
        "other project",
        Some("other"),
        None,
    )
    .await;
    let events_before = harness.count("events").await;

    let query = BriefingQuery::new(
        Selector::Project {
            project: "baton".to_string(),
        },
        Mode::Brief,
        &[],
        None,
    )
    .expect("query");
    let briefing = harness
        .provenance
        .briefing(&today, &query)
        .await
        .expect("briefing");
    let commitments = briefing.commitments.expect("commitments");
    assert_eq!(
        commitments.count, 4,
        "open commitments of the project, resolved excluded"
    );
    assert_eq!(commitments.items.len(), 3, "brief mode: 3 items");
    assert!(commitments.has_more);
    let topics: Vec<&str> = commitments
        .items
        .iter()
        .map(|item| item.row.topic.as_str())
        .collect();
    assert_eq!(topics, vec!["a", "b", "c"], "soonest due first");
    assert!(commitments.items[0].overdue && !commitments.items[2].overdue);
    let overdue = briefing.overdue.expect("overdue");
    assert_eq!(overdue.count, 2);
    assert!(overdue.items.iter().all(|item| item.overdue));
    assert_eq!(briefing.blockers.expect("blockers").count, 1);
    let stale = briefing.stale_candidates.expect("stale");
    assert_eq!(stale.count, 2);
    assert!(
        stale
            .items
            .iter()
            .any(|item| item.id == stale_commitment.memory_id)
    );
    let decisions = briefing.recent_decisions.expect("decisions");
    assert_eq!(
        (decisions.count, decisions.items.len()),
        (4, 3),
        "other project excluded"
    );
    assert_eq!(
        briefing.preferences.expect("preferences").count,
        0,
        "preference has no project"
    );

    let everything = BriefingQuery::new(
        Selector::All {},
        Mode::Full,
        &["recentDecisions".to_string(), "preferences".to_string()],
        Some(2),
    )
    .expect("query");
    let all = harness
        .provenance
        .briefing(&today, &everything)
        .await
        .expect("briefing");
    assert!(all.commitments.is_none(), "only requested sections");
    let decisions = all.recent_decisions.expect("decisions");
    assert_eq!(
        (decisions.count, decisions.items.len()),
        (5, 2),
        "sectionLimit wins"
    );
    assert_eq!(all.preferences.expect("preferences").count, 1);

    let scoped = BriefingQuery::new(
        Selector::ScopeProject {
            scope: "personal".to_string(),
            project: "baton".to_string(),
            include_unscoped: true,
        },
        Mode::Full,
        &["preferences".to_string()],
        None,
    )
    .expect("query");
    let with_unscoped = harness
        .provenance
        .briefing(&today, &scoped)
        .await
        .expect("briefing");
    assert_eq!(
        with_unscoped.preferences.expect("preferences").count,
        1,
        "includeUnscoped admits project-less rows"
    );

    assert_eq!(
        harness.count("events").await,
        events_before,
        "a briefing writes no event"
    );
}
