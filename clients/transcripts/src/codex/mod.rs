//! Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read into [`FileFacts`].
//!
//! Each rule below is decided by the file shapes named with it (real public rollouts in
//! `fixtures/conformance/codex/`, HOOKS.md 4.8–4.9):
//!
//! - **Identity.** A rollout belongs to the thread of its **first** `session_meta`. A later
//!   `session_meta` with the same id is the same thread reopened; one with another id is an
//!   embedded copy of another thread (a resume replay in 0.36, a `thread_spawn` fork's history
//!   in 0.114) and never changes the file's thread or working folder.
//! - **Replays.** After an embedded `session_meta` the client re-writes the other thread's
//!   lines, `token_count` included, in one burst before the file's own first turn. Those
//!   events are history: they are not usage, but the count goes on from them (in 0.114 the
//!   fork's first own total is the replayed total plus its `last_token_usage`; in 0.36 the
//!   resumed process starts again from zero, which the shrink rule below takes whole). The
//!   burst ends at the first line written more than [`REPLAY_GAP_MS`] after the line before it:
//!   in the corpus the largest gap inside a burst is 11 ms and the smallest gap after one is
//!   656 ms, and a usage event of the file's own needs a model call after that.
//! - **Reviews.** Between `entered_review_mode` and `exited_review_mode` the parent echoes the
//!   review thread's `token_count` events (their own count, from zero, some a millisecond
//!   apart from the review's own copies) and, after the review, re-emits its own pre-review
//!   total (0.77). The echoes are read on their own count, as the parent's review agent
//!   `<parent>:review:<n>` ([`echo_agent`]), marked as copies ([`UsageRecord::sidechain`]) under
//!   keys that name their cumulative totals; [`threads`] drops them when the review thread's
//!   own rollout (`source.subagent = "review"`, which states the review's model) is there and
//!   its totals match. The parent's own count is left where it was, so its re-emitted total is
//!   a repeat. The parent states no model for the review: an echo without its rollout keeps the
//!   parent's model in force.
//! - **Counts.** Outside those, each `token_count` whose cumulative total moved is one record
//!   ([`count`]): growth is usage, a repeat nothing, a shrink a new count taken whole;
//!   `info: null` carries nothing.
//! - **Per-response records.** `token_usage_record` lines (0.171) are the records when a
//!   rollout has them, keyed by `response_id`; counts are then set aside.
//! - **Kinds.** `cached_input_tokens` is part of `input_tokens`; `reasoning_output_tokens` is
//!   part of `output_tokens` and is kept as its own figure.

pub mod count;
pub mod meta;
pub mod threads;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::claude::parse_timestamp_ms;
use crate::facts::{CodexTotal, FileFacts, Replay, Review};
use crate::lines::complete_lines;
use crate::record::{Harness, Modifiers, Tokens, UsageRecord};
use count::{delta, tokens};

/// Records derived from cumulative counts carry this prefix, so a rollout that also has
/// per-response records can set them aside.
pub const COUNT_PREFIX: &str = "count:";

/// A replay burst ends at the first line written more than this long after the previous one.
pub const REPLAY_GAP_MS: i64 = 250;

/// Keys of echoed review usage: `review-echo:<parent>:<n>:<cumulative total>`.
pub const ECHO_PREFIX: &str = "review-echo:";

/// The agent a parent's `n`th review echo is counted under when the review's own rollout is
/// not there.
pub fn echo_agent(parent: &str, number: u32) -> String {
    format!("{parent}:review:{number}")
}

/// The cumulative total a count or echo key names (its last `:` field).
pub fn key_total(message_id: &str) -> Option<u64> {
    if !message_id.starts_with(COUNT_PREFIX) && !message_id.starts_with(ECHO_PREFIX) {
        return None;
    }
    message_id.rsplit(':').next()?.parse().ok()
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    info: Option<Info>,
    #[serde(borrow, default)]
    response_id: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<CodexUsage>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<CodexUsage>,
    #[serde(default)]
    last_token_usage: Option<CodexUsage>,
}

#[derive(Deserialize, Clone, Copy, Default)]
struct CodexUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    reasoning_output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

impl CodexUsage {
    fn total(self) -> CodexTotal {
        CodexTotal {
            input: self.input_tokens,
            cached_input: self.cached_input_tokens,
            cache_write: self.cache_write_input_tokens,
            output: self.output_tokens,
            reasoning: self.reasoning_output_tokens,
            total: self.total_tokens,
        }
    }
}

/// Reads the complete lines of a rollout chunk into `facts`; returns the bytes consumed.
pub fn read_chunk(bytes: &[u8], facts: &mut FileFacts) -> usize {
    complete_lines(bytes, |line| {
        facts.lines += 1;
        read_line(line, facts);
    })
}

/// The line types and event kinds that change what the reader knows.
fn relevant(kind: &str, raw: &str) -> bool {
    matches!(kind, "session_meta" | "turn_context" | "token_usage_record")
        || (kind == "event_msg"
            && [
                "\"token_count\"",
                "\"token_usage_record\"",
                "_review_mode\"",
            ]
            .iter()
            .any(|needle| raw.contains(needle)))
}

fn read_line(bytes: &[u8], facts: &mut FileFacts) {
    let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else {
        facts.malformed_lines += 1;
        return;
    };
    let timestamp_ms = line.timestamp.as_deref().and_then(parse_timestamp_ms);
    if let Some(ms) = timestamp_ms {
        facts.saw_time(ms);
    }
    end_replay_after_gap(timestamp_ms, facts);
    let (Some(kind), Some(raw)) = (line.kind.as_deref(), line.payload) else {
        return;
    };
    if !relevant(kind, raw.get()) {
        return;
    }
    if kind == "session_meta" {
        session_meta(raw, facts);
        return;
    }
    let Ok(payload) = serde_json::from_str::<Payload<'_>>(raw.get()) else {
        facts.malformed_lines += 1;
        return;
    };
    match (kind, payload.kind.as_deref()) {
        ("turn_context", _) => {
            if let Some(model) = payload.model.as_deref() {
                match &mut facts.codex.review {
                    Some(review) => review.model = Some(model.to_string()),
                    None => facts.codex.model = Some(model.to_string()),
                }
            }
        }
        ("token_usage_record", _) | ("event_msg", Some("token_usage_record"))
            if facts.codex.replay.is_none() =>
        {
            response_record(&payload, timestamp_ms, facts);
        }
        ("event_msg", Some("entered_review_mode")) if facts.codex.replay.is_none() => {
            facts.codex.reviews += 1;
            facts.codex.review = Some(Review {
                number: facts.codex.reviews,
                last_total: None,
                model: payload
                    .model
                    .as_deref()
                    .map(str::to_string)
                    .or_else(|| facts.codex.model.clone()),
            });
        }
        ("event_msg", Some("exited_review_mode")) => facts.codex.review = None,
        ("event_msg", Some("token_count")) => count_record(&payload, timestamp_ms, facts),
        _ => {}
    }
}

/// A replay ends at the first line written more than [`REPLAY_GAP_MS`] after the one before.
fn end_replay_after_gap(timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    let Some(now) = timestamp_ms else { return };
    if facts.codex.replay.is_some()
        && facts
            .codex
            .last_line_ms
            .is_some_and(|before| now - before > REPLAY_GAP_MS)
    {
        facts.codex.replay = None;
    }
    facts.codex.last_line_ms = Some(now);
}

fn session_meta(raw: &RawValue, facts: &mut FileFacts) {
    let Ok(meta) = serde_json::from_str::<meta::MetaPayload<'_>>(raw.get()) else {
        facts.malformed_lines += 1;
        return;
    };
    let Some(id) = meta.id.filter(|id| !id.is_empty()) else {
        return;
    };
    match facts.codex.session_id.as_deref() {
        None => {
            facts.codex.session_id = Some(id);
            facts.codex.origin = meta::origin(meta.source);
            facts.codex.forked_from = meta.forked_from_id.filter(|id| !id.is_empty());
            facts.cwd = meta.cwd;
            if let Some(model) = meta.model {
                facts.codex.model = Some(model);
            }
            if let Some(version) = meta.cli_version.filter(|v| !v.is_empty()) {
                facts.versions.insert(version);
            }
        }
        // The same thread opened again by a later process: nothing to copy.
        Some(own) if own == id => {
            if let Some(version) = meta.cli_version.filter(|v| !v.is_empty()) {
                facts.versions.insert(version);
            }
        }
        Some(_) => facts.codex.replay = Some(Replay { thread_id: id }),
    }
}

fn response_record(payload: &Payload<'_>, timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    let (Some(response_id), Some(usage)) = (payload.response_id.as_deref(), payload.usage) else {
        return;
    };
    facts.codex.has_response_records = true;
    let model = payload
        .model
        .as_deref()
        .map(str::to_string)
        .or_else(|| facts.codex.model.clone());
    push(
        facts,
        format!("response:{response_id}"),
        model,
        timestamp_ms,
        tokens(usage.total()),
        None,
    );
}

fn count_record(payload: &Payload<'_>, timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    let Some(info) = payload.info.as_ref() else {
        return;
    };
    let Some(total) = info.total_token_usage.map(CodexUsage::total) else {
        return;
    };
    let last = info.last_token_usage.map(CodexUsage::total);
    if facts.codex.replay.is_some() {
        // History: the count goes on from it, nothing is used.
        if delta(facts.codex.last_total, total, last).is_some() {
            facts.codex.replayed_events += 1;
        }
        facts.codex.last_total = Some(total);
        return;
    }
    if let Some(review) = &mut facts.codex.review {
        let Some(moved) = delta(review.last_total, total, last) else {
            return;
        };
        review.last_total = Some(total);
        let (number, model) = (review.number, review.model.clone());
        let own = facts.codex.session_id.clone().unwrap_or_default();
        facts.codex.echoed_events += 1;
        let key = format!("{ECHO_PREFIX}{own}:{number}:{}", total.total);
        let agent = echo_agent(&own, number);
        push(facts, key, model, timestamp_ms, tokens(moved), Some(agent));
        return;
    }
    let Some(moved) = delta(facts.codex.last_total, total, last) else {
        return;
    };
    facts.codex.last_total = Some(total);
    let model = facts.codex.model.clone();
    let key = format!(
        "{COUNT_PREFIX}{}:{}",
        timestamp_ms.unwrap_or(0),
        total.total
    );
    push(facts, key, model, timestamp_ms, tokens(moved), None);
}

/// Adds a record of the file's thread; `echo_of` names the review agent whose usage the
/// parent echoed (a copy of another thread's usage).
fn push(
    facts: &mut FileFacts,
    message_id: String,
    model: Option<String>,
    timestamp_ms: Option<i64>,
    tokens: Tokens,
    echo_of: Option<String>,
) {
    let echo = echo_of.is_some();
    facts.records.push(UsageRecord {
        message_id,
        request_id: None,
        harness: Harness::Codex,
        session_id: facts.codex.session_id.clone().unwrap_or_default(),
        agent_id: echo_of,
        model,
        timestamp_ms: timestamp_ms.or(facts.last_ms).unwrap_or(0),
        tokens,
        server_tools: Default::default(),
        modifiers: Modifiers::default(),
        sidechain: echo,
    });
}

/// The records a rollout contributes: per-response records when it has any, else the ones
/// derived from cumulative counts.
pub fn effective_records(facts: &FileFacts) -> impl Iterator<Item = &UsageRecord> {
    let responses_only = facts.codex.has_response_records;
    facts
        .records
        .iter()
        .filter(move |record| !responses_only || !record.message_id.starts_with(COUNT_PREFIX))
}
