//! Copilot CLI session logs laid out as 1.0.102 lays them out (`session-state/<id>/events.jsonl`),
//! with events of the shapes it wrote against a local model stand-in
//! (`/work/notes/copilot-findings.md` section 6), reduced to what Baton reads.

use baton_transcripts::facts::JoinPath;
use baton_transcripts::tree::EndStatus;
use baton_transcripts::walk::SkipReason;
use baton_transcripts::{Harness, PriceTable};

use crate::corpus::{Layout, by_agent, only_child};

const SESSION: &str = "80166b9b-037b-4e4d-a11e-0dc275b2fc97";
const AGENT: &str = "c6e25102-9ee9-4c28-a691-5f16e7aa2279";
const AGENT_SOURCE: &str = "b6164f5b-49bd-42c8-9c3d-6904a2067737";

fn log() -> String {
    format!("{SESSION}/events.jsonl")
}

fn start() -> String {
    format!(
        "{{\"type\":\"session.start\",\"data\":{{\"sessionId\":\"{SESSION}\",\"copilotVersion\":\"1.0.102\",\
\"selectedModel\":\"gpt-4o\",\"context\":{{\"cwd\":\"/tmp/copilot/proj\"}}}},\"id\":\"e0\",\
\"timestamp\":\"2026-12-02T05:18:28.236Z\",\"parentId\":null}}\n"
    )
}

/// A receipt: `prompt` input tokens of which 100 cached, 7 output; `agent` its subagent.
fn receipt(source: &str, sequence: u64, prompt: u64, model: &str, agent: Option<&str>) -> String {
    let agent = agent.map_or(String::new(), |id| format!(",\"agentId\":\"{id}\""));
    format!(
        "{{\"type\":\"session.usage_record\",\"data\":{{\"usage\":{{\"model\":\"{model}\",\"inputTokens\":{prompt},\
\"outputTokens\":7,\"cacheReadTokens\":100,\"cacheWriteTokens\":0,\"reasoningTokens\":0,\"isByok\":true,\
\"accounting\":{{\"sourceSessionId\":\"{source}\",\"sequence\":{sequence},\"usageId\":\"c-{sequence}\"}}}}}},\
\"id\":\"r{sequence}{source}\",\"timestamp\":\"2026-12-02T05:18:29.470Z\",\"parentId\":\"x\"{agent}}}\n"
    )
}

fn agent_run() -> String {
    start()
        + &receipt(SESSION, 1, 1001, "gpt-4o", None)
        + "{\"type\":\"tool.execution_start\",\"data\":{\"toolCallId\":\"call_2\",\"toolName\":\"task\",\
\"arguments\":{\"description\":\"Explore repo files\",\"agent_type\":\"explore\"}},\"id\":\"t\",\
\"timestamp\":\"2026-12-02T05:18:31.132Z\",\"parentId\":\"x\"}\n"
        + "{\"type\":\"subagent.started\",\"data\":{\"toolCallId\":\"call_2\",\"agentName\":\"explore\",\
\"agentDisplayName\":\"explorer\",\"agentDescription\":\"Explore repo files\",\"agentType\":\"explore\"},\
\"id\":\"s\",\"timestamp\":\"2026-12-02T05:18:31.521Z\",\"parentId\":\"x\",\"agentId\":\"c6e25102-9ee9-4c28-a691-5f16e7aa2279\"}\n"
        + &receipt(AGENT_SOURCE, 1, 1003, "gpt-4o", Some(AGENT))
        + "{\"type\":\"subagent.completed\",\"data\":{\"toolCallId\":\"call_2\",\"agentName\":\"explore\",\
\"agentDisplayName\":\"explorer\",\"totalTokens\":1010},\"id\":\"d\",\"timestamp\":\"2026-12-02T05:18:33.586Z\",\
\"parentId\":\"x\",\"agentId\":\"c6e25102-9ee9-4c28-a691-5f16e7aa2279\"}\n"
        + &receipt(SESSION, 2, 1004, "claude-sonnet-4.5", None)
        + "{\"type\":\"session.shutdown\",\"data\":{\"modelMetrics\":{\"gpt-4o\":{\"usage\":{\"inputTokens\":3008,\
\"outputTokens\":21}}}},\"id\":\"z\",\"timestamp\":\"2026-12-02T05:18:34.930Z\",\"parentId\":\"x\"}\n"
}

#[test]
fn a_session_with_a_subagent_is_its_receipts_in_a_two_agent_tree() {
    let layout = Layout::new();
    layout.copilot_file(&log(), &agent_run());
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 3);
    assert!(corpus.records.iter().all(|r| r.harness == Harness::Copilot));
    assert!(corpus.records.iter().all(|r| r.session_id == SESSION));
    let agents = by_agent(&corpus);
    assert_eq!(agents["main"], [901 + 904, 14, 200, 0, 0]);
    assert_eq!(agents[AGENT], [903, 7, 100, 0, 0]);

    let session = &corpus.sessions[0];
    assert_eq!(session.harness, Harness::Copilot);
    assert_eq!(session.project_slug, "-tmp-copilot-proj");
    assert!(session.versions.contains("1.0.102"));
    let child = only_child(session, AGENT);
    assert_eq!(child.subagent_type.as_deref(), Some("explore"));
    assert_eq!(child.spawn_tool.as_deref(), Some("task"));
    assert_eq!(child.join_path, Some(JoinPath::AgentProgress));
    assert_eq!(child.ended.map(|e| e.status), Some(EndStatus::Completed));
    assert!(!child.has_file, "a subagent writes into its session's log");
}

#[test]
fn copilot_model_names_are_priced_from_the_table() {
    let layout = Layout::new();
    layout.copilot_file(&log(), &agent_run());
    let corpus = layout.scan();
    let table = PriceTable::bundled();
    for record in &corpus.records {
        let priced = table.price(record);
        assert_eq!(priced.unpriced_tokens, 0, "{:?}", record.model);
        assert!(priced.cost.0 > 0, "{:?}", record.model);
    }
}

#[test]
fn a_resume_is_read_as_a_tail_and_equals_a_full_read() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().expect("cache");
    let path = layout.copilot_file(
        &log(),
        &(start() + &receipt(SESSION, 1, 1001, "gpt-4o", None)),
    );
    assert_eq!(layout.scan_cached(cache.path()).records.len(), 1);
    let resume = "{\"type\":\"session.resume\",\"data\":{\"eventCount\":18,\"context\":{\"cwd\":\"/tmp/copilot/proj\"}},\
\"id\":\"r\",\"timestamp\":\"2026-12-02T05:18:53.579Z\",\"parentId\":\"x\"}\n"
        .to_string()
        + &receipt(SESSION, 2, 1002, "gpt-4o", None);
    let second = layout.append_and_rescan(cache.path(), &path, &resume);
    assert_eq!(second.records.len(), 2);
}

#[test]
fn only_session_logs_are_read_and_strays_at_the_root_are_counted() {
    let layout = Layout::new();
    layout.copilot_file(&log(), &agent_run());
    // The session's working state beside its log is not counted; an older release's flat log
    // and an empty log are.
    layout.copilot_file(&format!("{SESSION}/workspace.yaml"), "id: x\n");
    layout.copilot_file(&format!("{SESSION}/checkpoints/index.md"), "x\n");
    layout.copilot_file("0ld-session.jsonl", &start());
    layout.copilot_file("empty-session/events.jsonl", "");
    std::os::unix::fs::symlink(
        layout.copilot_state().join(log()),
        layout.copilot_state().join("linked"),
    )
    .expect("symlink");
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 3);
    assert_eq!(corpus.skips.get(SkipReason::NonArtifact), 1);
    assert_eq!(corpus.skips.get(SkipReason::EmptyMain), 1);
    assert_eq!(corpus.skips.get(SkipReason::Symlink), 1);
}
