//! Background subagents joined to their spawn by the `<task-notification>` the client queues
//! (`queue-operation`) and delivers (`user` line): seed 002's `queue_operation` and
//! `task_notification` join paths, on real files of the conformance corpus.

use std::path::Path;

use baton_transcripts::claude::{FileContext, read_chunk};
use baton_transcripts::facts::{FileFacts, JoinPath, Link};
use baton_transcripts::{Options, Roots, scan};

use crate::corpus::Layout;

fn corpus(source: &str) -> baton_transcripts::Corpus {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/claude-code")
        .join(source)
        .join("projects");
    let roots = Roots {
        claude: vec![root],
        codex: vec![],
        gemini: Vec::new(),
        copilot: Vec::new(),
    };
    scan(&roots, &Options::default(), &|_| {}).expect("scan")
}

#[test]
fn a_background_agents_notification_proves_its_edge_on_a_real_transcript() {
    // oh-my-posh, Claude Code 2.1.209: an `Agent` call launched in the background; its
    // sidecar file is not in the corpus (the source keeps main transcripts only), so only the
    // notification ties the agent to its spawn.
    let corpus = corpus("JanDeDobbeleer--oh-my-posh");
    let session = corpus
        .sessions
        .iter()
        .find(|s| s.session_id == "dcce4143-4609-43c5-a0e3-ea883f6c959b")
        .expect("the session");
    let agent = session
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("ab740d2c1dc4e305f"))
        .expect("the background agent is in the tree");
    assert_eq!(
        agent.spawn_tool_use_id.as_deref(),
        Some("toolu_01VMqJgzGeNVX6NEdzDq4qLK")
    );
    // The async launch's result names the agent too, the strongest proof; the notification's
    // two proofs are read beside it (below).
    assert_eq!(agent.join_path, Some(JoinPath::ToolResult));
    assert!(!agent.has_file);
    assert!(agent.ended.is_some(), "its notification's status ends it");

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../fixtures/conformance/claude-code/JanDeDobbeleer--oh-my-posh/projects/D--oh-my-posh/dcce4143-4609-43c5-a0e3-ea883f6c959b.jsonl",
    );
    let bytes = std::fs::read(path).expect("fixture");
    let mut facts = FileFacts::default();
    let context = FileContext {
        session_id: Some("dcce4143-4609-43c5-a0e3-ea883f6c959b".into()),
        agent_id: None,
    };
    read_chunk(&context, &bytes, &mut facts);
    for proof in [JoinPath::QueueOperation, JoinPath::TaskNotification] {
        assert!(
            facts.links.contains(&Link {
                tool_use_id: "toolu_01VMqJgzGeNVX6NEdzDq4qLK".into(),
                agent_id: "ab740d2c1dc4e305f".into(),
                path: proof,
            }),
            "{proof:?} read from the real file"
        );
    }
    // A notification naming a redacted tool-use id proves nothing: no spawn has that id.
    assert!(
        !session
            .agents
            .iter()
            .any(|a| a.spawn_tool_use_id.as_deref() == Some("REDACTED"))
    );
}

#[test]
fn a_notification_alone_joins_an_agent_whose_launch_result_names_none() {
    // The shape of the real lines, with the launch's result stripped of its agent id (as a
    // failed or older launch writes it): only the queued and delivered notification remain.
    let layout = Layout::new();
    let lines = [
        r#"{"type":"assistant","sessionId":"s1","timestamp":"2026-03-01T10:00:00.000Z","requestId":"r1","message":{"id":"m1","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_bg","name":"Agent","input":{"subagent_type":"Explore","description":"scan","run_in_background":true}}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"{"type":"user","sessionId":"s1","timestamp":"2026-03-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_bg","content":"Async agent launched"}]}}"#,
        r#"{"type":"queue-operation","operation":"enqueue","timestamp":"2026-03-01T10:05:00.000Z","sessionId":"s1","content":"<task-notification>\n<task-id>a0bg0bg0bg0bg0bg0</task-id>\n<tool-use-id>toolu_bg</tool-use-id>\n<status>completed</status>\n<summary>done</summary>\n</task-notification>"}"#,
        r#"{"type":"user","sessionId":"s1","timestamp":"2026-03-01T10:05:01.000Z","message":{"role":"user","content":"<task-notification>\n<task-id>a0bg0bg0bg0bg0bg0</task-id>\n<tool-use-id>toolu_bg</tool-use-id>\n<status>completed</status>\n</task-notification>"}}"#,
    ];
    layout.claude_file("-p/s1.jsonl", &(lines.join("\n") + "\n"));
    let corpus = layout.scan();
    let agent = corpus.sessions[0]
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some("a0bg0bg0bg0bg0bg0"))
        .expect("joined by the notification");
    assert_eq!(agent.join_path, Some(JoinPath::TaskNotification));
    assert_eq!(agent.spawn_tool_use_id.as_deref(), Some("toolu_bg"));
    assert_eq!(agent.subagent_type.as_deref(), Some("Explore"));
}
