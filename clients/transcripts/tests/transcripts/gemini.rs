//! Gemini CLI chats laid out as 0.61.0 lays them out, in the shapes it wrote against a local
//! stand-in of the Gemini API (HOOKS.md 4.10; `eval/usage/gemini-rules.md`): a main chat, a
//! resume appended to it, a subagent run through `invoke_agent`, an older single-object file
//! and its resumed `.jsonl` copy. Record contents are reduced to what Baton reads (no prompt
//! text of the client's).

use baton_transcripts::tree::EndStatus;
use baton_transcripts::walk::SkipReason;
use baton_transcripts::{Harness, PriceTable};

use crate::corpus::{Layout, by_agent, only_child};

const SESSION: &str = "a208c1bd-2c58-48de-9666-f15ea33e3629";
const AGENT: &str = "79a2f7d7-ae2d-49ce-ba7e-bf5f67d8391e";
const MAIN_CHAT: &str = "proj/chats/session-2026-12-02T05-19-a208c1bd.jsonl";

fn meta(session: &str, kind: &str) -> String {
    format!(
        "{{\"sessionId\":\"{session}\",\"projectHash\":\"dd56\",\"startTime\":\"2026-12-02T05:19:31.471Z\",\
\"lastUpdated\":\"2026-12-02T05:19:31.471Z\",\"kind\":\"{kind}\"}}\n"
    )
}

/// A `gemini` message whose usage is `prompt` (cached 40% of it), 20 output, 8 thoughts and
/// 4 tool-use prompt tokens; `calls` is its `toolCalls` array (or empty).
fn answer(id: &str, at: &str, prompt: u64, calls: &str) -> String {
    let cached = prompt * 2 / 5;
    let calls = if calls.is_empty() {
        String::new()
    } else {
        format!(",\"toolCalls\":{calls}")
    };
    format!(
        "{{\"id\":\"{id}\",\"timestamp\":\"{at}\",\"type\":\"gemini\",\"content\":\"\",\"thoughts\":[],\
\"tokens\":{{\"input\":{prompt},\"output\":20,\"cached\":{cached},\"thoughts\":8,\"tool\":4,\"total\":0}},\
\"model\":\"gemini-2.5-pro\"{calls}}}\n"
    )
}

const INVOKE: &str = r#"[{"id":"invoke_agent__invoke_agent_1796188771524_0","name":"invoke_agent","args":{"agent_name":"generalist","prompt":"look around"},"status":"success","timestamp":"2026-12-02T05:19:31.747Z","agentId":"79a2f7d7-ae2d-49ce-ba7e-bf5f67d8391e","description":"Delegating to agent 'generalist'"}]"#;
const UPDATE: &str = "{\"$set\":{\"lastUpdated\":\"2026-12-02T05:19:31.661Z\"}}\n";

/// The main chat as 0.61.0 wrote it for `USE_AGENT`: the call's message twice (again with its
/// tool call), then the answer after the subagent's result.
fn main_chat() -> String {
    meta(SESSION, "main")
        + "{\"id\":\"u-1\",\"timestamp\":\"2026-12-02T05:19:31.491Z\",\"type\":\"user\",\"content\":[{\"text\":\"x\"}]}\n"
        + UPDATE
        + &answer("g-1", "2026-12-02T05:19:31.660Z", 1001, "")
        + UPDATE
        + &answer("g-1", "2026-12-02T05:19:31.660Z", 1001, INVOKE)
        + &answer("g-2", "2026-12-02T05:19:31.774Z", 1003, "")
}

fn subagent_chat() -> String {
    meta(AGENT, "subagent")
        + &answer("s-1", "2026-12-02T05:19:31.733Z", 1002, "")
        + &answer(
            "s-1",
            "2026-12-02T05:19:31.733Z",
            1002,
            r#"[{"id":"x#0-0","name":"complete_task","status":"success"}]"#,
        )
        + "{\"$set\":{\"summary\":\"done\"}}\n"
}

fn lay_out_agent_run(layout: &Layout) {
    layout.gemini_file(MAIN_CHAT, &main_chat());
    layout.gemini_file(
        &format!("proj/chats/{SESSION}/{AGENT}.jsonl"),
        &subagent_chat(),
    );
}

#[test]
fn an_agent_run_is_three_requests_in_a_two_agent_tree() {
    let layout = Layout::new();
    lay_out_agent_run(&layout);
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 3);
    assert!(corpus.records.iter().all(|r| r.harness == Harness::Gemini));
    assert!(corpus.records.iter().all(|r| r.session_id == SESSION));
    // input = prompt − cached + tool; output = candidates + thoughts.
    let agents = by_agent(&corpus);
    assert_eq!(agents["main"], [(601 + 4) + (602 + 4), 56, 400 + 401, 0, 0]);
    assert_eq!(agents[AGENT], [602 + 4, 28, 400, 0, 0]);
    assert_eq!(
        corpus
            .records
            .iter()
            .map(|r| r.tokens.reasoning)
            .sum::<u64>(),
        24
    );

    assert_eq!(corpus.sessions.len(), 1);
    let session = &corpus.sessions[0];
    assert_eq!(
        (session.harness, session.project_slug.as_str()),
        (Harness::Gemini, "proj")
    );
    let child = only_child(session, AGENT);
    assert_eq!(child.subagent_type.as_deref(), Some("generalist"));
    assert_eq!(child.spawn_tool.as_deref(), Some("invoke_agent"));
    assert_eq!(
        child.join_path,
        Some(baton_transcripts::facts::JoinPath::ToolResult)
    );
    assert_eq!(child.ended.map(|e| e.status), Some(EndStatus::Completed));
    assert!(child.has_file);
}

#[test]
fn a_subagent_whose_call_is_missing_hangs_from_the_main_agent_by_its_folder() {
    let layout = Layout::new();
    layout.gemini_file(
        MAIN_CHAT,
        &(meta(SESSION, "main") + &answer("g-2", "2026-12-02T05:19:31.774Z", 10, "")),
    );
    layout.gemini_file(
        &format!("proj/chats/{SESSION}/{AGENT}.jsonl"),
        &subagent_chat(),
    );
    let corpus = layout.scan();
    let child = &corpus.sessions[0].agents[1];
    assert_eq!(
        child.join_path,
        Some(baton_transcripts::facts::JoinPath::Directory)
    );
    assert_eq!(child.ended, None);
}

#[test]
fn a_resume_appended_to_the_chat_is_read_as_a_tail_and_its_token_less_copies_change_nothing() {
    let layout = Layout::new();
    let cache = tempfile::tempdir().expect("cache");
    let path = layout.gemini_file(MAIN_CHAT, &main_chat());
    let first = layout.scan_cached(cache.path());
    assert_eq!(first.records.len(), 2);
    // 0.61.0 on `--resume latest`: a new metadata record, `$set.messages` rebuilding the earlier
    // messages without tokens or model, then the new turn.
    let resume = meta(SESSION, "main")
        + "{\"$set\":{\"sessionId\":\"a208c1bd-2c58-48de-9666-f15ea33e3629\"}}\n"
        + "{\"$set\":{\"messages\":[{\"id\":\"u-1\",\"timestamp\":\"2026-12-02T06:00:00.000Z\",\"type\":\"user\",\"content\":[]},\
{\"id\":\"g-1\",\"timestamp\":\"2026-12-02T06:00:00.000Z\",\"type\":\"gemini\",\"content\":[]},\
{\"id\":\"g-2\",\"timestamp\":\"2026-12-02T06:00:00.000Z\",\"type\":\"gemini\",\"content\":[]}]}}\n"
        + &answer("g-3", "2026-12-02T06:00:01.000Z", 2000, "");
    let second = layout.append_and_rescan(cache.path(), &path, &resume);
    assert_eq!(second.records.len(), 3);
    let g1 = second
        .records
        .iter()
        .find(|r| r.message_id == "g-1")
        .expect("g-1");
    assert_eq!(g1.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(g1.tokens.input, 605);
}

#[test]
fn an_older_single_object_chat_and_its_resumed_copy_are_one_session_counted_once() {
    let layout = Layout::new();
    let old = format!(
        "{{\n  \"sessionId\": \"{SESSION}\",\n  \"projectHash\": \"dd56\",\n  \"messages\": [\n    {}  ]\n}}\n",
        answer("g-1", "2025-10-05T07:11:31.572Z", 1000, "").trim_end()
    );
    layout.gemini_file("dd56/chats/session-2025-10-05T07-11-a208c1bd.json", &old);
    let copy = meta(SESSION, "main")
        + &answer("g-1", "2025-10-05T07:11:31.572Z", 1000, "")
        + &answer("g-9", "2026-12-02T05:19:31.774Z", 10, "");
    layout.gemini_file("dd56/chats/session-2025-10-05T07-11-a208c1bd.jsonl", &copy);
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 2);
    assert_eq!(corpus.sessions.len(), 1);
    assert_eq!(corpus.sessions[0].session_id, SESSION);
}

#[test]
fn only_chat_files_are_read_and_the_rest_of_chats_is_counted_as_skipped() {
    let layout = Layout::new();
    lay_out_agent_run(&layout);
    // Beside the chats: the client's backup of an unreadable chat, an empty chat, a folder too
    // deep; outside `chats/`: logs and checkpoints, never counted.
    layout.gemini_file(
        "proj/chats/session-2026-12-02T05-19-a208c1bd.jsonl.unreadable-1796",
        "{}\n",
    );
    layout.gemini_file("proj/chats/session-2026-12-02T05-20-00000000.jsonl", "");
    layout.gemini_file(&format!("proj/chats/{SESSION}/nested/x.jsonl"), "{}\n");
    layout.gemini_file("proj/logs.json", "[]");
    layout.gemini_file("proj/checkpoint-tag.json", "[]");
    let corpus = layout.scan();
    assert_eq!(corpus.records.len(), 3);
    assert_eq!(corpus.skips.get(SkipReason::NonArtifact), 1);
    assert_eq!(corpus.skips.get(SkipReason::EmptyMain), 1);
    assert_eq!(corpus.skips.get(SkipReason::TooDeep), 1);
}

#[test]
fn a_symlinked_chat_is_skipped_never_followed() {
    let layout = Layout::new();
    lay_out_agent_run(&layout);
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("secret.jsonl");
    std::fs::write(&target, main_chat()).expect("write");
    std::os::unix::fs::symlink(
        &target,
        layout
            .gemini_tmp()
            .join("proj/chats/session-2026-12-02T06-00-deadbeef.jsonl"),
    )
    .expect("symlink");
    let corpus = layout.scan();
    assert_eq!(corpus.skips.get(SkipReason::Symlink), 1);
    assert_eq!(corpus.records.len(), 3);
}

#[test]
fn gemini_usage_is_priced_from_the_table_and_an_unknown_model_stays_unpriced() {
    let layout = Layout::new();
    layout.gemini_file(
        MAIN_CHAT,
        &(meta(SESSION, "main")
            + &answer("g-1", "2026-12-02T05:19:31.660Z", 1000, "")
            + &answer("g-2", "2026-12-02T05:19:31.774Z", 1000, "")
                .replace("gemini-2.5-pro", "gemini-9001-super-duper")),
    );
    let corpus = layout.scan();
    let table = PriceTable::bundled();
    let priced: Vec<_> = corpus.records.iter().map(|r| table.price(r)).collect();
    // gemini-2.5-pro: 604 input × $1.25 + 28 output × $10 + 400 cache read × $0.125 per million.
    assert_eq!(
        priced[0].cost.0,
        (604 * 1_250_000 + 28 * 10_000_000 + 400 * 125_000) * 1000
    );
    assert_eq!(priced[0].unpriced_tokens, 0);
    assert_eq!(priced[1].cost.0, 0);
    assert_eq!(priced[1].unpriced_tokens, corpus.records[1].tokens.total());
}
