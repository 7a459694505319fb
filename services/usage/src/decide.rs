//! What an uploaded usage row does to the stored one with its dedup key (pure).
//!
//! - No stored row: insert.
//! - A stored row: replace only under the transcripts' collision rule
//!   ([`baton_usage_model::dedup::replaces`]: the non-sidechain copy, then the larger total,
//!   then the copy with `speed`); otherwise unchanged. Equal copies are unchanged, so a batch
//!   sent twice changes nothing.

use baton_usage_model::UsageRecord;
use baton_usage_model::dedup::replaces;

/// The fate of one uploaded row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Insert,
    Replace,
    Unchanged,
}

pub fn decide(candidate: &UsageRecord, stored: Option<&UsageRecord>) -> Fate {
    match stored {
        None => Fate::Insert,
        Some(stored) if replaces(candidate, stored) => Fate::Replace,
        Some(_) => Fate::Unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_usage_model::record::{Harness, Modifiers, Tokens};

    fn row(output: u64, sidechain: bool, speed: Option<&str>) -> UsageRecord {
        UsageRecord {
            message_id: "msg_1:req_1".to_string(),
            request_id: None,
            harness: Harness::ClaudeCode,
            session_id: "s".to_string(),
            agent_id: None,
            model: Some("claude-sonnet-4-5".to_string()),
            timestamp_ms: 1_770_000_000_000,
            tokens: Tokens {
                input: 10,
                output,
                ..Tokens::default()
            },
            server_tools: Default::default(),
            modifiers: Modifiers {
                speed: speed.map(str::to_string),
                ..Modifiers::default()
            },
            sidechain,
        }
    }

    #[test]
    fn the_collision_rule_decides_every_upload() {
        let table = [
            ("new key", row(5, false, None), None, Fate::Insert),
            (
                "same copy again",
                row(5, false, None),
                Some(row(5, false, None)),
                Fate::Unchanged,
            ),
            (
                "larger output",
                row(9, false, None),
                Some(row(5, false, None)),
                Fate::Replace,
            ),
            (
                "smaller output",
                row(3, false, None),
                Some(row(5, false, None)),
                Fate::Unchanged,
            ),
            (
                "sidechain yields",
                row(90, true, None),
                Some(row(5, false, None)),
                Fate::Unchanged,
            ),
            (
                "main beats sidechain",
                row(1, false, None),
                Some(row(90, true, None)),
                Fate::Replace,
            ),
            (
                "tie, speed wins",
                row(5, false, Some("fast")),
                Some(row(5, false, None)),
                Fate::Replace,
            ),
            (
                "tie, no speed",
                row(5, false, None),
                Some(row(5, false, Some("fast"))),
                Fate::Unchanged,
            ),
        ];
        for (name, candidate, stored, fate) in table {
            assert_eq!(decide(&candidate, stored.as_ref()), fate, "{name}");
        }
    }
}
