//! Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read into [`FileFacts`].
//!
//! Rules:
//! - `session_meta` names the session and its working folder; `turn_context` names the model
//!   used until the next one;
//! - per-response `token_usage_record` lines (Codex 0.171, HOOKS.md 4.8) are the records when a
//!   rollout has them, keyed by `response_id`; cumulative `event_msg` `token_count` events are
//!   then ignored;
//! - otherwise each `token_count` whose cumulative `total_token_usage` moved is one record: the
//!   difference from the previous total (exact even if an event between was lost); a repeated
//!   event with the same total is a duplicate; a total that went down started a new count
//!   (Codex 0.171 carries totals on across `exec resume`, but older builds and other launch
//!   paths may not), whose first figure is taken whole;
//! - OpenAI's `input_tokens` include cached and cache-written input, so uncached input is
//!   `input − cached − cache_write`; `output_tokens` include reasoning tokens.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

pub mod count;
pub mod meta;

use crate::claude::parse_timestamp_ms;
use crate::facts::{CodexTotal, FileFacts};
use crate::lines::complete_lines;
use crate::record::{Harness, Modifiers, Tokens, UsageRecord};
use count::{delta, tokens};

/// Records derived from cumulative counts carry this prefix, so a rollout that also has
/// per-response records can set them aside.
pub const COUNT_PREFIX: &str = "count:";

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
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cli_version: Option<Cow<'a, str>>,
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

fn read_line(bytes: &[u8], facts: &mut FileFacts) {
    let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else {
        facts.malformed_lines += 1;
        return;
    };
    let timestamp_ms = line.timestamp.as_deref().and_then(parse_timestamp_ms);
    if let Some(ms) = timestamp_ms {
        facts.saw_time(ms);
    }
    let (Some(kind), Some(raw)) = (line.kind.as_deref(), line.payload) else {
        return;
    };
    let relevant = matches!(kind, "session_meta" | "turn_context" | "token_usage_record")
        || (kind == "event_msg"
            && (raw.get().contains("\"token_count\"")
                || raw.get().contains("\"token_usage_record\"")));
    if !relevant {
        return;
    }
    let Ok(payload) = serde_json::from_str::<Payload<'_>>(raw.get()) else {
        facts.malformed_lines += 1;
        return;
    };
    match (kind, payload.kind.as_deref()) {
        ("session_meta", _) => {
            facts.codex.session_id = payload.id.as_deref().map(str::to_string);
            facts.cwd = payload.cwd.as_deref().map(str::to_string);
            if let Some(version) = payload.cli_version.as_deref().filter(|v| !v.is_empty()) {
                facts.versions.insert(version.to_string());
            }
            if let Some(model) = payload.model.as_deref() {
                facts.codex.model = Some(model.to_string());
            }
        }
        ("turn_context", _) => {
            if let Some(model) = payload.model.as_deref() {
                facts.codex.model = Some(model.to_string());
            }
        }
        ("token_usage_record", _) | ("event_msg", Some("token_usage_record")) => {
            response_record(&payload, timestamp_ms, facts);
        }
        ("event_msg", Some("token_count")) => count_record(&payload, timestamp_ms, facts),
        _ => {}
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
    );
}

fn count_record(payload: &Payload<'_>, timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    let Some(total) = payload
        .info
        .as_ref()
        .and_then(|info| info.total_token_usage)
    else {
        return;
    };
    let total = total.total();
    let Some(moved) = delta(facts.codex.last_total, total) else {
        return;
    };
    facts.codex.last_total = Some(total);
    let key = format!(
        "{COUNT_PREFIX}{}:{}",
        timestamp_ms.unwrap_or(0),
        total.total
    );
    let model = facts.codex.model.clone();
    push(facts, key, model, timestamp_ms, tokens(moved));
}

fn push(
    facts: &mut FileFacts,
    message_id: String,
    model: Option<String>,
    timestamp_ms: Option<i64>,
    tokens: Tokens,
) {
    facts.records.push(UsageRecord {
        message_id,
        request_id: None,
        harness: Harness::Codex,
        session_id: facts.codex.session_id.clone().unwrap_or_default(),
        agent_id: None,
        model,
        timestamp_ms: timestamp_ms.or(facts.last_ms).unwrap_or(0),
        tokens,
        server_tools: Default::default(),
        modifiers: Modifiers::default(),
        sidechain: false,
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

