//! Claude Code transcripts (HOOKS.md 4): main files, subagent sidecars, compaction agents,
//! legacy sibling files and inline sidechains, read into [`FileFacts`].
//!
//! Rules, each from HOOKS.md 4.4–4.7:
//! - usage counts only from top-level `type == "assistant"` lines; usage copied into
//!   `progress` lines (`agent_progress`) is never counted;
//! - cache writes are the nested 5m + 1h split when present, else `cache_creation_input_tokens`;
//! - `<synthetic>` lines are kept with their model as written and priced by an explicit zero row;
//! - a line that cannot carry a fact is not decoded; a line that holds one of the needles and
//!   fails to decode, or that is not a JSON object at all, is counted as malformed and skipped;
//! - new line types (`api-request*`, `attachment`, `atis-latch`, ...) are skipped, not malformed;
//! - a background subagent's `<task-notification>` ([`notification`]) proves its edge twice:
//!   in the `queue-operation` line that queued it and in the `user` line that delivered it; its
//!   status ends the agent when the spawn's own result was only the async launch.

pub mod line;
pub mod notification;

use memchr::memmem;
use sha2::{Digest, Sha256};

use crate::facts::{FileFacts, JoinPath, Link, Spawn, SpawnResult};
use crate::lines::{complete_lines, looks_like_object};
use crate::record::{Harness, Modifiers, ServerTools, Tokens, UsageRecord};
use line::{CostState, Line, ProgressData, SpawnInput, ToolUseResult, blocks};

/// What the walk knows about a file before reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContext {
    /// The session the file belongs to; `None` for a legacy sibling file, which names its
    /// session in its lines.
    pub session_id: Option<String>,
    /// `None` for the main file; the sidecar's agent id otherwise.
    pub agent_id: Option<String>,
}

/// The agent id given to sidechain lines written inline in a main file without an `agentId`.
pub const INLINE_SIDECHAIN_AGENT: &str = "sidechain";

/// The tool names that spawn a subagent (renamed from `Task` to `Agent` in later versions).
const SPAWN_TOOLS: [&str; 2] = ["Task", "Agent"];

/// Reads the complete lines of `bytes` into `facts`; returns the bytes consumed.
pub fn read_chunk(context: &FileContext, bytes: &[u8], facts: &mut FileFacts) -> usize {
    complete_lines(bytes, |line| {
        facts.lines += 1;
        read_line(context, line, facts);
    })
}

/// Whether a line can hold anything Baton reads: usage, an agent id (results, progress,
/// sidecar envelopes) or the client's cost figure.
fn might_hold_fact(line: &[u8]) -> bool {
    memmem::find(line, b"\"usage\"").is_some()
        || memmem::find(line, b"\"agentId\"").is_some()
        || memmem::find(line, b"\"cost-state\"").is_some()
        || memmem::find(line, b"<task-notification>").is_some()
}

/// Whether a line can be the tool result of one of the file's spawn calls still without one.
/// Only then is a plain tool result (one without an `agentId`, e.g. a failed spawn) decoded.
fn might_end_spawn(line: &[u8], facts: &FileFacts) -> bool {
    !facts.spawns.is_empty()
        && memmem::find(line, b"\"tool_result\"").is_some()
        && facts.spawns.iter().any(|spawn| {
            !facts
                .results
                .iter()
                .any(|result| result.tool_use_id == spawn.tool_use_id)
                && memmem::find(line, spawn.tool_use_id.as_bytes()).is_some()
        })
}

fn read_line(context: &FileContext, bytes: &[u8], facts: &mut FileFacts) {
    if !might_hold_fact(bytes) && !might_end_spawn(bytes, facts) {
        if !looks_like_object(bytes) {
            facts.malformed_lines += 1;
        }
        return;
    }
    let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes) else {
        facts.malformed_lines += 1;
        return;
    };
    if facts.line_session_id.is_none() {
        facts.line_session_id = line.session_id.as_deref().map(str::to_string);
    }
    if let Some(version) = line.version.as_deref().filter(|v| !v.is_empty())
        && !facts.versions.contains(version)
    {
        facts.versions.insert(version.to_string());
    }
    let timestamp_ms = line.timestamp.as_deref().and_then(parse_timestamp_ms);
    if let Some(ms) = timestamp_ms {
        facts.saw_time(ms);
    }
    match line.kind.as_deref() {
        Some("assistant") => assistant(context, &line, bytes, timestamp_ms, facts),
        Some("user") => {
            if let Some(content) = line.message.as_ref().and_then(|m| m.content) {
                notifications(content, JoinPath::TaskNotification, timestamp_ms, facts);
            }
            user(&line, timestamp_ms, facts)
        }
        Some("queue-operation") => {
            if let (Some("enqueue"), Some(content)) = (line.operation.as_deref(), line.content) {
                notifications(content, JoinPath::QueueOperation, timestamp_ms, facts);
            }
        }
        Some("progress") => progress(&line, facts),
        Some("cost-state") => cost_state(&line, facts),
        _ => {}
    }
}

fn assistant(
    context: &FileContext,
    line: &Line<'_>,
    bytes: &[u8],
    timestamp_ms: Option<i64>,
    facts: &mut FileFacts,
) {
    let Some(message) = &line.message else { return };
    if memmem::find(bytes, b"\"tool_use\"").is_some()
        && let Some(content) = message.content
    {
        spawns(content, timestamp_ms, facts);
    }
    let Some(usage) = &message.usage else { return };
    let sidechain = line.is_sidechain == Some(true);
    let agent_id = match (&context.agent_id, sidechain) {
        (Some(agent), _) => Some(agent.clone()),
        (None, true) => {
            facts.inline_sidechain = true;
            Some(
                line.agent_id
                    .as_deref()
                    .unwrap_or(INLINE_SIDECHAIN_AGENT)
                    .to_string(),
            )
        }
        (None, false) => None,
    };
    let session_id = context
        .session_id
        .clone()
        .or_else(|| line.session_id.as_deref().map(str::to_string))
        .or_else(|| facts.line_session_id.clone())
        .unwrap_or_default();
    let (cache_write_5m, cache_write_1h) = usage.cache_writes();
    let message_id = match message.id.as_deref().filter(|id| !id.is_empty()) {
        Some(id) => id.to_string(),
        // No id to dedup on: the line's own digest keeps re-reads stable.
        None => format!("line-sha256:{}", &hex::encode(Sha256::digest(bytes))[..32]),
    };
    facts.records.push(UsageRecord {
        message_id,
        request_id: line
            .request_id
            .as_deref()
            .filter(|id| !id.is_empty())
            .map(str::to_string),
        harness: Harness::ClaudeCode,
        session_id,
        agent_id,
        model: message.model.as_deref().map(str::to_string),
        timestamp_ms: timestamp_ms.or(facts.last_ms).unwrap_or(0),
        tokens: Tokens {
            input: usage.input_tokens.unwrap_or(0),
            output: usage.output_tokens.unwrap_or(0),
            cache_read: usage.cache_read_input_tokens.unwrap_or(0),
            cache_write_5m,
            cache_write_1h,
            reasoning: 0,
        },
        server_tools: usage
            .server_tool_use
            .as_ref()
            .map(|used| ServerTools {
                web_search: used.web_search_requests.unwrap_or(0),
                web_fetch: used.web_fetch_requests.unwrap_or(0),
            })
            .unwrap_or_default(),
        modifiers: Modifiers {
            service_tier: non_empty(usage.service_tier.as_deref()),
            speed: non_empty(usage.speed.as_deref()),
            inference_geo: non_empty(usage.inference_geo.as_deref()),
        },
        sidechain,
    });
}

fn spawns(content: &serde_json::value::RawValue, timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    for block in blocks(content) {
        let (Some("tool_use"), Some(id), Some(name)) = (
            block.kind.as_deref(),
            block.id.as_deref(),
            block.name.as_deref(),
        ) else {
            continue;
        };
        if !SPAWN_TOOLS.contains(&name) || facts.spawns.iter().any(|s| s.tool_use_id == id) {
            continue;
        }
        let input = block
            .input
            .and_then(|raw| serde_json::from_str::<SpawnInput<'_>>(raw.get()).ok());
        facts.spawns.push(Spawn {
            tool_use_id: id.to_string(),
            tool_name: name.to_string(),
            subagent_type: input
                .as_ref()
                .and_then(|i| i.subagent_type.as_deref().map(str::to_string)),
            description: input
                .as_ref()
                .and_then(|i| i.description.as_deref().map(str::to_string)),
            timestamp_ms,
            caller: None,
        });
    }
}

fn user(line: &Line<'_>, timestamp_ms: Option<i64>, facts: &mut FileFacts) {
    let Some(content) = line.message.as_ref().and_then(|m| m.content) else {
        return;
    };
    let results: Vec<(String, bool)> = blocks(content)
        .into_iter()
        .filter(|block| block.kind.as_deref() == Some("tool_result"))
        .filter_map(|block| {
            let id = block.tool_use_id?.into_owned();
            Some((id, block.is_error == Some(true)))
        })
        .collect();
    let Some((tool_use_id, block_error)) = results.into_iter().next() else {
        return;
    };
    let structured = line
        .tool_use_result
        .filter(|raw| raw.get().starts_with('{'))
        .and_then(|raw| serde_json::from_str::<ToolUseResult<'_>>(raw.get()).ok());
    let text_error = line
        .tool_use_result
        .is_some_and(|raw| raw.get().starts_with("\"Error"));
    if facts.spawns.iter().any(|s| s.tool_use_id == tool_use_id)
        && !facts.results.iter().any(|r| r.tool_use_id == tool_use_id)
    {
        let status = structured.as_ref().and_then(|r| r.status.as_deref());
        if let Some(is_error) = spawn_end(block_error, text_error, status) {
            facts.results.push(SpawnResult {
                tool_use_id: tool_use_id.clone(),
                timestamp_ms,
                is_error,
            });
        }
    }
    if let Some(agent_id) = structured.and_then(|r| r.agent_id.map(|id| id.into_owned())) {
        add_link(facts, tool_use_id, agent_id, JoinPath::ToolResult);
    }
}

/// What a spawn's tool result says about the child's end: `None` when it is no end (an async
/// launch), else whether it was an error (see [`SpawnResult`]).
pub fn spawn_end(block_error: bool, text_error: bool, status: Option<&str>) -> Option<bool> {
    match status {
        Some("async_launched") => None,
        _ if block_error || text_error => Some(true),
        None | Some("completed") => Some(false),
        Some(_) => Some(true),
    }
}

fn progress(line: &Line<'_>, facts: &mut FileFacts) {
    let (Some(data), Some(tool_use_id)) = (line.data, line.parent_tool_use_id.as_deref()) else {
        return;
    };
    if !data.get().contains("agent_progress") {
        return;
    }
    let Ok(data) = serde_json::from_str::<ProgressData<'_>>(data.get()) else {
        return;
    };
    if let (Some("agent_progress"), Some(agent_id)) =
        (data.kind.as_deref(), data.agent_id.as_deref())
    {
        add_link(
            facts,
            tool_use_id.to_string(),
            agent_id.to_string(),
            JoinPath::AgentProgress,
        );
    }
}

/// Links and ends stated by `<task-notification>` messages in a content value.
fn notifications(
    content: &serde_json::value::RawValue,
    path: JoinPath,
    timestamp_ms: Option<i64>,
    facts: &mut FileFacts,
) {
    if !content.get().contains("<task-notification>") {
        return;
    }
    for text in line::texts(content) {
        let Some(found) = notification::parse(&text) else {
            continue;
        };
        add_link(
            facts,
            found.tool_use_id.to_string(),
            found.task_id.to_string(),
            path,
        );
        let spawned_here = facts
            .spawns
            .iter()
            .any(|s| s.tool_use_id == found.tool_use_id);
        let ended = facts
            .results
            .iter()
            .any(|r| r.tool_use_id == found.tool_use_id);
        if let (true, false, Some(status)) = (spawned_here, ended, found.status) {
            facts.results.push(SpawnResult {
                tool_use_id: found.tool_use_id.to_string(),
                timestamp_ms,
                is_error: notification::is_error(status),
            });
        }
    }
}

fn cost_state(line: &Line<'_>, facts: &mut FileFacts) {
    let nested = line
        .cost_state
        .and_then(|raw| serde_json::from_str::<CostState>(raw.get()).ok())
        .and_then(|state| state.total_cost_usd);
    if let Some(cost) = line.total_cost_usd.or(nested) {
        facts.client_cost_usd = Some(cost);
    }
    let usage = line.model_usage.and_then(|raw| {
        serde_json::from_str::<std::collections::BTreeMap<String, line::ClientModelUsage>>(
            raw.get(),
        )
        .ok()
    });
    if let Some(usage) = usage {
        facts.client_tokens = usage
            .into_iter()
            .map(|(model, figures)| (model, figures.tokens()))
            .collect();
    }
}

fn add_link(facts: &mut FileFacts, tool_use_id: String, agent_id: String, path: JoinPath) {
    let known = facts.links.iter().any(|link| {
        link.tool_use_id == tool_use_id && link.agent_id == agent_id && link.path == path
    });
    if !known {
        facts.links.push(Link {
            tool_use_id,
            agent_id,
            path,
        });
    }
}

fn non_empty(value: Option<&str>) -> Option<String> {
    value.filter(|v| !v.is_empty()).map(str::to_string)
}

/// An RFC 3339 timestamp as milliseconds since the epoch.
pub fn parse_timestamp_ms(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.timestamp_millis())
}
