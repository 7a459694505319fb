//! The upload's planning: splitting a session's facts into batches within bounds and in
//! dependency order, and the ledger that sends only what is new or changed.

use super::facts::{self, SessionFacts};
use super::ledger::{Ledger, hash_of};
use super::plan::{Limits, Planned, plan};
use super::tests::{NOW_MS, SPOTTER, fixture_corpus};
use super::wire::DeliveryFact;

fn session_with(key: &str, agents: usize, rows: usize) -> SessionFacts {
    let (_dir, corpus) = fixture_corpus();
    let mut facts = facts::build(&corpus, NOW_MS)
        .sessions
        .into_iter()
        .find(|s| s.session.session_id == SPOTTER)
        .expect("spotter");
    facts.key = key.to_string();
    let agent = facts.agents[0].clone();
    facts.agents = (0..agents)
        .map(|n| {
            let mut a = agent.clone();
            a.agent_id = (n > 0).then(|| format!("a{n}"));
            a
        })
        .collect();
    facts.edges.clear();
    let row = facts.usage.values().next().expect("row").clone();
    facts.usage = (0..rows)
        .map(|n| {
            let mut r = row.clone();
            r.dedup_key = format!("m{n}:r{n}");
            (r.dedup_key.clone(), r)
        })
        .collect();
    facts
}

#[test]
fn splitting_keeps_every_batch_within_bounds_and_in_dependency_order() {
    let limits = Limits {
        sessions: 2,
        agents: 3,
        edges: 3,
        usage: 4,
        deliveries: 2,
        max_bytes: usize::MAX,
    };
    // (agents, rows per session, sessions) -> batches
    let cases = [
        (1, 1, 1, 1),
        (1, 4, 1, 1),
        (1, 5, 1, 2),
        (7, 0, 1, 3),
        (2, 9, 3, 7),
    ];
    for (agents, rows, sessions, batches) in cases {
        let deltas: Vec<_> = (0..sessions)
            .map(|n| {
                let facts = session_with(&format!("k{n}"), agents, rows);
                Ledger::default().delta(&facts).expect("new")
            })
            .collect();
        let planned = plan("h", None, deltas, Vec::new(), limits);
        assert_eq!(planned.len(), batches, "{agents} {rows} {sessions}");
        for p in &planned {
            let b = &p.batch;
            assert!(!b.is_empty());
            assert!(b.sessions.len() <= 2 && b.agents.len() <= 3 && b.usage.len() <= 4);
        }
        let sent_rows: usize = planned.iter().map(|p| p.batch.usage.len()).sum();
        assert_eq!(sent_rows, rows * sessions);
        // Each session's facts hash is on the batch carrying the last of its facts, and no
        // agent or usage row comes before its session.
        for n in 0..sessions {
            let key = format!("k{n}");
            let carrying: Vec<usize> = planned
                .iter()
                .enumerate()
                .filter(|(_, p)| p.facts.iter().any(|(k, _)| *k == key))
                .map(|(i, _)| i)
                .collect();
            let with_hash: Vec<usize> = planned
                .iter()
                .enumerate()
                .filter(|(_, p)| p.facts.iter().any(|(k, h)| *k == key && h.is_some()))
                .map(|(i, _)| i)
                .collect();
            assert_eq!(with_hash, vec![*carrying.last().expect("carried")]);
            let first_row = planned
                .iter()
                .position(|p| p.usage.iter().any(|(k, _, _)| *k == key));
            if let Some(first_row) = first_row {
                assert!(first_row >= carrying[0]);
            }
        }
    }
}

/// The batches sending every part of `facts` as new, within `limits`.
fn plan_all_new(facts: &SessionFacts, limits: Limits) -> Vec<Planned> {
    plan(
        "h",
        None,
        vec![Ledger::default().delta(facts).expect("new")],
        Vec::new(),
        limits,
    )
}

#[test]
fn a_byte_budget_splits_too() {
    let facts = session_with("k", 1, 50);
    let row = serde_json::to_vec(facts.usage.values().next().expect("row")).expect("json");
    let limits = Limits {
        max_bytes: row.len() * 10,
        ..Limits::default()
    };
    let planned = plan_all_new(&facts, limits);
    assert!(planned.len() >= 5, "{}", planned.len());
    for p in &planned {
        let size = serde_json::to_vec(&p.batch).expect("json").len();
        assert!(size <= row.len() * 12, "{size}");
    }
}

#[test]
fn deliveries_are_batched_within_their_bound() {
    let delivery = |n: usize| DeliveryFact {
        delivery_id: format!("d{n}"),
        agent: "claude-code".into(),
        session_id: "s".into(),
        event: "Stop".into(),
        observed_at: "2026-03-01T10:00:00.000Z".into(),
    };
    let planned = plan(
        "h",
        None,
        Vec::new(),
        (0..5).map(delivery).collect(),
        Limits {
            deliveries: 2,
            ..Limits::default()
        },
    );
    let sizes: Vec<usize> = planned.iter().map(|p| p.batch.deliveries.len()).collect();
    assert_eq!(sizes, vec![2, 2, 1]);
}

#[test]
fn the_ledger_sends_only_what_is_new_or_changed() {
    let facts = session_with("k", 2, 3);
    let mut ledger = Ledger::default();
    let first = ledger.delta(&facts).expect("all new");
    assert!(first.facts.is_some());
    assert_eq!(first.usage.len(), 3);
    let planned = plan("h", None, vec![first], Vec::new(), Limits::default());
    ledger.acknowledge(&planned, &[true]);
    assert_eq!(ledger.delta(&facts), None, "unchanged: nothing to send");

    // A later copy of one request with a larger output count: only that row, no facts.
    let mut grown = facts.clone();
    let key = grown.usage.keys().next().expect("key").clone();
    grown.usage.get_mut(&key).expect("row").output += 10;
    let delta = ledger.delta(&grown).expect("changed row");
    assert!(delta.facts.is_none());
    assert_eq!(delta.usage.len(), 1);
    assert_eq!(delta.usage[0].1.dedup_key, key);
    assert_eq!(delta.usage[0].0, hash_of(&grown.usage[&key]));

    // A new agent changes the facts: they go again, the rows do not.
    let mut more = facts.clone();
    let mut agent = more.agents[1].clone();
    agent.agent_id = Some("late".into());
    more.agents.push(agent);
    let delta = ledger.delta(&more).expect("changed facts");
    assert!(delta.facts.is_some());
    assert!(delta.usage.is_empty());
}

#[test]
fn unanswered_batches_are_not_recorded() {
    let facts = session_with("k", 7, 9);
    let limits = Limits {
        agents: 3,
        usage: 4,
        ..Limits::default()
    };
    let planned = plan_all_new(&facts, limits);
    assert!(planned.len() >= 3);
    // The first batch (part of the facts) failed, the rest went through.
    let mut answered = vec![true; planned.len()];
    answered[0] = false;
    let mut ledger = Ledger::default();
    ledger.acknowledge(&planned, &answered);
    let delta = ledger
        .delta(&facts)
        .expect("the facts were not all acknowledged");
    assert!(delta.facts.is_some());
    let acknowledged_rows: usize = planned[1..].iter().map(|p| p.usage.len()).sum();
    assert_eq!(delta.usage.len(), 9 - acknowledged_rows);
}

#[test]
fn the_ledger_file_is_private_and_survives_a_round_trip() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("dir");
    let path = Ledger::path(dir.path());
    assert_eq!(
        Ledger::load(&path).sessions.len(),
        0,
        "absent reads as empty"
    );
    let facts = session_with("k", 1, 2);
    let mut ledger = Ledger::load(&path);
    let planned = plan(
        "h",
        None,
        vec![ledger.delta(&facts).expect("new")],
        Vec::new(),
        Limits::default(),
    );
    ledger.acknowledge(&planned, &[true]);
    ledger.save(&path).expect("save");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(Ledger::load(&path), ledger);
    assert_eq!(Ledger::load(&path).delta(&facts), None);
    std::fs::write(&path, b"{not json").expect("damage");
    assert!(
        Ledger::load(&path).delta(&facts).is_some(),
        "damaged reads as empty"
    );
}
