//! Global dedup of usage records across every file of a corpus (HOOKS.md 4.4).
//!
//! Claude Code writes one line per content block of a response, all sharing `message.id` and
//! `requestId`, and a side question's sidechain can replay a parent message under the same
//! `message.id` with another `requestId`. Two records are one request when their message ids
//! are equal and their request ids are equal, or either side has none, or either side is a
//! sidechain. Of two copies the survivor is, in order: the non-sidechain one, the one with the
//! larger total (streamed chunks grow `output_tokens`), the one with `speed` set; on a full tie
//! the one read first (files are read in sorted path order, so the answer is deterministic).
//!
//! Gemini CLI writes a chat message again whenever it changes (its tool calls added, a resume's
//! rewrite); only copies that carry tokens become records, and of two Gemini copies the later
//! one wins: the recorder's last word on the message (in sorted path order a `.jsonl` copy of a
//! resumed `.json` session comes after it).

use std::collections::hash_map::Entry;
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::record::{Harness, UsageRecord};

/// Keeps one record per request, in the order requests were first seen.
pub fn dedup(records: impl IntoIterator<Item = UsageRecord>) -> Vec<UsageRecord> {
    let records = records.into_iter();
    let mut kept: Vec<UsageRecord> = Vec::with_capacity(records.size_hint().0);
    // By a hash of the message id: the first request seen under it, and (rarely) the others.
    // Ids are compared on a hit, so the maps hold no copy of any id.
    let mut first: FxHashMap<u64, usize> = FxHashMap::default();
    let mut others: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for record in records {
        let hash = FxBuildHasher.hash_one(record.message_id.as_str());
        let same = |slot: &usize| {
            kept[*slot].message_id == record.message_id && same_request(&kept[*slot], &record)
        };
        let found = first
            .get(&hash)
            .filter(|slot| same(slot))
            .or_else(|| {
                others
                    .get(&hash)
                    .and_then(|slots| slots.iter().find(|slot| same(slot)))
            })
            .copied();
        match found {
            Some(slot) => {
                if replaces(&record, &kept[slot]) {
                    kept[slot] = record;
                }
            }
            None => {
                let slot = kept.len();
                match first.entry(hash) {
                    Entry::Occupied(_) => others.entry(hash).or_default().push(slot),
                    Entry::Vacant(vacant) => {
                        vacant.insert(slot);
                    }
                }
                kept.push(record);
            }
        }
    }
    kept
}

/// Whether two records with the same message id are copies of one request.
fn same_request(a: &UsageRecord, b: &UsageRecord) -> bool {
    a.sidechain
        || b.sidechain
        || a.request_id.is_none()
        || b.request_id.is_none()
        || a.request_id == b.request_id
}

/// Whether `candidate` should replace `current` (the collision rule).
pub fn replaces(candidate: &UsageRecord, current: &UsageRecord) -> bool {
    if candidate.harness == Harness::Gemini && current.harness == Harness::Gemini {
        return true;
    }
    if candidate.sidechain != current.sidechain {
        return !candidate.sidechain;
    }
    let (new_total, old_total) = (candidate.tokens.total(), current.tokens.total());
    if new_total != old_total {
        return new_total > old_total;
    }
    candidate.modifiers.speed.is_some() && current.modifiers.speed.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Modifiers, Tokens};

    fn record(message: &str, request: Option<&str>, sidechain: bool, output: u64) -> UsageRecord {
        UsageRecord {
            message_id: message.to_string(),
            request_id: request.map(str::to_string),
            harness: Harness::ClaudeCode,
            session_id: "s".to_string(),
            agent_id: sidechain.then(|| "a1".to_string()),
            model: Some("claude-opus-4-6".to_string()),
            timestamp_ms: 0,
            tokens: Tokens {
                input: 10,
                output,
                ..Tokens::default()
            },
            server_tools: Default::default(),
            modifiers: Modifiers::default(),
            sidechain,
        }
    }

    #[test]
    fn content_block_copies_keep_the_largest_output() {
        let kept = dedup([
            record("msg_1", Some("req_1"), false, 1),
            record("msg_1", Some("req_1"), false, 7),
            record("msg_1", Some("req_1"), false, 3),
        ]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].tokens.output, 7);
    }

    #[test]
    fn sidechain_replay_with_another_request_id_yields_to_the_main_copy() {
        let kept = dedup([
            record("msg_1", Some("req_side"), true, 90),
            record("msg_1", Some("req_main"), false, 5),
        ]);
        assert_eq!(kept.len(), 1);
        assert!(!kept[0].sidechain);
        assert_eq!(kept[0].request_id.as_deref(), Some("req_main"));
    }

    #[test]
    fn missing_request_id_falls_back_to_the_message_id() {
        let kept = dedup([
            record("msg_1", None, false, 4),
            record("msg_1", Some("req_1"), false, 4),
        ]);
        assert_eq!(kept.len(), 1);
    }

    #[test]
    fn same_message_id_under_two_main_requests_is_two_requests() {
        let kept = dedup([
            record("msg_1", Some("req_1"), false, 4),
            record("msg_1", Some("req_2"), false, 4),
        ]);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn the_later_gemini_copy_wins_whatever_its_total() {
        let gemini = |output| UsageRecord {
            harness: Harness::Gemini,
            ..record("m-1", None, false, output)
        };
        // (copies in the order read, output kept)
        let cases: [(&[u64], u64); 3] = [(&[5, 9], 9), (&[9, 5], 5), (&[4, 4, 7], 7)];
        for (outputs, kept) in cases {
            let found = dedup(outputs.iter().map(|output| gemini(*output)));
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].tokens.output, kept, "{outputs:?}");
        }
    }

    #[test]
    fn on_a_tie_the_copy_with_speed_wins_else_the_first() {
        let mut fast = record("msg_1", Some("req_1"), false, 4);
        fast.modifiers.speed = Some("fast".to_string());
        let mut first = record("msg_1", Some("req_1"), false, 4);
        first.timestamp_ms = 1;
        let kept = dedup([first.clone(), fast.clone()]);
        assert_eq!(kept[0].modifiers.speed.as_deref(), Some("fast"));
        let kept = dedup([first.clone(), record("msg_1", Some("req_1"), false, 4)]);
        assert_eq!(kept[0].timestamp_ms, 1);
    }
}
