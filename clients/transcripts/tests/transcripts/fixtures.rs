//! Every shared fixture with its totals worked out by hand.
//!
//! How the figures below were obtained: for each file, the top-level `type == "assistant"`
//! lines were listed with `message.id`, `requestId`, `isSidechain` and `message.usage`; lines
//! sharing `(message.id, requestId)` were collapsed keeping the one with the larger total (in
//! the 2.1.39 spotter session 381 usage lines collapse to 178 requests, several with growing
//! `output_tokens`); cache writes are the `cache_creation` split when present. The sums were
//! then checked against ccusage 20.0.24 (`daily --json --mode calculate`), which agrees on all
//! four kinds it reports (it merges the two cache-write durations).

use baton_transcripts::facts::JoinPath;
use baton_transcripts::tree::{AgentKind, EndStatus};

use crate::corpus::{Layout, by_agent, by_model};

const SPOTTER: &str = "claude-code/transcripts/spotter";
const SESSION: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";

fn spotter() -> Layout {
    let layout = Layout::new();
    layout.copy_claude(
        &format!("{SPOTTER}/{SESSION}.jsonl"),
        &format!("-spotter/{SESSION}.jsonl"),
    );
    for agent in ["agent-a93ccab", "agent-aa84377", "agent-acompact-70d8e7"] {
        layout.copy_claude(
            &format!("{SPOTTER}/{SESSION}/subagents/{agent}.jsonl"),
            &format!("-spotter/{SESSION}/subagents/{agent}.jsonl"),
        );
    }
    layout
}

#[test]
fn spotter_session_tokens_per_model() {
    let corpus = spotter().scan();
    let models = by_model(&corpus);
    assert_eq!(
        models["claude-opus-4-6"],
        [1505, 36262, 15540548, 262626, 0]
    );
    assert_eq!(
        models["claude-haiku-4-5-20251001"],
        [122, 45, 635125, 98183, 0]
    );
    assert_eq!(corpus.records.len(), 178);
}

#[test]
fn spotter_session_tokens_per_agent_including_the_compaction_call() {
    let corpus = spotter().scan();
    let agents = by_agent(&corpus);
    assert_eq!(agents["main"], [1502, 36256, 15373675, 260212, 0]);
    assert_eq!(agents["a93ccab"], [70, 28, 329070, 45621, 0]);
    assert_eq!(agents["aa84377"], [52, 17, 306055, 52562, 0]);
    assert_eq!(agents["acompact-70d8e7"], [3, 6, 166873, 2414, 0]);
}

#[test]
fn spotter_tree_joins_both_explore_agents_through_their_tool_results() {
    let corpus = spotter().scan();
    let session = &corpus.sessions[0];
    assert_eq!(session.session_id, SESSION);
    assert_eq!(session.project_slug, "-spotter");
    assert!(session.output_under_reported, "2.1.39 < 2.1.97");
    let agents = &session.agents;
    assert_eq!(agents.len(), 4);
    assert_eq!(agents[0].kind, AgentKind::Main);
    for id in ["a93ccab", "aa84377"] {
        let agent = agents
            .iter()
            .find(|a| a.agent_id.as_deref() == Some(id))
            .expect(id);
        assert_eq!(agent.kind, AgentKind::Subagent);
        assert_eq!(agent.parent_agent_id, None, "spawned by the main agent");
        assert_eq!(agent.join_path, Some(JoinPath::ToolResult));
        assert_eq!(agent.spawn_tool.as_deref(), Some("Task"));
        assert_eq!(agent.subagent_type.as_deref(), Some("Explore"));
        assert!(agent.description.is_some());
        let ended = agent
            .ended
            .expect("its tool result is in the main transcript");
        assert_eq!(ended.status, EndStatus::Completed);
        assert!(ended.at_ms.is_some());
    }
    let compaction = agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("acompact-70d8e7"))
        .unwrap();
    assert_eq!(compaction.kind, AgentKind::Compaction);
    assert_eq!(compaction.join_path, Some(JoinPath::Compaction));
}

#[test]
fn streamed_chunks_keep_the_largest_output_count() {
    // 2.1.39 writes one line per content block; output_tokens grow across a group. Summing the
    // first line of each group gives far less than the kept maximum.
    let corpus = spotter().scan();
    let first_line_output: u64 = 36256; // main agent, maximum per group
    assert_eq!(by_agent(&corpus)["main"][1], first_line_output);
    assert!(corpus.records.iter().all(|r| r.tokens.output < 10_000));
}

#[test]
fn short_session_has_a_one_hour_cache_write() {
    let layout = Layout::new();
    layout.copy_claude(&format!("{SPOTTER}/short.jsonl"), "-p/short.jsonl");
    let corpus = layout.scan();
    assert_eq!(
        by_model(&corpus)["claude-opus-4-6"],
        [3, 13, 11515, 0, 13835]
    );
}

#[test]
fn entire_checkpoints_with_synthetic_lines() {
    let layout = Layout::new();
    layout.copy_claude(
        "claude-code/transcripts/entire-checkpoints/4c_02af2759b6_0_full.jsonl",
        "-e/4c.jsonl",
    );
    layout.copy_claude(
        "claude-code/transcripts/entire-checkpoints/73_7e6e3ea2ad_0_full.jsonl",
        "-e/73.jsonl",
    );
    let corpus = layout.scan();
    let models = by_model(&corpus);
    assert_eq!(
        models["claude-opus-4-5-20251101"],
        [10 + 146, 4 + 40, 2257455, 38385 + 136728, 0]
    );
    assert_eq!(models["<synthetic>"], [0, 0, 0, 0, 0]);
    let synthetic = corpus.records.iter().find(|r| r.is_synthetic()).unwrap();
    assert_eq!(synthetic.request_id, None);
}

#[test]
fn codex_rollouts_count_each_cumulative_step_once() {
    // Worked by hand from the `token_count` events: the last cumulative total of each rollout,
    // repeated events collapsed; input excludes cached input.
    let layout = Layout::new();
    let folder = "codex/rollouts/madshn-localpush";
    for name in [
        "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ] {
        layout.copy_codex(&format!("{folder}/{name}"), &format!("2026/02/23/{name}"));
    }
    let corpus = layout.scan();
    let expected = expected_codex_totals();
    let models = by_model(&corpus);
    assert_eq!(models["gpt-5.3-codex"], expected);
    assert_eq!(corpus.sessions.len(), 2);
    assert!(
        corpus
            .sessions
            .iter()
            .all(|s| s.project_slug.starts_with("-redacted-path-"))
    );
}

/// The sum over both rollouts of their last cumulative `total_token_usage` (read off the files:
/// 34,469 input / 3,456 cached / 431 output after one step, and 298,373 / 238,848 / 1,123 after
/// six distinct steps, each repeated once): uncached input = input − cached.
fn expected_codex_totals() -> [u64; 5] {
    [
        (34469 - 3456) + (298373 - 238848),
        431 + 1123,
        3456 + 238848,
        0,
        0,
    ]
}
