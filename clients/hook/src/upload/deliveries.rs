//! The record of hook deliveries (seed 002): every hook invocation Baton handles appends one
//! identifier-only delivery to the spool, and the drain sends runs of them in batches.
//!
//! Rules:
//! - a delivery is `{deliveryId (uuid v4), agent, sessionId, event, observedAt}`, minted when
//!   the hook read the payload; nothing else of the payload is kept;
//! - its spool entry is an upload of one delivery; when the ledger has no acknowledged facts
//!   for the session, the entry also carries a minimal session fact (its project slug from the
//!   working folder, activity at the observation time) so the server knows the session it names;
//! - the drain merges a run of consecutive delivery entries into one upload of at most
//!   [`MAX_MERGED`] entries ([`merge`]); the server dedups on `deliveryId`, so a replay after a
//!   crash changes nothing.

use serde_json::{Value, json};

use super::facts::text_ok;
use super::send::PATH;
use super::wire::{DeliveryFact, SessionFact};
use crate::spool::Entry;

/// The most delivery entries merged into one upload (inside the contract's 2000 and 500).
pub const MAX_MERGED: usize = 200;

/// The spool entry for one delivery.
pub fn entry(host_id: &str, delivery: &DeliveryFact, session: Option<SessionFact>) -> Entry {
    Entry {
        path: PATH.to_string(),
        body: json!({
            "hostId": host_id,
            "clientVersion": env!("CARGO_PKG_VERSION"),
            "sessions": session.into_iter().collect::<Vec<_>>(),
            "agents": [], "edges": [], "usage": [],
            "deliveries": [delivery],
        }),
        key: None,
    }
}

/// A new delivery observed now.
pub fn delivery(
    agent: &str,
    session_id: &str,
    event: &str,
    observed_ms: i64,
) -> Option<DeliveryFact> {
    let event_ok = (1..=64).contains(&event.len())
        && event
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !event_ok || !text_ok(session_id, 256) {
        return None;
    }
    Some(DeliveryFact {
        delivery_id: uuid::Uuid::new_v4().to_string(),
        agent: agent.to_string(),
        session_id: session_id.to_string(),
        event: event.to_string(),
        observed_at: super::wire::timestamp(observed_ms)?,
    })
}

/// The minimal session fact a delivery carries for a session the server may not know yet.
pub fn session_fact(
    agent: &str,
    session_id: &str,
    cwd: &str,
    observed_at: &str,
) -> Option<SessionFact> {
    let slug = baton_transcripts::corpus::slug_of(cwd);
    text_ok(&slug, 256).then(|| SessionFact {
        agent: agent.to_string(),
        session_id: session_id.to_string(),
        project_slug: slug,
        client_versions: Vec::new(),
        output_under_reported: false,
        first_activity_at: Some(observed_at.to_string()),
        last_activity_at: Some(observed_at.to_string()),
    })
}

/// Whether a spool entry is a delivery upload (only deliveries and session facts).
pub fn is_delivery(entry: &Entry) -> bool {
    entry.path == PATH
        && ["agents", "edges", "usage"]
            .iter()
            .all(|kind| entry.body[kind].as_array().is_none_or(Vec::is_empty))
        && entry.body["deliveries"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
}

/// One upload carrying every delivery and the (deduplicated) session facts of `entries` whose
/// session `known` (the ledger) does not already have acknowledged.
pub fn merge(entries: &[Entry], known: impl Fn(&str) -> bool + Copy) -> Entry {
    let mut sessions: Vec<Value> = Vec::new();
    let mut deliveries: Vec<Value> = Vec::new();
    for entry in entries {
        for session in entry.body["sessions"].as_array().into_iter().flatten() {
            let same = |other: &Value| {
                other["agent"] == session["agent"] && other["sessionId"] == session["sessionId"]
            };
            let key = super::facts::session_key(
                session["agent"].as_str().unwrap_or_default(),
                session["sessionId"].as_str().unwrap_or_default(),
            );
            if !known(&key) && !sessions.iter().any(same) {
                sessions.push(session.clone());
            }
        }
        deliveries.extend(
            entry.body["deliveries"]
                .as_array()
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    let first = entries
        .first()
        .map(|e| e.body.clone())
        .unwrap_or(Value::Null);
    Entry {
        path: PATH.to_string(),
        body: json!({
            "hostId": first["hostId"],
            "clientVersion": first["clientVersion"],
            "sessions": sessions,
            "agents": [], "edges": [], "usage": [],
            "deliveries": deliveries,
        }),
        key: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(session: &str, event: &str, with_session: bool) -> Entry {
        let delivery = delivery("claude-code", session, event, 1_772_359_500_000).expect("valid");
        let fact = with_session
            .then(|| session_fact("claude-code", session, "/w/app", &delivery.observed_at))
            .flatten();
        entry("h-1", &delivery, fact)
    }

    #[test]
    fn a_delivery_is_identifiers_only() {
        let d = delivery("codex", "s-1", "UserPromptSubmit", 1_772_359_500_000).expect("valid");
        assert_eq!(
            uuid::Uuid::parse_str(&d.delivery_id)
                .expect("uuid")
                .get_version_num(),
            4
        );
        assert_eq!(d.observed_at, "2026-03-01T10:05:00.000Z");
        let cases = [
            ("Stop", true),
            ("pre-compact", true),
            ("", false),
            ("a b", false),
            ("x/y", false),
        ];
        for (event, ok) in cases {
            assert_eq!(delivery("codex", "s", event, 0).is_some(), ok, "{event}");
        }
        assert!(delivery("codex", "", "Stop", 0).is_none());
        let fact = session_fact("claude-code", "s", "/w/my app", "t").expect("slug");
        assert_eq!(fact.project_slug, "-w-my-app", "the slug, never the path");
    }

    #[test]
    fn runs_of_deliveries_merge_into_one_upload() {
        let entries = vec![
            one("a", "SessionStart", true),
            one("a", "Stop", true),
            one("b", "Stop", false),
        ];
        assert!(entries.iter().all(is_delivery));
        let merged = merge(&entries, |_| false);
        assert!(is_delivery(&merged));
        assert_eq!(merged.body["deliveries"].as_array().expect("d").len(), 3);
        assert_eq!(
            merged.body["sessions"].as_array().expect("s").len(),
            1,
            "deduplicated"
        );
        assert_eq!(merged.body["hostId"], "h-1");
        let known = merge(&entries, |key| key == "claude-code/a");
        assert_eq!(
            known.body["sessions"],
            json!([]),
            "the server has the session"
        );
        assert_eq!(known.body["deliveries"].as_array().expect("d").len(), 3);
        let close = Entry::new("/api/v1/agent-sessions/close", json!({}));
        assert!(!is_delivery(&close));
    }
}
