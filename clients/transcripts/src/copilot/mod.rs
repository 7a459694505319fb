//! GitHub Copilot CLI session logs (`<copilot home>/session-state/<session id>/events.jsonl`,
//! `$COPILOT_HOME` standing in for `~/.copilot`) read into [`FileFacts`]. Facts established on
//! the real 1.0.102 binary against a local model stand-in (`/work/notes/copilot-findings.md`
//! section 6) and from the package's `schemas/session-events.schema.json` and
//! `copilot-sdk/generated/session-events.d.ts`.
//!
//! Every line is one event, `{"type", "data", "id", "timestamp", "parentId"}`, with a top-level
//! `agentId` on a subagent's events. The file is append-only; a resume (`--resume`,
//! `--continue`) appends a `session.resume` event to the same file.
//!
//! Rules:
//!
//! - **A request** is a `session.usage_record` line ("internal durable accounting receipt"),
//!   one per model call, its `data.usage` read by [`usage::record`]. The live
//!   `assistant.usage` event shares the receipt's identity but is ephemeral (never persisted),
//!   and `session.shutdown` / `session.usage_checkpoint` carry cumulative figures that span
//!   resumes: none of them is ever summed.
//! - **Identity** is the receipt's accounting identity, `<sourceSessionId>:<sequence>`: the
//!   sequence runs from 1 within its source session and continues across resumes, so a copy
//!   of a receipt in another file is the same request. A receipt without one falls back to the
//!   line's own `id`.
//! - **Kinds**: see [`usage::tokens`] (input includes cache reads and writes; output includes
//!   reasoning).
//! - **Agents.** A subagent writes into its session's file with a top-level `agentId`; its
//!   receipts are that agent's. `subagent.started` names the agent (`agentId`) and the tool
//!   call that spawned it (`data.toolCallId`): the edge's proof
//!   ([`crate::facts::JoinPath::AgentProgress`], the client's own lifecycle line naming both).
//!   The spawning call is the `task` tool's `tool.execution_start`, whose top-level `agentId`
//!   names the calling agent (absent for the main agent), so a subagent's own subagents hang
//!   from it. `subagent.completed` ends the agent (`cancelled: true` as an error, as an early
//!   termination), `subagent.failed` ends it in error.
//! - Files written before receipts existed (releases that logged no `session.usage_record`)
//!   yield no records: their usage is not on disk in a per-request form Baton can trust.

pub mod usage;
pub mod walk;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::claude::parse_timestamp_ms;
use crate::facts::{FileFacts, JoinPath, Link, Spawn, SpawnResult};
use crate::lines::complete_lines;
use usage::ReceiptUsage;

/// The tool that runs a subagent in 1.0.102.
pub const SPAWN_TOOL: &str = "task";

/// One line's envelope; `data` is decoded by type.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(default)]
    id: Option<&'a str>,
    #[serde(default)]
    timestamp: Option<&'a str>,
    #[serde(rename = "agentId", default)]
    agent_id: Option<String>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// `session.start` / `session.resume`: the client's version and working folder.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Start {
    #[serde(default)]
    copilot_version: Option<String>,
    #[serde(default)]
    context: Option<StartContext>,
}

#[derive(Deserialize)]
struct StartContext {
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Deserialize)]
struct Receipt {
    usage: ReceiptUsage,
}

/// `tool.execution_start` (the spawning call when the tool is [`SPAWN_TOOL`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolStart {
    tool_call_id: String,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    arguments: Option<TaskArguments>,
}

#[derive(Deserialize)]
struct TaskArguments {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    agent_type: Option<String>,
}

/// `subagent.started`, `subagent.completed` and `subagent.failed`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubagentEvent {
    tool_call_id: String,
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    agent_name: Option<String>,
    #[serde(default)]
    agent_description: Option<String>,
    #[serde(default)]
    cancelled: Option<bool>,
}

/// Reads the complete lines of a chunk into `facts`; returns the bytes consumed.
pub fn read_chunk(bytes: &[u8], facts: &mut FileFacts) -> usize {
    complete_lines(bytes, |line| {
        facts.lines += 1;
        if read_line(line, facts).is_none() {
            facts.malformed_lines += 1;
        }
    })
}

/// One line; `None` when it is not an event or an event Baton reads is not of its shape.
fn read_line(line: &[u8], facts: &mut FileFacts) -> Option<()> {
    let event: Event<'_> = serde_json::from_slice(line).ok()?;
    let timestamp_ms = event.timestamp.and_then(parse_timestamp_ms);
    if let Some(ms) = timestamp_ms {
        facts.saw_time(ms);
    }
    let data = || event.data.map(RawValue::get);
    match event.kind {
        "session.usage_record" => {
            let receipt: Receipt = serde_json::from_str(data()?).ok()?;
            facts.records.push(usage::record(
                receipt.usage,
                event.id.unwrap_or_default(),
                event.agent_id,
                timestamp_ms.unwrap_or(0),
            ));
        }
        "session.start" | "session.resume" => {
            let start: Start = serde_json::from_str(data()?).ok()?;
            facts.versions.extend(start.copilot_version);
            if facts.cwd.is_none() {
                facts.cwd = start.context.and_then(|context| context.cwd);
            }
        }
        "tool.execution_start" => {
            let call: ToolStart = serde_json::from_str(data()?).ok()?;
            if call.tool_name.as_deref() == Some(SPAWN_TOOL) {
                let arguments = call.arguments.unwrap_or(TaskArguments {
                    description: None,
                    agent_type: None,
                });
                add_spawn(
                    facts,
                    Spawn {
                        tool_use_id: call.tool_call_id,
                        tool_name: SPAWN_TOOL.to_string(),
                        subagent_type: arguments.agent_type,
                        description: arguments.description,
                        timestamp_ms,
                        caller: event.agent_id,
                    },
                );
            }
        }
        "subagent.started" => {
            let started: SubagentEvent = serde_json::from_str(data()?).ok()?;
            let agent = event.agent_id?;
            add_spawn(
                facts,
                Spawn {
                    tool_use_id: started.tool_call_id.clone(),
                    tool_name: SPAWN_TOOL.to_string(),
                    subagent_type: started.agent_type.or(started.agent_name),
                    description: started.agent_description,
                    timestamp_ms,
                    caller: None,
                },
            );
            let link = Link {
                tool_use_id: started.tool_call_id,
                agent_id: agent,
                path: JoinPath::AgentProgress,
            };
            if !facts.links.contains(&link) {
                facts.links.push(link);
            }
        }
        "subagent.completed" | "subagent.failed" => {
            let ended: SubagentEvent = serde_json::from_str(data()?).ok()?;
            let is_error = event.kind == "subagent.failed" || ended.cancelled == Some(true);
            if !facts
                .results
                .iter()
                .any(|result| result.tool_use_id == ended.tool_call_id)
            {
                facts.results.push(SpawnResult {
                    tool_use_id: ended.tool_call_id,
                    timestamp_ms,
                    is_error,
                });
            }
        }
        _ => {}
    }
    Some(())
}

/// Keeps the first word on a spawn call: the `task` call itself (which names its caller)
/// comes before the `subagent.started` it leads to.
fn add_spawn(facts: &mut FileFacts, spawn: Spawn) {
    if !facts
        .spawns
        .iter()
        .any(|known| known.tool_use_id == spawn.tool_use_id)
    {
        facts.spawns.push(spawn);
    }
}

#[cfg(test)]
mod tests;
