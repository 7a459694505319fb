//! Stop: always a heartbeat carrying the last assistant message; with the nudge on, the triage
//! handshake.
//!
//! One subcommand does both, so the lease is refreshed before the nudge spends the budget. The
//! nudge injects only on `armed` and never when the harness says this stop follows a
//! continuation (`stop_hook_active`, Cursor's `loop_count`): those finalize with
//! `triage/complete` using the attempt id `begin` handed back. The server's `pending` state is
//! the only cap — no local counter, no state file.

use serde_json::{Value, json};

use crate::context::Hook;
use crate::harness::Harness;
use crate::http::{Client, encode};
use crate::output;
use crate::payload::Input;
use crate::text;

const HEARTBEAT: &str = "/api/v1/agent-sessions/heartbeat";
/// The excerpt bound (MAX_SESSION_EXCERPT_LENGTH), in UTF-16 units.
pub const MAX_EXCERPT: usize = 4000;

/// The heartbeat body: the natural key and the cut excerpt (omitted when empty: the server
/// refuses an empty one).
pub fn heartbeat_body(hook: &Hook, input: &Input) -> Value {
    let mut body = hook.key(&input.session_id);
    if let Some(message) = input.last_assistant_message.as_deref() {
        let printable = text::printable_prose(message);
        let excerpt = text::cut_utf16(&printable, MAX_EXCERPT);
        if !excerpt.is_empty() {
            body["lastMessageExcerpt"] = json!(excerpt);
        }
    }
    body
}

/// True when the nudge runs for this harness: `BATON_STOP_NUDGE=1`, and for Codex and Gemini
/// CLI also the installed `--nudge` (neither client caps how often a turn end continues, so the
/// nudge is registered only on request; the server's pending state still injects at most once
/// per attempt, seed 000).
pub fn nudge_enabled(hook: &Hook) -> bool {
    hook.env.flag("BATON_STOP_NUDGE")
        && (!crate::install::nudge_needs_asking(hook.format) || hook.nudge_argument)
}

/// Handles one Stop; returns the continuation envelope when the nudge armed.
pub fn run(hook: &Hook, input: &Input) -> Option<Value> {
    let client = hook.client()?;
    let body = heartbeat_body(hook, input);
    match client.post(HEARTBEAT, &body) {
        Ok(answer) if answer.ok() => {}
        Ok(answer) => {
            // 404: Stop never creates a missing row.
            hook.log(&format!("heartbeat_status_{}", answer.status));
            return None;
        }
        Err(failure) => {
            hook.log(&format!("heartbeat_{}", failure.code()));
            let mut replay = body;
            replay["observedAt"] = json!(crate::clock::iso_now());
            hook.spool(HEARTBEAT, replay);
            return None;
        }
    }
    if !nudge_enabled(hook) {
        return None;
    }
    // Cursor's aborted or failed turn is not a finished one.
    if hook.harness == Harness::Cursor && input.status.as_deref().is_some_and(|s| s != "completed")
    {
        return None;
    }
    nudge(hook, client, input)
}

fn nudge(hook: &Hook, client: &Client, input: &Input) -> Option<Value> {
    let mut begin = hook.key(&input.session_id);
    begin["stopHookActive"] = json!(input.stop_hook_active);
    let answer = match client.post("/api/v1/agent-sessions/triage/begin", &begin) {
        Ok(answer) if answer.ok() => answer,
        Ok(answer) => {
            hook.log(&format!("begin_status_{}", answer.status));
            return None;
        }
        Err(failure) => {
            hook.log(&format!("begin_{}", failure.code()));
            return None;
        }
    };
    let armed = answer.body.get("armed").and_then(Value::as_bool) == Some(true);
    let attempt = answer.text("attemptId").map(str::to_string);
    let pending = answer.text("reason") == Some("pending");
    match (armed, attempt) {
        (true, Some(attempt)) if !input.stop_hook_active => {
            match debrief_prompt(hook, client, input) {
                Some(prompt) => Some(output::continuation(hook.harness, &prompt)),
                None => {
                    // No words to inject: finish the attempt now (it lands expired, so the
                    // closer still debriefs the session).
                    complete(hook, client, input, &attempt);
                    None
                }
            }
        }
        // Armed under stop_hook_active (never inject), or the in-flight attempt's finalize.
        (true, Some(attempt)) => {
            complete(hook, client, input, &attempt);
            None
        }
        (false, Some(attempt)) if pending => {
            complete(hook, client, input, &attempt);
            None
        }
        _ => None,
    }
}

fn debrief_prompt(hook: &Hook, client: &Client, input: &Input) -> Option<String> {
    let query = format!(
        "/api/v1/prompts/debrief?agent={}&sessionId={}",
        encode(hook.agent()),
        encode(&input.session_id)
    );
    match client.get(&query) {
        Ok(answer) if answer.ok() => answer
            .text("prompt")
            .filter(|prompt| !prompt.trim().is_empty())
            .map(str::to_string),
        Ok(answer) => {
            hook.log(&format!("debrief_status_{}", answer.status));
            None
        }
        Err(failure) => {
            hook.log(&format!("debrief_{}", failure.code()));
            None
        }
    }
}

fn complete(hook: &Hook, client: &Client, input: &Input, attempt: &str) {
    let mut body = hook.key(&input.session_id);
    body["attemptId"] = json!(attempt);
    match client.post("/api/v1/agent-sessions/triage/complete", &body) {
        Ok(answer) if answer.ok() => {}
        Ok(answer) => hook.log(&format!("complete_status_{}", answer.status)),
        Err(failure) => hook.log(&format!("complete_{}", failure.code())),
    }
}

/// PreCompact: a heartbeat keeps the lease (compaction can take a while); nothing is printed.
pub fn pre_compact(hook: &Hook, input: &Input) -> Option<Value> {
    let client = hook.client()?;
    match client.post(HEARTBEAT, &hook.key(&input.session_id)) {
        Ok(answer) if answer.ok() || answer.status == 404 => {}
        Ok(answer) => hook.log(&format!("heartbeat_status_{}", answer.status)),
        Err(failure) => hook.log(&format!("heartbeat_{}", failure.code())),
    }
    None
}
