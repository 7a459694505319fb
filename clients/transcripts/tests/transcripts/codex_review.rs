//! Codex reviews, built in the shape of a real 0.77 pair (a parent rollout and its review
//! thread's rollout, from a public repository without a licence, so not copied here): the
//! parent echoes the review's `token_count` events between `entered_review_mode` and
//! `exited_review_mode`, some a millisecond off the review's own copies, then re-emits its
//! pre-review total. The review is counted once, under its own model when its rollout is here.

use baton_transcripts::facts::JoinPath;

use crate::corpus::Layout;

const PARENT: &str = "019b55c1-d022-7061-bbb9-b0c90708472b";
const REVIEW: &str = "019b5669-8da8-7bc3-bed8-e1c1b805dad5";

fn meta(at: &str, id: &str, source: &str) -> String {
    format!(
        r#"{{"timestamp":"{at}","type":"session_meta","payload":{{"id":"{id}","cwd":"/w/app","cli_version":"0.77.0","source":{source}}}}}"#
    )
}

fn turn(at: &str, model: &str) -> String {
    format!(r#"{{"timestamp":"{at}","type":"turn_context","payload":{{"model":"{model}"}}}}"#)
}

fn event(at: &str, kind: &str) -> String {
    format!(r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"{kind}"}}}}"#)
}

/// A count event: cumulative input and output (no cache), with the last answer's figures.
fn count(at: &str, total: (u64, u64), last: (u64, u64)) -> String {
    let usage = |(input, output): (u64, u64)| {
        format!(
            r#"{{"input_tokens":{input},"cached_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":0,"total_tokens":{}}}"#,
            input + output
        )
    };
    format!(
        r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{}}}}}}}"#,
        usage(total),
        usage(last)
    )
}

fn parent() -> String {
    [
        meta("2025-12-25T13:45:23.000Z", PARENT, r#""cli""#),
        turn("2025-12-25T13:45:23.100Z", "gpt-5.2-codex"),
        count("2025-12-25T16:45:11.212Z", (1000, 100), (1000, 100)),
        count("2025-12-25T16:45:16.144Z", (3000, 300), (2000, 200)),
        event("2025-12-25T16:45:20.000Z", "entered_review_mode"),
        count("2025-12-25T16:48:40.428Z", (3000, 175), (3000, 175)),
        count("2025-12-25T16:48:40.723Z", (3000, 175), (3000, 175)),
        count("2025-12-25T16:48:59.164Z", (7000, 400), (4000, 225)),
        event("2025-12-25T16:49:30.000Z", "exited_review_mode"),
        // The parent's pre-review total again: a repeat.
        count("2025-12-25T16:49:49.647Z", (3000, 300), (2000, 200)),
        count("2025-12-25T16:50:10.000Z", (4000, 350), (1000, 50)),
    ]
    .join("\n")
        + "\n"
}

fn review() -> String {
    [
        meta(
            "2025-12-25T16:48:36.000Z",
            REVIEW,
            r#"{"subagent":"review"}"#,
        ),
        turn("2025-12-25T16:48:36.100Z", "gpt-5.1-codex-max"),
        count("2025-12-25T16:48:40.428Z", (3000, 175), (3000, 175)),
        count("2025-12-25T16:48:40.723Z", (3000, 175), (3000, 175)),
        // One millisecond before the parent's echo of the same event.
        count("2025-12-25T16:48:59.163Z", (7000, 400), (4000, 225)),
    ]
    .join("\n")
        + "\n"
}

/// Input and output per (agent, model) of the parent's session.
fn figures(corpus: &baton_transcripts::Corpus) -> Vec<(String, String, u64, u64)> {
    let mut out: std::collections::BTreeMap<(String, String), (u64, u64)> = Default::default();
    for record in &corpus.records {
        assert_eq!(
            record.session_id, PARENT,
            "everything is the parent's session"
        );
        let key = (
            record.agent_id.clone().unwrap_or_else(|| "main".into()),
            record.model.clone().unwrap_or_default(),
        );
        let entry = out.entry(key).or_default();
        entry.0 += record.tokens.input;
        entry.1 += record.tokens.output;
    }
    out.into_iter()
        .map(|((agent, model), (input, output))| (agent, model, input, output))
        .collect()
}

#[test]
fn a_review_with_its_rollout_counts_once_under_its_own_model_in_the_parents_tree() {
    let layout = Layout::new();
    layout.codex_file(
        &format!("2025/12/25/rollout-2025-12-25T22-45-23-{PARENT}.jsonl"),
        &parent(),
    );
    layout.codex_file(
        &format!("2025/12/26/rollout-2025-12-26T01-48-36-{REVIEW}.jsonl"),
        &review(),
    );
    let corpus = layout.scan();
    assert_eq!(
        figures(&corpus),
        vec![
            (REVIEW.into(), "gpt-5.1-codex-max".into(), 7000, 400),
            ("main".into(), "gpt-5.2-codex".into(), 4000, 350),
        ]
    );
    let session = corpus
        .sessions
        .iter()
        .find(|s| s.session_id == PARENT)
        .expect("the parent's session");
    assert_eq!(
        corpus.sessions.len(),
        1,
        "the review is no session of its own"
    );
    let review = session
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some(REVIEW))
        .expect("the review is in the parent's tree");
    assert_eq!(review.join_path, Some(JoinPath::CodexReviewEcho));
    assert_eq!(review.subagent_type.as_deref(), Some("review"));
}

#[test]
fn a_review_without_its_rollout_counts_once_as_the_parents_review_agent() {
    let layout = Layout::new();
    layout.codex_file(
        &format!("2025/12/25/rollout-2025-12-25T22-45-23-{PARENT}.jsonl"),
        &parent(),
    );
    let corpus = layout.scan();
    let agent = format!("{PARENT}:review:1");
    assert_eq!(
        figures(&corpus),
        vec![
            (agent.clone(), "gpt-5.2-codex".into(), 7000, 400),
            ("main".into(), "gpt-5.2-codex".into(), 4000, 350),
        ],
        "the echo once, the parent's own count resumed from its pre-review total"
    );
    let session = &corpus.sessions[0];
    let echo = session
        .agents
        .iter()
        .find(|a| a.agent_id.as_deref() == Some(agent.as_str()))
        .expect("the echo's agent is in the tree");
    assert!(!echo.has_file);
    assert_eq!(echo.join_path, Some(JoinPath::CodexReviewEcho));
}
