//! Line-level rules, each on events of the shape Copilot CLI 1.0.102 wrote here.

use super::*;
use crate::record::Harness;

fn read_lines(lines: &[&str]) -> FileFacts {
    let mut facts = FileFacts::default();
    let text = lines.join("\n") + "\n";
    let used = read_chunk(text.as_bytes(), &mut facts);
    assert_eq!(used, text.len());
    facts.records = crate::dedup::dedup(std::mem::take(&mut facts.records));
    facts
}

const START: &str = r#"{"type":"session.start","data":{"sessionId":"80166b9b-037b-4e4d-a11e-0dc275b2fc97","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-12-02T05:18:28.211Z","selectedModel":"gpt-4o","context":{"cwd":"/tmp/copilot/proj","gitRoot":"/tmp/copilot/proj","branch":"master"}},"id":"01ee6f84-ba63-4bd7-9017-ca9ee9dd3c99","timestamp":"2026-12-02T05:18:28.236Z","parentId":null}"#;

/// A receipt as the real client wrote it (BYOK, OpenAI chat completions), fields trimmed.
fn receipt(sequence: u64, agent: Option<&str>, source: &str) -> String {
    let agent = agent.map_or(String::new(), |id| format!(r#","agentId":"{id}""#));
    format!(
        r#"{{"type":"session.usage_record","data":{{"usage":{{"model":"gpt-4o","modelDisplayName":"gpt-4o","inputTokens":1001,"outputTokens":7,"cacheReadTokens":100,"cacheWriteTokens":0,"reasoningTokens":0,"cost":0.0,"duration":65,"initiator":"user","interactionType":"conversation-agent","isByok":true,"byokKind":"local_user","modelProvider":"other","providerType":"openai","apiCallId":"chatcmpl-standin-{sequence}","apiEndpoint":"/chat/completions","accounting":{{"sourceSessionId":"{source}","sequence":{sequence},"usageId":"chatcmpl-standin-{sequence}"}},"finishReason":"stop"}}}},"id":"b446e26c-f59f-40a2-9858-e2b8230f2ab{sequence}","timestamp":"2026-12-02T05:18:29.470Z","parentId":"x"{agent}}}"#
    )
}

const MAIN: &str = "80166b9b-037b-4e4d-a11e-0dc275b2fc97";

#[test]
fn a_usage_record_is_one_request() {
    let facts = read_lines(&[START, &receipt(1, None, MAIN)]);
    assert_eq!(facts.records.len(), 1);
    let record = &facts.records[0];
    assert_eq!(record.harness, Harness::Copilot);
    assert_eq!(record.message_id, format!("{MAIN}:1"));
    assert_eq!(record.model.as_deref(), Some("gpt-4o"));
    assert_eq!(record.agent_id, None);
    assert_eq!(
        (
            record.tokens.input,
            record.tokens.cache_read,
            record.tokens.output
        ),
        (901, 100, 7)
    );
    assert_eq!(record.modifiers.service_tier, None, "BYOK has no tier");
    assert!(facts.versions.contains("1.0.102"));
    assert_eq!(facts.cwd.as_deref(), Some("/tmp/copilot/proj"));
    assert_eq!(facts.malformed_lines, 0);
}

#[test]
fn cumulative_and_ephemeral_usage_is_never_summed() {
    let shutdown = r#"{"type":"session.shutdown","data":{"shutdownType":"routine","modelMetrics":{"gpt-4o":{"requests":{"count":4,"cost":0.0},"usage":{"inputTokens":4010,"outputTokens":28,"cacheReadTokens":400,"cacheWriteTokens":0}}}},"id":"s","timestamp":"2026-12-02T05:18:34.930Z","parentId":"x"}"#;
    let live = r#"{"type":"assistant.usage","data":{"model":"gpt-4o","inputTokens":1001,"outputTokens":7},"id":"u","timestamp":"2026-12-02T05:18:29.470Z","parentId":"x","ephemeral":true}"#;
    let checkpoint = r#"{"type":"session.usage_checkpoint","data":{"totalNanoAiu":0,"usageAccountingWatermarks":{"s":3}},"id":"c","timestamp":"2026-12-02T05:18:34.930Z","parentId":"x"}"#;
    let facts = read_lines(&[START, &receipt(1, None, MAIN), live, checkpoint, shutdown]);
    assert_eq!(facts.records.len(), 1);
}

#[test]
fn a_receipt_read_twice_is_one_request_and_resumes_continue_the_sequence() {
    let resume = r#"{"type":"session.resume","data":{"resumeTime":"2026-12-02T05:18:53.579Z","eventCount":18,"context":{"cwd":"/tmp/copilot/proj"}},"id":"r","timestamp":"2026-12-02T05:18:53.579Z","parentId":"x"}"#;
    let first = receipt(1, None, MAIN);
    let facts = read_lines(&[START, &first, resume, &first, &receipt(2, None, MAIN)]);
    let ids: Vec<&str> = facts
        .records
        .iter()
        .map(|r| r.message_id.as_str())
        .collect();
    assert_eq!(ids, [format!("{MAIN}:1"), format!("{MAIN}:2")]);
}

#[test]
fn a_subagent_is_spawned_by_its_task_call_and_owns_its_receipts() {
    let task = r#"{"type":"tool.execution_start","data":{"toolCallId":"call_2","toolName":"task","arguments":{"description":"Explore repo files","prompt":"p","agent_type":"explore","name":"explorer","mode":"sync"},"turnId":"1","model":"gpt-4o"},"id":"t","timestamp":"2026-12-02T05:18:31.132Z","parentId":"x"}"#;
    let started = r#"{"type":"subagent.started","data":{"toolCallId":"call_2","agentName":"explore","agentDisplayName":"explorer","agentDescription":"Explore repo files","model":"gpt-4o","agentType":"explore","executionMode":"sync"},"id":"a","timestamp":"2026-12-02T05:18:31.521Z","parentId":"x","agentId":"c6e25102"}"#;
    let completed = r#"{"type":"subagent.completed","data":{"toolCallId":"call_2","agentName":"explore","agentDisplayName":"explorer","model":"gpt-4o","totalToolCalls":0,"totalTokens":1010,"durationMs":2064},"id":"d","timestamp":"2026-12-02T05:18:33.586Z","parentId":"x","agentId":"c6e25102"}"#;
    let facts = read_lines(&[
        START,
        task,
        started,
        &receipt(1, Some("c6e25102"), "b6164f5b"),
        completed,
    ]);
    assert_eq!(facts.spawns.len(), 1);
    assert_eq!(facts.spawns[0].subagent_type.as_deref(), Some("explore"));
    assert_eq!(facts.spawns[0].caller, None);
    assert_eq!(facts.links.len(), 1);
    assert_eq!(facts.links[0].agent_id, "c6e25102");
    assert_eq!(facts.links[0].path, JoinPath::AgentProgress);
    assert_eq!(facts.results.len(), 1);
    assert!(!facts.results[0].is_error);
    assert_eq!(facts.records[0].agent_id.as_deref(), Some("c6e25102"));
    assert_eq!(facts.records[0].message_id, "b6164f5b:1");
}

#[test]
fn a_nested_task_call_names_its_calling_agent_and_failures_end_in_error() {
    let nested = r#"{"type":"tool.execution_start","data":{"toolCallId":"call_9","toolName":"task","arguments":{"agent_type":"general-purpose"}},"id":"t","timestamp":"2026-12-02T05:18:31.132Z","parentId":"x","agentId":"outer"}"#;
    let failed = r#"{"type":"subagent.failed","data":{"toolCallId":"call_9","agentName":"g","agentDisplayName":"g","error":"boom"},"id":"f","timestamp":"2026-12-02T05:18:32.000Z","parentId":"x","agentId":"inner"}"#;
    let cancelled = r#"{"type":"subagent.completed","data":{"toolCallId":"call_8","agentName":"g","agentDisplayName":"g","cancelled":true},"id":"c","timestamp":"2026-12-02T05:18:32.000Z","parentId":"x","agentId":"other"}"#;
    let facts = read_lines(&[nested, failed, cancelled]);
    assert_eq!(facts.spawns[0].caller.as_deref(), Some("outer"));
    assert!(facts.results.iter().all(|result| result.is_error));
}

#[test]
fn unreadable_lines_are_counted_and_skipped() {
    let cases = [
        "not json",
        r#"{"data":{}}"#,
        r#"{"type":"session.usage_record","data":{"usage":{"inputTokens":"many"}}}"#,
        r#"{"type":"session.usage_record","data":{}}"#,
        r#"{"type":"session.usage_record"}"#,
        r#"{"type":"subagent.started","data":{"toolCallId":"c"}}"#,
    ];
    for line in cases {
        let facts = read_lines(&[START, line]);
        assert_eq!(facts.malformed_lines, 1, "{line}");
        assert!(facts.records.is_empty(), "{line}");
    }
}

#[test]
fn a_request_served_by_copilot_is_labelled_by_its_tier() {
    let served = receipt(1, None, MAIN).replace(r#""isByok":true"#, r#""isByok":false"#);
    let facts = read_lines(&[&served]);
    assert_eq!(
        facts.records[0].modifiers.service_tier.as_deref(),
        Some(usage::COPILOT_SERVICE_TIER)
    );
}
