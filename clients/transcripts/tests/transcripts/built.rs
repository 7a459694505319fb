//! Built corpora, one rule each.

use baton_transcripts::facts::JoinPath;
use baton_transcripts::walk::{Limits, discover};
use baton_transcripts::{Options, SkipReason, read_discovered, scan};

use crate::corpus::{Layout, append, assistant, by_agent, by_model};

const USAGE: &str = r#"{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":40,"cache_creation":{"ephemeral_5m_input_tokens":30,"ephemeral_1h_input_tokens":10}}"#;
const MODEL: &str = "claude-opus-4-6";

#[test]
fn sidechain_replay_with_another_request_id_counts_once_as_the_main_copy() {
    let layout = Layout::new();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("req_main"), false, MODEL, USAGE),
    );
    layout.claude_file(
        "-p/s1/subagents/agent-side.jsonl",
        &assistant("msg_1", Some("req_btw"), true, MODEL, USAGE),
    );
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 1);
    assert_eq!(corpus.records[0].agent_id, None);
    assert_eq!(by_model(&corpus)[MODEL], [10, 5, 100, 30, 10]);
}

#[test]
fn missing_request_id_dedups_on_the_message_id() {
    let layout = Layout::new();
    let text = assistant("msg_1", None, false, MODEL, USAGE)
        + &assistant("msg_1", Some("req_1"), false, MODEL, USAGE);
    layout.claude_file("-p/s1.jsonl", &text);
    assert_eq!(layout.scan().records.len(), 1);
}

#[test]
fn two_sessions_sharing_lines_count_them_once() {
    let layout = Layout::new();
    let shared = assistant("msg_1", Some("req_1"), false, MODEL, USAGE);
    layout.claude_file("-p/s1.jsonl", &shared);
    layout.claude_file(
        "-p/s2.jsonl",
        &(shared.clone() + &assistant("msg_2", Some("req_2"), false, MODEL, USAGE)),
    );
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 2);
    assert_eq!(corpus.sessions.len(), 2);
}

#[test]
fn flat_cache_creation_without_split_counts_as_five_minute_writes() {
    let layout = Layout::new();
    let usage = r#"{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":44}"#;
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r"), false, MODEL, usage),
    );
    assert_eq!(by_model(&layout.scan())[MODEL], [1, 2, 3, 44, 0]);
}

#[test]
fn usage_copied_into_progress_lines_is_not_counted() {
    let layout = Layout::new();
    let progress = r#"{"type":"progress","parentToolUseID":"toolu_1","data":{"type":"agent_progress","agentId":"a1","message":{"type":"assistant","message":{"id":"msg_9","model":"claude-haiku-4-5","usage":{"input_tokens":999,"output_tokens":999}}}}}"#;
    layout.claude_file("-p/s1.jsonl", &format!("{progress}\n"));
    assert!(layout.scan().records.is_empty());
}

#[test]
fn inline_sidechain_lines_form_an_agent_of_their_own() {
    let layout = Layout::new();
    let text = assistant("msg_1", Some("r1"), false, MODEL, USAGE)
        + &assistant("msg_2", Some("r2"), true, MODEL, USAGE);
    layout.claude_file("-p/s1.jsonl", &text);
    let corpus = layout.scan();
    assert_eq!(by_agent(&corpus)["sidechain"], [10, 5, 100, 30, 10]);
    let agent = corpus.sessions[0]
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("sidechain"))
        .unwrap();
    assert_eq!(agent.join_path, Some(JoinPath::InlineSidechain));
}

#[test]
fn legacy_sibling_file_belongs_to_the_session_its_lines_name() {
    let layout = Layout::new();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, MODEL, USAGE),
    );
    layout.claude_file(
        "-p/agent-abc.jsonl",
        &assistant("msg_2", Some("r2"), true, MODEL, USAGE),
    );
    let corpus = layout.scan();
    assert_eq!(
        corpus.sessions.len(),
        1,
        "a sibling agent file is not a session of its own"
    );
    assert_eq!(
        corpus
            .records
            .iter()
            .filter(|r| r.session_id == "s1")
            .count(),
        2
    );
    let agent = corpus.sessions[0]
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("abc"))
        .unwrap();
    assert_eq!(agent.join_path, Some(JoinPath::LegacySibling));
}

#[test]
fn nested_agent_hangs_from_the_subagent_that_spawned_it() {
    let layout = Layout::new();
    let spawn = |id: &str| {
        format!(
            r#"{{"type":"assistant","requestId":"r-{id}","timestamp":"2026-03-01T10:00:00Z","message":{{"id":"m-{id}","model":"{MODEL}","content":[{{"type":"tool_use","id":"{id}","name":"Agent","input":{{"subagent_type":"Explore","description":"look"}}}}],"usage":{USAGE}}}}}"#
        ) + "\n"
    };
    let result = |tool: &str, agent: &str| {
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{tool}","content":"done"}}]}},"toolUseResult":{{"status":"completed","agentId":"{agent}"}}}}"#
        ) + "\n"
    };
    layout.claude_file(
        "-p/s1.jsonl",
        &(spawn("toolu_a") + &result("toolu_a", "a1")),
    );
    layout.claude_file(
        "-p/s1/subagents/agent-a1.jsonl",
        &(spawn("toolu_b") + &result("toolu_b", "b2")),
    );
    layout.claude_file(
        "-p/s1/subagents/agent-b2.jsonl",
        &assistant("msg_b", Some("rb"), true, MODEL, USAGE),
    );
    let corpus = layout.scan();
    let agents = &corpus.sessions[0].agents;
    let b2 = agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("b2"))
        .unwrap();
    assert_eq!(b2.parent_agent_id.as_deref(), Some("a1"));
    assert_eq!(b2.join_path, Some(JoinPath::ToolResult));
    assert_eq!(b2.spawn_tool.as_deref(), Some("Agent"));
    let a1 = agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("a1"))
        .unwrap();
    assert_eq!(a1.parent_agent_id, None);
}

#[test]
fn meta_file_joins_an_agent_whose_result_is_not_written_yet() {
    let layout = Layout::new();
    let spawn = format!(
        r#"{{"type":"assistant","requestId":"r1","timestamp":"2026-03-01T10:00:00Z","message":{{"id":"m1","model":"{MODEL}","content":[{{"type":"tool_use","id":"toolu_x","name":"Agent","input":{{"subagent_type":"general-purpose","description":"count"}}}}],"usage":{USAGE}}}}}"#
    );
    layout.claude_file("-p/s1.jsonl", &(spawn + "\n"));
    layout.claude_file(
        "-p/s1/subagents/agent-ax.jsonl",
        &assistant("msg_x", Some("rx"), true, MODEL, USAGE),
    );
    layout.claude_file(
        "-p/s1/subagents/agent-ax.meta.json",
        r#"{"agentType":"general-purpose","toolUseId":"toolu_x"}"#,
    );
    let corpus = layout.scan();
    let agent = corpus.sessions[0]
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("ax"))
        .unwrap();
    assert_eq!(agent.join_path, Some(JoinPath::MetaFile));
    assert_eq!(agent.subagent_type.as_deref(), Some("general-purpose"));
}

#[test]
fn malformed_lines_are_counted_and_the_rest_of_the_session_is_read() {
    let layout = Layout::new();
    let text = format!(
        "{}garbage\n{{\"type\":\"assistant\",\"usage\":\n{}",
        assistant("msg_1", Some("r1"), false, MODEL, USAGE),
        assistant("msg_2", Some("r2"), false, MODEL, USAGE)
    );
    layout.claude_file("-p/s1.jsonl", &text);
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 2);
    assert_eq!(corpus.malformed_lines, 2);
}

#[test]
fn new_line_types_are_skipped_without_being_malformed() {
    let layout = Layout::new();
    let text = "{\"type\":\"api-request-blob\",\"body\":{\"usage\":\"x\"}}\n{\"type\":\"attachment\",\"agentId\":\"a\"}\n{\"type\":\"atis-latch\"}\n";
    layout.claude_file("-p/s1.jsonl", text);
    let corpus = layout.scan();
    assert_eq!(corpus.malformed_lines, 0);
    assert!(corpus.records.is_empty());
}

#[test]
fn a_half_written_last_line_is_read_once_it_completes() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let full = assistant("msg_2", Some("r2"), false, MODEL, USAGE);
    let (head, tail) = full.split_at(full.len() / 2);
    let path = layout.claude_file(
        "-p/s1.jsonl",
        &(assistant("msg_1", Some("r1"), false, MODEL, USAGE) + head),
    );
    let first = layout.scan_cached(cache.path());
    assert_eq!(first.records.len(), 1);
    assert_eq!(
        first.malformed_lines, 0,
        "an unfinished line is not malformed, only not yet read"
    );
    append(&path, tail);
    let second = layout.scan_cached(cache.path());
    assert_eq!(second.records.len(), 2);
    assert_eq!(second.reads.tail, 1, "the grown file was tail-read");
    assert_eq!(
        by_model(&second),
        by_model(&layout.scan()),
        "tail read equals a cold read"
    );
}

#[test]
fn a_rewritten_prefix_falls_back_to_a_full_read() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let path = layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, MODEL, USAGE),
    );
    layout.scan_cached(cache.path());
    let other = assistant("msg_9", Some("r9"), false, "claude-haiku-4-5", USAGE);
    std::fs::write(&path, other.clone() + &other.replace("msg_9", "msg_8")).unwrap();
    let corpus = layout.scan_cached(cache.path());
    assert_eq!(corpus.reads.full, 1);
    assert!(
        !by_model(&corpus).contains_key(MODEL),
        "nothing of the old prefix is trusted"
    );
}

#[test]
fn unchanged_corpus_is_served_from_checkpoints_with_the_same_answer() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, MODEL, USAGE),
    );
    let cold = layout.scan_cached(cache.path());
    let warm = layout.scan_cached(cache.path());
    assert_eq!(warm.reads.cached, 1);
    assert_eq!(warm.reads.full, 0);
    assert_eq!(warm.records, cold.records);
    assert_eq!(warm.sessions, cold.sessions);
}

#[test]
fn every_skip_reason_is_counted() {
    let layout = Layout::new();
    let line = assistant("msg_1", Some("r1"), false, MODEL, USAGE);
    layout.claude_file("-p/s1.jsonl", &line);
    layout.claude_file("-p/big.jsonl", &line.repeat(50));
    layout.claude_file("-p/empty.jsonl", "");
    layout.claude_file("-p/s1/subagents/agent-e.jsonl", "");
    layout.claude_file("-p/sessions-index.json", "{}");
    layout.claude_file("-q/s1.jsonl", &line);
    layout.claude_file("-p/s1/subagents/1/2/3/4/5/agent-deep.jsonl", &line);
    std::os::unix::fs::symlink(
        layout.projects().join("-p/s1.jsonl"),
        layout.projects().join("-p/link.jsonl"),
    )
    .unwrap();
    let _socket =
        std::os::unix::net::UnixListener::bind(layout.projects().join("-p/sock.jsonl")).unwrap();
    let limits = Limits {
        max_file_bytes: (line.len() * 10) as u64,
        max_depth: 4,
    };
    let mut discovery = discover(&layout.roots(), limits);
    // A file that disappears between the walk and the read is unreadable.
    layout.claude_file("-p/gone.jsonl", &line);
    let gone = discover(&layout.roots(), limits)
        .files
        .into_iter()
        .find(|f| f.path.ends_with("gone.jsonl"))
        .unwrap();
    discovery.files.push(gone);
    std::fs::remove_file(layout.projects().join("-p/gone.jsonl")).unwrap();
    let corpus = read_discovered(
        discovery,
        &Options {
            limits,
            ..Options::default()
        },
        &|_| {},
    )
    .unwrap();
    for (reason, expected) in [
        (SkipReason::Oversize, 1),
        (SkipReason::Symlink, 1),
        (SkipReason::NotRegularFile, 1),
        (SkipReason::Unreadable, 1),
        (SkipReason::EmptyAgent, 1),
        (SkipReason::EmptyMain, 1),
        (SkipReason::NonArtifact, 1),
        (SkipReason::DuplicateSession, 1),
        (SkipReason::TooDeep, 1),
    ] {
        assert_eq!(corpus.skips.get(reason), expected, "{}", reason.as_str());
    }
    let session = corpus
        .sessions
        .iter()
        .find(|s| s.session_id == "s1")
        .unwrap();
    assert_eq!(
        session.project_slug, "-p",
        "the smallest-sorting project slug wins"
    );
    assert_eq!(
        corpus.records.len(),
        1,
        "the duplicate's lines dedup into the winner's"
    );
}

#[test]
fn a_symlink_swapped_in_after_the_walk_aborts_the_run() {
    let layout = Layout::new();
    let path = layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, MODEL, USAGE),
    );
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        outside.path(),
        assistant("msg_x", Some("rx"), false, MODEL, USAGE),
    )
    .unwrap();
    let discovery = discover(&layout.roots(), Limits::default());
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(outside.path(), &path).unwrap();
    let error = read_discovered(discovery, &Options::default(), &|_| {}).unwrap_err();
    assert!(error.to_string().contains("containment"), "{error}");
}

#[test]
fn a_symlinked_root_is_followed_once_and_its_insides_are_contained() {
    let layout = Layout::new();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, MODEL, USAGE),
    );
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("projects");
    std::os::unix::fs::symlink(layout.projects(), &link).unwrap();
    let roots = baton_transcripts::Roots {
        claude: vec![link],
        codex: Vec::new(),
        gemini: Vec::new(),
        copilot: Vec::new(),
    };
    let corpus = scan(&roots, &Options::default(), &|_| {}).unwrap();
    assert_eq!(corpus.records.len(), 1);
}

#[test]
fn codex_per_response_records_replace_cumulative_counts() {
    let layout = Layout::new();
    let text = r#"{"timestamp":"2026-11-01T10:00:00Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000001","cwd":"/work/app"}}
{"timestamp":"2026-11-01T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5.3-codex"}}
{"timestamp":"2026-11-01T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"total_tokens":107}}}}
{"timestamp":"2026-11-01T10:00:02Z","type":"token_usage_record","payload":{"response_id":"resp_1","turn_id":"t1","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"total_tokens":107}}}
{"timestamp":"2026-11-01T10:00:03Z","type":"token_usage_record","payload":{"response_id":"resp_2","turn_id":"t1","usage":{"input_tokens":50,"cached_input_tokens":50,"output_tokens":3,"total_tokens":53}}}
"#;
    layout.codex_file(
        "2026/11/01/rollout-2026-11-01T10-00-00-019a0000-0000-7000-8000-000000000001.jsonl",
        text,
    );
    let corpus = layout.scan();
    assert_eq!(by_model(&corpus)["gpt-5.3-codex"], [60, 10, 90, 0, 0]);
    assert_eq!(corpus.sessions[0].project_slug, "-work-app");
}

#[test]
fn checkpoints_of_another_parser_revision_or_scope_are_ignored() {
    use baton_transcripts::checkpoint::{self, Checkpoints, PARSER_REVISION};
    let dir = tempfile::tempdir().unwrap();
    let scope = "abc";
    let stale = Checkpoints {
        revision: PARSER_REVISION + 1,
        scope: scope.into(),
        ..Checkpoints::default()
    };
    checkpoint::save(dir.path(), &stale).unwrap();
    let loaded = checkpoint::load(dir.path(), scope);
    assert_eq!(
        loaded.revision, PARSER_REVISION,
        "a bumped revision invalidates every entry"
    );
    std::fs::write(
        dir.path().join(format!("checkpoints-{scope}.bin")),
        b"not postcard",
    )
    .unwrap();
    assert!(
        checkpoint::load(dir.path(), scope).files.is_empty(),
        "a damaged file reads as none"
    );
    let other_roots = checkpoint::scope(&[std::path::PathBuf::from("/elsewhere")]);
    assert_ne!(
        other_roots,
        checkpoint::scope(&[std::path::PathBuf::from("/here")])
    );
}

#[test]
fn a_session_failing_three_times_unchanged_is_quarantined_until_it_changes() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().unwrap();
    let line = assistant("msg_1", Some("r1"), false, MODEL, USAGE);
    layout.claude_file("-p/s9.jsonl", &line);
    let walked = discover(&layout.roots(), Limits::default());
    std::fs::remove_file(layout.projects().join("-p/s9.jsonl")).unwrap();
    let options = Options {
        checkpoint_dir: Some(cache.path().to_path_buf()),
        ..Options::default()
    };
    for attempt in 1..=3 {
        let corpus = read_discovered(walked.clone(), &options, &|_| {}).unwrap();
        assert_eq!(
            corpus.skips.get(SkipReason::Unreadable),
            1,
            "attempt {attempt} tried to read"
        );
        assert!(corpus.quarantined.is_empty());
    }
    let parked = read_discovered(walked.clone(), &options, &|_| {}).unwrap();
    assert_eq!(parked.quarantined, vec!["claude-code:s9".to_string()]);
    assert_eq!(
        parked.skips.get(SkipReason::Unreadable),
        0,
        "a parked session is not tried again"
    );
    layout.claude_file("-p/s9.jsonl", &(line.clone() + &line));
    let changed = read_discovered(
        discover(&layout.roots(), Limits::default()),
        &options,
        &|_| {},
    )
    .unwrap();
    assert!(
        changed.quarantined.is_empty(),
        "a new fingerprint re-admits it"
    );
    assert_eq!(changed.records.len(), 1);
}
