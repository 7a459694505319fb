//! Gemini CLI chat files (`<gemini home>/.gemini/tmp/<project>/chats/`) read into
//! [`FileFacts`] (HOOKS.md 4.10; `eval/usage/gemini-rules.md` names where in the 0.61.0 bundle
//! each rule was read).
//!
//! Two forms exist, and both are read:
//!
//! - **JSONL** (`session-<time>-<id8>.jsonl`, the recorder of current releases, 0.61.0
//!   included): a metadata record (`sessionId`, `projectHash`, `startTime`, `kind`), then
//!   message records (`id`, `timestamp`, `type`, ...), `{"$set": {...}}` updates (which may
//!   carry a whole `messages` array) and `{"$rewindTo": id}`. A resume appends a new metadata
//!   record to the same file. Read line by line, tail reads included.
//! - **Single object** (`session-<time>-<id8>.json`, older releases): the metadata fields and
//!   a `messages` array in one pretty-printed JSON document, rewritten whole on every update.
//!   0.61.0 still reads it and, on resume, copies it into a `.jsonl` beside it (the `.json`
//!   stays). Read whole, never tailed.
//!
//! Rules:
//!
//! - **A request** is a `type: "gemini"` message with a `tokens` object (`recordMessageTokens`
//!   fills it from the response's final `usageMetadata`). The recorder writes a message again
//!   whenever it changes (tool calls added) and a resume's `$set.messages` rewrites earlier
//!   messages *without* their tokens, so per message id the last copy that carries tokens is
//!   the request ([`crate::dedup`] keeps the later Gemini copy); copies without tokens are not
//!   records. A `$rewindTo` removes messages from the resumable history, not from the bill:
//!   their usage stays.
//! - **Kinds** ([`message::tokens`]): `tokens.input` is `promptTokenCount`, which includes
//!   `cached`; `tool` (`toolUsePromptTokenCount`) is prompt the model read on top; `thoughts`
//!   are billed as output. So input = input − cached + tool, cache read = cached, output =
//!   output + thoughts, reasoning = thoughts.
//! - **Sessions and agents.** A main file's session is its metadata `sessionId` (older releases
//!   wrote several files for one session id). A subagent's chat is
//!   `chats/<main session id>/<agent id>.jsonl` (`kind: "subagent"`); the `invoke_agent` call
//!   that ran it carries `agentId` in the caller's file, which proves the edge
//!   ([`crate::facts::JoinPath::ToolResult`]) and its `status` ends the agent.
//! - Routing, summary and other utility calls are not written to the chat files: what is read
//!   here is the chat's usage, a lower bound of what was billed (HOOKS.md 4.10).

pub mod message;
pub mod walk;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::facts::FileFacts;
use crate::lines::complete_lines;
use message::Message;

/// What the walk knows about a chat file before reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiContext {
    /// The subagent's id (the file's stem) for a subagent chat; `None` for a main chat.
    pub agent_id: Option<String>,
}

/// One record of a chat file: any of metadata, message, update or rewind. Only the fields
/// Baton reads are decoded; the message itself is decoded when the record is one.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "sessionId", default)]
    session_id: Option<String>,
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
    #[serde(rename = "$set", borrow, default)]
    set: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

/// A `$set` update: only a `messages` array matters (earlier messages written again).
#[derive(Deserialize)]
struct Update<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

/// Reads the complete lines of a JSONL chat chunk into `facts`; returns the bytes consumed.
pub fn read_chunk(context: &GeminiContext, bytes: &[u8], facts: &mut FileFacts) -> usize {
    complete_lines(bytes, |line| {
        facts.lines += 1;
        read_record(context, line, facts);
    })
}

/// Reads a whole single-object chat file into `facts`. A document that does not parse counts
/// as one malformed line.
pub fn read_document(context: &GeminiContext, bytes: &[u8], facts: &mut FileFacts) {
    facts.lines += 1;
    read_record(context, bytes, facts);
}

fn read_record(context: &GeminiContext, bytes: &[u8], facts: &mut FileFacts) {
    let Ok(record) = serde_json::from_slice::<Record<'_>>(bytes) else {
        facts.malformed_lines += 1;
        return;
    };
    if facts.gemini_id.is_none() {
        facts.gemini_id = record.session_id.clone();
    }
    if record.id.is_some() {
        read_message(context, bytes, facts);
    }
    let copies = match record.set {
        Some(set) => serde_json::from_str::<Update<'_>>(set.get())
            .ok()
            .and_then(|update| update.messages),
        None => record.messages,
    };
    if let Some(copies) = copies {
        read_messages(context, copies, facts);
    }
}

/// The messages of a `$set.messages` array or of a single-object file's `messages`.
fn read_messages(context: &GeminiContext, raw: &RawValue, facts: &mut FileFacts) {
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw.get()) else {
        facts.malformed_lines += 1;
        return;
    };
    for item in items {
        read_message(context, item.get().as_bytes(), facts);
    }
}

fn read_message(context: &GeminiContext, bytes: &[u8], facts: &mut FileFacts) {
    match serde_json::from_slice::<Message>(bytes) {
        Ok(message) => message::read(context, message, facts),
        Err(_) => facts.malformed_lines += 1,
    }
}

#[cfg(test)]
mod tests;
