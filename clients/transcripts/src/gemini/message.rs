//! One Gemini CLI chat message: its usage record, and the subagent calls it made.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::GeminiContext;
use crate::claude::parse_timestamp_ms;
use crate::facts::{FileFacts, JoinPath, Link, Spawn, SpawnResult};
use crate::record::{Harness, Modifiers, Tokens, UsageRecord};

/// The tool that runs a subagent in 0.61.0 (`AGENT_TOOL_NAME`).
pub const SPAWN_TOOL: &str = "invoke_agent";

/// A message record as the recorder writes it (fields Baton reads).
#[derive(Deserialize)]
pub struct Message {
    pub id: String,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub tokens: Option<ChatTokens>,
    #[serde(rename = "toolCalls", default)]
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// `tokens` of a `gemini` message: the response's `usageMetadata` under the recorder's names.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatTokens {
    /// `promptTokenCount`: the whole prompt, cached part included.
    #[serde(default)]
    pub input: u64,
    /// `candidatesTokenCount`.
    #[serde(default)]
    pub output: u64,
    /// `cachedContentTokenCount`.
    #[serde(default)]
    pub cached: u64,
    /// `thoughtsTokenCount`.
    #[serde(default)]
    pub thoughts: u64,
    /// `toolUsePromptTokenCount`.
    #[serde(default)]
    pub tool: u64,
}

/// A tool call recorded on a `gemini` message (after it completed).
#[derive(Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub args: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(rename = "agentId", default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// Baton's five kinds from a chat message's `tokens` (the rule in the module doc of
/// [`super`]). A cached count above the prompt count cannot be uncached input: it is clamped.
pub fn tokens(chat: ChatTokens) -> Tokens {
    Tokens {
        input: chat.input.saturating_sub(chat.cached) + chat.tool,
        output: chat.output + chat.thoughts,
        cache_read: chat.cached,
        cache_write_5m: 0,
        cache_write_1h: 0,
        reasoning: chat.thoughts,
    }
}

/// Adds what one message says to the file's facts.
pub fn read(context: &GeminiContext, message: Message, facts: &mut FileFacts) {
    let timestamp_ms = message.timestamp.as_deref().and_then(parse_timestamp_ms);
    if let Some(ms) = timestamp_ms {
        facts.saw_time(ms);
    }
    if message.kind.as_deref() != Some("gemini") {
        return;
    }
    for call in message.tool_calls.iter().flatten() {
        read_tool_call(call, facts);
    }
    let Some(chat) = message.tokens else {
        return;
    };
    facts.records.push(UsageRecord {
        message_id: message.id,
        request_id: None,
        harness: Harness::Gemini,
        // The session is the file's (main) or its folder's (subagent); the corpus sets it.
        session_id: String::new(),
        agent_id: context.agent_id.clone(),
        model: message.model,
        timestamp_ms: timestamp_ms.unwrap_or(0),
        tokens: tokens(chat),
        server_tools: Default::default(),
        modifiers: Modifiers::default(),
        sidechain: false,
    });
}

/// A call that ran a subagent: the spawn, its proof (`agentId`) and, once its status is
/// final, its end. The same call is written again with each copy of its message; it is kept
/// once.
fn read_tool_call(call: &ToolCall, facts: &mut FileFacts) {
    let named_agent = call
        .args
        .as_ref()
        .and_then(|args| args.get("agent_name"))
        .and_then(|name| name.as_str())
        .map(str::to_string);
    let is_spawn = call.name.as_deref() == Some(SPAWN_TOOL) || call.agent_id.is_some();
    if !is_spawn || facts.spawns.iter().any(|s| s.tool_use_id == call.id) {
        return;
    }
    let at_ms = call.timestamp.as_deref().and_then(parse_timestamp_ms);
    facts.spawns.push(Spawn {
        tool_use_id: call.id.clone(),
        tool_name: call.name.clone().unwrap_or_else(|| SPAWN_TOOL.to_string()),
        subagent_type: named_agent,
        description: call.description.clone(),
        timestamp_ms: at_ms,
        caller: None,
    });
    if let Some(agent) = &call.agent_id {
        facts.links.push(Link {
            tool_use_id: call.id.clone(),
            agent_id: agent.clone(),
            path: JoinPath::ToolResult,
        });
    }
    if let Some(is_error) = call.status.as_deref().and_then(ended_in_error) {
        facts.results.push(SpawnResult {
            tool_use_id: call.id.clone(),
            timestamp_ms: at_ms,
            is_error,
        });
    }
}

/// Whether a final tool-call status is a failure; `None` while the call has not ended.
/// (`CoreToolCallStatus`: `success`, `error`, `cancelled` are final.)
fn ended_in_error(status: &str) -> Option<bool> {
    match status {
        "success" => Some(false),
        "error" | "cancelled" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_chat_tokens() {
        let chat = |input, output, cached, thoughts, tool| ChatTokens {
            input,
            output,
            cached,
            thoughts,
            tool,
        };
        // (chat tokens, input, output, cache read, reasoning)
        let cases = [
            (chat(1001, 21, 401, 8, 4), 604, 29, 401, 8),
            (chat(7228, 94, 0, 2659, 0), 7228, 2753, 0, 2659),
            (chat(10, 5, 0, 0, 0), 10, 5, 0, 0),
            // A cached count above the prompt's never makes input negative.
            (chat(10, 0, 12, 0, 3), 3, 0, 12, 0),
        ];
        for (chat, input, output, cache_read, reasoning) in cases {
            let got = tokens(chat);
            assert_eq!(
                (got.input, got.output, got.cache_read, got.reasoning),
                (input, output, cache_read, reasoning),
                "{chat:?}"
            );
            assert_eq!(got.cache_write(), 0);
        }
    }

    #[test]
    fn final_statuses() {
        let cases = [
            ("success", Some(false)),
            ("error", Some(true)),
            ("cancelled", Some(true)),
            ("executing", None),
            ("scheduled", None),
        ];
        for (status, expected) in cases {
            assert_eq!(ended_in_error(status), expected, "{status}");
        }
    }
}
