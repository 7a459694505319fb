use baton_usage_model::record::{Modifiers, ServerTools, Tokens};

use super::*;
use crate::row_price::RowPrice;

/// An uploaded copy of `msg_1` with `output` tokens.
fn copy(output: u64, sidechain: bool, speed: Option<&str>) -> Usage {
    Usage {
        agent: "claude-code".to_string(),
        session_id: "s-1".to_string(),
        agent_id: String::new(),
        dedup_key: "msg_1:req_1".to_string(),
        model: Some("claude-sonnet-4-5".to_string()),
        at: "2026-03-01T10:01:00Z".parse().expect("instant"),
        tokens: Tokens {
            input: 10,
            output,
            ..Tokens::default()
        },
        server_tools: ServerTools::default(),
        modifiers: Modifiers {
            speed: speed.map(str::to_string),
            ..Modifiers::default()
        },
        sidechain,
    }
}

/// The rollup coordinates of a copy uploaded from `host`.
fn counted_at(host: &str) -> Key {
    Key {
        bucket: "2026-03-01T10:00:00Z".parse().expect("instant"),
        model: "claude-sonnet-4-5".to_string(),
        project_slug: "-home-me-repo".to_string(),
        host_id: host.to_string(),
        agent_kind: "main".to_string(),
        member: String::new(),
    }
}

fn contribution(row: &Usage) -> Delta {
    Delta::of(&row.tokens, &row.server_tools, &RowPrice::default())
}

#[test]
fn a_replacement_moves_the_stored_contribution_to_the_survivors_coordinates() {
    let plain = |output| copy(output, false, None);
    let sidechain = |output| copy(output, true, None);
    let fast = |output| copy(output, false, Some("fast"));
    // (case, stored copy from host-a, uploaded copy from host-b, replaced)
    let table = [
        ("the same copy again", plain(5), plain(5), false),
        ("a larger total", plain(5), plain(9), true),
        ("a smaller total", plain(5), plain(3), false),
        ("a sidechain, however large", plain(5), sidechain(90), false),
        ("main over a sidechain", sidechain(90), plain(1), true),
        ("a tie, the copy with speed", plain(5), fast(5), true),
        ("a tie, the copy without speed", fast(5), plain(5), false),
    ];
    for (case, stored_copy, uploaded, replaced) in table {
        let stored = Stored {
            record: stored_copy.record(),
            key: counted_at("host-a"),
            delta: contribution(&stored_copy),
        };
        let write = Write {
            row: &uploaded,
            key: counted_at("host-b"),
            price: RowPrice::default(),
        };
        let expected = replaced.then(|| {
            [
                (counted_at("host-a"), contribution(&stored_copy).negated()),
                (counted_at("host-b"), contribution(&uploaded)),
            ]
        });
        assert_eq!(replacement(&write, &stored), expected, "{case}");
    }
}
