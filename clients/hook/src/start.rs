//! SessionStart, per the seed's source table:
//!
//! | source | what the hook does |
//! |---|---|
//! | `startup` | fetch the full briefing, render and cut it, `open` stamping exactly the commitments that survived the cut, inject briefing + run id; a failed briefing still opens, without `briefedMemories` |
//! | `resume` | `open` with `source: resume` and no `briefedMemories`; re-inject the run id |
//! | `compact` | heartbeat to recover the run id and re-inject it (not an open, not a restamp); on a session the server does not know (404): re-inject nothing, open nothing, log one line |
//! | `clear` | probe with heartbeat: 404 → a startup; 200 → re-inject, nothing new; anything else → deliver the briefing, skip the lifecycle, log one line |
//!
//! Order: first whatever the spool holds is sent (bounded, [`SPOOL_FIRST`]), so a close a
//! previous process spooled lands before this activation's reopen instead of after it; then
//! the lifecycle call; then the liveness sidecar is started (every source), so its first
//! pulse finds the open or reopen it depends on already made. What the spool still holds
//! goes to a detached drain.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::briefing::{self, Rendered};
use crate::clear_marker;
use crate::context::Hook;
use crate::http::{Answer, Client, Failure};
use crate::output;
use crate::payload::Input;
use crate::project;
use crate::sidecar;
use crate::spool::Spool;

const OPEN: &str = "/api/v1/agent-sessions/open";
const HEARTBEAT: &str = "/api/v1/agent-sessions/heartbeat";

/// The longest SessionStart spends sending what an earlier run spooled.
pub const SPOOL_FIRST: Duration = Duration::from_secs(2);

/// Handles one SessionStart; returns what to print.
pub fn run(hook: &Hook, input: &Input) -> Option<Value> {
    let Some(client) = hook.client() else {
        sidecar::ensure(hook, &input.session_id, input.transcript_path.as_deref());
        return None;
    };
    send_spooled_first(hook);
    let context = match input.source.as_deref().unwrap_or("startup") {
        "resume" => resume(hook, client, input),
        "compact" => match recover(hook, client, input) {
            Recovered::Context(context) => context,
            // Nothing to watch: the server has no session for it.
            Recovered::Unknown => return None,
        },
        "clear" => clear(hook, client, input),
        _ => startup(hook, client, input, None),
    };
    sidecar::ensure(hook, &input.session_id, input.transcript_path.as_deref());
    Some(output::session_context(hook.format, &context?))
}

/// Sends what the spool holds before the lifecycle call, within [`SPOOL_FIRST`]; a drain
/// already running is left to it.
fn send_spooled_first(hook: &Hook) {
    let spool = Spool::in_state(&hook.state_dir);
    if spool.is_empty() {
        return;
    }
    if let Ok(client) = crate::context::client(&hook.env, Instant::now() + SPOOL_FIRST) {
        spool.drain(&client, false, |status| {
            hook.log(&format!("spool_refused_{status}"));
        });
    }
}

fn startup(hook: &Hook, client: &Client, input: &Input, follows: Option<String>) -> Option<String> {
    let rendered = fetch_briefing(hook, client);
    let mut body = hook.key(&input.session_id);
    body["source"] = json!("startup");
    if let Some(project) = project::project(input.cwd.as_deref()) {
        body["project"] = json!(project);
    }
    if let Some((rendered, selector)) = &rendered {
        if let Some(selector) = selector {
            body["selector"] = selector.clone();
        }
        body["briefedMemories"] = rendered.briefed.iter().map(|row| row.to_json()).collect();
    }
    let follows = follows.or_else(|| clear_marker::cleared_predecessor(hook, &input.session_id));
    if let Some(follows) = follows {
        body["followsSessionId"] = json!(follows);
    }
    let opened = send_or_spool(hook, client, OPEN, body);
    let briefing_text = rendered.map(|(rendered, _)| rendered.text);
    match (opened, briefing_text) {
        (Some(run_id), Some(text)) => {
            Some(format!("{text}\n{}", output::run_id_instruction(&run_id)))
        }
        (Some(run_id), None) => Some(output::run_id_instruction(&run_id)),
        (None, text) => text,
    }
}

/// The rendered briefing and the selector the server says it applied.
fn fetch_briefing(hook: &Hook, client: &Client) -> Option<(Rendered, Option<Value>)> {
    match client.get("/api/v1/briefing?kind=all&mode=full") {
        Ok(answer) if answer.ok() && answer.body.is_object() => {
            let max_chars = crate::config::briefing_max_chars(&hook.env);
            let rendered = briefing::render(&answer.body, max_chars);
            let selector = answer
                .body
                .get("selector")
                .filter(|s| s.is_object())
                .cloned();
            Some((rendered, selector))
        }
        Ok(answer) => {
            hook.log(&format!("briefing_status_{}", answer.status));
            None
        }
        Err(failure) => {
            hook.log(&format!("briefing_{}", failure.code()));
            None
        }
    }
}

/// POSTs a lifecycle call; a call the server never answered, or answered "not now" (429,
/// 5xx), is spooled for the drain, which backs off. Returns the run id on success.
fn send_or_spool(hook: &Hook, client: &Client, path: &str, body: Value) -> Option<String> {
    match client.post(path, &body) {
        Ok(answer) if answer.ok() => answer.text("sessionRunId").map(str::to_string),
        Ok(answer) => {
            hook.log(&format!("status_{}", answer.status));
            if crate::backoff::retryable(answer.status) {
                hook.spool(path, body);
            }
            None
        }
        Err(failure) => {
            hook.log(failure.code());
            hook.spool(path, body);
            None
        }
    }
}

fn resume(hook: &Hook, client: &Client, input: &Input) -> Option<String> {
    let mut body = hook.key(&input.session_id);
    body["source"] = json!("resume");
    send_or_spool(hook, client, OPEN, body).map(|run_id| output::run_id_instruction(&run_id))
}

fn heartbeat(hook: &Hook, client: &Client, input: &Input) -> Result<Answer, Failure> {
    client.post(HEARTBEAT, &hook.key(&input.session_id))
}

/// `compact`: the run id went with the compacted context; a heartbeat recovers it without a new
/// activation. Compact is "not an open": a session the server does not know stays unknown.
fn recover(hook: &Hook, client: &Client, input: &Input) -> Recovered {
    Recovered::Context(match heartbeat(hook, client, input) {
        Ok(answer) if answer.ok() => answer.text("sessionRunId").map(output::run_id_instruction),
        Ok(answer) if answer.status == 404 => {
            hook.log("compact_unknown_session");
            return Recovered::Unknown;
        }
        Ok(answer) => {
            hook.log(&format!("status_{}", answer.status));
            None
        }
        Err(failure) => {
            hook.log(failure.code());
            None
        }
    })
}

/// What a compact learned: the context to re-inject, or that the server has no such session.
enum Recovered {
    Context(Option<String>),
    Unknown,
}

/// `clear`, resolved against the server: only a 404 is an existence answer.
fn clear(hook: &Hook, client: &Client, input: &Input) -> Option<String> {
    match heartbeat(hook, client, input) {
        Ok(answer) if answer.ok() => answer.text("sessionRunId").map(output::run_id_instruction),
        Ok(answer) if answer.status == 404 => startup(hook, client, input, None),
        outcome => {
            let code = match outcome {
                Ok(answer) => format!("clear_probe_status_{}", answer.status),
                Err(failure) => format!("clear_probe_{}", failure.code()),
            };
            hook.log(&code);
            fetch_briefing(hook, client).map(|(rendered, _)| rendered.text)
        }
    }
}
