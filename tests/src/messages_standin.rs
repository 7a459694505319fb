//! A stand-in for the Anthropic Messages API, for running the real Claude Code binary: it
//! answers `POST /v1/messages` (streamed as SSE, or as one JSON message) from a script, gives
//! every response its own known token usage, and records what it issued and to which kind of
//! request, so a test can compare a transcript parser's totals with the usage actually issued.

use std::collections::VecDeque;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::standin::{Shared, StandIn, named_events, until_released};

/// Text Claude Code puts in the last user message of a compaction request (`/compact` and
/// auto-compaction alike, 2.1.332).
const COMPACTION_MARK: &str = "create a detailed summary of the conversation";
/// Claude Code's billing-header system block says so on a subagent's requests (2.1.332).
const SUBAGENT_MARK: &str = "cc_is_subagent=true";
/// Header naming the subagent a request comes from.
const AGENT_ID_HEADER: &str = "x-claude-code-agent-id";
/// A compaction reply in the shape Claude Code's summary prompt demands.
const COMPACTION_SUMMARY: &str = "<analysis>A short session.</analysis>\n<summary>The user asked; a subagent answered.</summary>";

/// Which of Claude Code's requests a response answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The session's own conversation (offers the subagent tool).
    Main,
    /// A subagent's conversation.
    Subagent,
    /// A compaction summary request.
    Compaction,
    /// Anything else (title generation, non-streamed helper calls, ...).
    Side,
}

/// Token counts of one response, by kind; `cache_write_5m + cache_write_1h` is the response's
/// `cache_creation_input_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
}

impl Usage {
    /// Distinct counts for the `sequence`-th response (1-based), each kind at its own order of
    /// magnitude so a swapped field shows; writes cycle 5-minute only, 1-hour only, both.
    pub fn for_response(sequence: u64) -> Usage {
        Usage {
            input: 3 + sequence,
            output: 50 * sequence + 7,
            cache_read: 1000 * sequence + 11,
            cache_write_5m: if sequence % 3 == 2 {
                0
            } else {
                200 * sequence + 13
            },
            cache_write_1h: if sequence % 3 == 1 {
                0
            } else {
                400 * sequence + 17
            },
        }
    }

    /// The sum of every kind.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// Adds another response's counts.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write_5m += other.cache_write_5m;
        self.cache_write_1h += other.cache_write_1h;
    }

    /// The Messages API `usage` object; `output = false` gives `message_start`'s form, whose
    /// `output_tokens` is a placeholder the API corrects in `message_delta`.
    fn wire(&self, output: bool) -> Value {
        json!({
            "input_tokens": self.input,
            "cache_creation_input_tokens": self.cache_write_5m + self.cache_write_1h,
            "cache_read_input_tokens": self.cache_read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_write_5m,
                "ephemeral_1h_input_tokens": self.cache_write_1h,
            },
            "output_tokens": if output { self.output } else { 1 },
            "service_tier": "standard",
        })
    }
}

/// What one scripted response says.
#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// A thinking block then a text block (two content blocks, one usage).
    ThinkThenText {
        thinking: String,
        text: String,
    },
    /// A text block then a call of the subagent tool (`Agent`, or `Task` on older builds:
    /// whichever the request offers), run in the foreground so the order of requests is fixed.
    Spawn {
        subagent_type: String,
        description: String,
        prompt: String,
        /// Model alias for the subagent (`haiku`, `sonnet`, ...), or the parent's.
        model: Option<String>,
    },
    /// `reply`, once the file `gate` exists: the client waits mid-turn until the test lets it
    /// go (or kills it).
    After {
        gate: std::path::PathBuf,
        reply: Box<Reply>,
    },
}

/// One response the stand-in issued.
#[derive(Debug, Clone)]
pub struct Issued {
    pub sequence: u64,
    pub message_id: String,
    /// Sent as the `request-id` header, which Claude Code stores as `requestId`.
    pub request_id: String,
    pub model: String,
    pub caller: Caller,
    /// The `x-claude-code-agent-id` header of a subagent's request.
    pub agent_id: Option<String>,
    pub streamed: bool,
    pub usage: Usage,
}

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// The caller a `/v1/messages` request was taken for; `None` elsewhere.
    pub caller: Option<Caller>,
    /// The text of a `/v1/messages` request's last user message (a hook's continuation lands
    /// there); empty elsewhere.
    pub user_text: String,
}

/// The replies, per caller, consumed in order; an exhausted queue answers `Done.`.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub main: Vec<Reply>,
    pub subagent: Vec<Reply>,
}

/// The replies still to give, per caller.
#[derive(Default)]
pub struct Queues {
    main: VecDeque<Reply>,
    subagent: VecDeque<Reply>,
}

/// The stand-in's ledger as its handlers share it.
type Ledger = Shared<Queues, Issued, SeenRequest>;

impl crate::standin::Ledger<Queues, Issued, SeenRequest> {
    /// Records the request and the response it gets: the caller's next scripted reply (a
    /// compaction always gets a well-formed summary, which Claude Code otherwise asks for
    /// again) and the next usage.
    fn issue(
        &mut self,
        request: &Value,
        path: &str,
        caller: Caller,
        agent_id: Option<String>,
        streamed: bool,
    ) -> (Issued, Reply) {
        self.requests.push(SeenRequest {
            method: "POST".to_string(),
            path: path.to_string(),
            caller: Some(caller),
            user_text: last_user_text(request),
        });
        let reply = match caller {
            Caller::Main => self.replies.main.pop_front(),
            Caller::Subagent => self.replies.subagent.pop_front(),
            Caller::Compaction => Some(Reply::Text(COMPACTION_SUMMARY.to_string())),
            Caller::Side => None,
        };
        let sequence = self.next_sequence();
        let issued = Issued {
            sequence,
            message_id: format!("msg_standin{sequence:04}"),
            request_id: format!("req_standin{sequence:04}"),
            model: request["model"]
                .as_str()
                .unwrap_or("claude-unknown")
                .to_string(),
            caller,
            agent_id,
            streamed,
            usage: Usage::for_response(sequence),
        };
        self.issued.push(issued.clone());
        let reply = reply.unwrap_or_else(|| Reply::Text("Done.".to_string()));
        (issued, reply)
    }
}

/// A running stand-in, stopped on drop; its base URL is `ANTHROPIC_BASE_URL`:
/// `http://127.0.0.1:PORT`.
pub type MessagesStandIn = StandIn<Queues, Issued, SeenRequest>;

impl MessagesStandIn {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> MessagesStandIn {
        let queues = Queues {
            main: script.main.into(),
            subagent: script.subagent.into(),
        };
        let routes = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .fallback(other);
        StandIn::serve(queues, routes, "").await
    }
}

async fn messages(
    State(ledger): State<Ledger>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return api_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "body is not JSON",
        );
    };
    let streamed = request["stream"].as_bool().unwrap_or(false);
    let caller = classify(&request, streamed);
    let agent_id = headers
        .get(AGENT_ID_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let (issued, mut reply) =
        ledger
            .lock()
            .expect("ledger")
            .issue(&request, uri.path(), caller, agent_id, streamed);
    while let Reply::After { gate, reply: then } = reply {
        until_released(&gate).await;
        reply = *then;
    }
    let agent_tool = offered_agent_tool(&request);
    let blocks = content_blocks(&reply, agent_tool.as_deref(), issued.sequence);
    let stop_reason = if blocks.iter().any(|block| block["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    let body = if streamed {
        sse_body(&issued, &blocks, stop_reason)
    } else {
        json_body(&issued, &blocks, stop_reason)
    };
    let content_type = if streamed {
        "text/event-stream"
    } else {
        "application/json"
    };
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CACHE_CONTROL, "no-cache".to_string()),
            (
                header::HeaderName::from_static("request-id"),
                issued.request_id.clone(),
            ),
        ],
        Body::from(body),
    )
        .into_response()
}

/// Compaction first (it is sent on the main conversation, tools and all), then the subagent
/// marker, then the main conversation, which is the one offering the subagent tool.
fn classify(request: &Value, streamed: bool) -> Caller {
    if last_user_text(request).contains(COMPACTION_MARK) {
        return Caller::Compaction;
    }
    if request["system"].to_string().contains(SUBAGENT_MARK) {
        return Caller::Subagent;
    }
    if streamed && offered_agent_tool(request).is_some() {
        return Caller::Main;
    }
    Caller::Side
}

fn offered_agent_tool(request: &Value) -> Option<String> {
    let tools = request["tools"].as_array()?;
    ["Agent", "Task"]
        .into_iter()
        .find(|name| tools.iter().any(|tool| tool["name"] == *name))
        .map(str::to_string)
}

fn last_user_text(request: &Value) -> String {
    let Some(message) = request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
    else {
        return String::new();
    };
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The response's content blocks, complete (as the JSON form carries them).
fn content_blocks(reply: &Reply, agent_tool: Option<&str>, sequence: u64) -> Vec<Value> {
    match reply {
        Reply::Text(text) => vec![json!({"type": "text", "text": text})],
        Reply::ThinkThenText { thinking, text } => vec![
            json!({"type": "thinking", "thinking": thinking, "signature": format!("sig{sequence}")}),
            json!({"type": "text", "text": text}),
        ],
        Reply::Spawn {
            subagent_type,
            description,
            prompt,
            model,
        } => {
            let Some(tool) = agent_tool else {
                return vec![json!({"type": "text", "text": "No subagent tool was offered."})];
            };
            let mut input = json!({
                "subagent_type": subagent_type,
                "description": description,
                "prompt": prompt,
                "run_in_background": false,
            });
            if let Some(model) = model {
                input["model"] = json!(model);
            }
            vec![
                json!({"type": "text", "text": "Delegating to a subagent."}),
                json!({"type": "tool_use", "id": format!("toolu_standin{sequence:04}"), "name": tool, "input": input}),
            ]
        }
        // Resolved before the blocks are built.
        Reply::After { reply, .. } => content_blocks(reply, agent_tool, sequence),
    }
}

fn message_envelope(
    issued: &Issued,
    content: Vec<Value>,
    stop_reason: Value,
    usage: Value,
) -> Value {
    json!({
        "id": issued.message_id,
        "type": "message",
        "role": "assistant",
        "model": issued.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": usage,
    })
}

fn json_body(issued: &Issued, blocks: &[Value], stop_reason: &str) -> String {
    message_envelope(
        issued,
        blocks.to_vec(),
        json!(stop_reason),
        issued.usage.wire(true),
    )
    .to_string()
}

/// The event sequence of a streamed response: the final usage rides on `message_delta`, as the
/// API sends it.
fn sse_body(issued: &Issued, blocks: &[Value], stop_reason: &str) -> String {
    let mut events = vec![json!({
        "type": "message_start",
        "message": message_envelope(issued, vec![], Value::Null, issued.usage.wire(false)),
    })];
    for (index, block) in blocks.iter().enumerate() {
        let (start, deltas) = match block["type"].as_str() {
            Some("thinking") => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ],
            ),
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                vec![
                    json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                ],
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": block["text"]})],
            ),
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": issued.usage.wire(true),
    }));
    events.push(json!({"type": "message_stop"}));
    named_events(&events)
}

/// Token counting issues no usage; a fixed count is enough for Claude Code's context meter.
async fn count_tokens(State(ledger): State<Ledger>, uri: Uri) -> Json<Value> {
    record_other(&ledger, &Method::POST, &uri);
    Json(json!({"input_tokens": 1000}))
}

/// Claude Code's reachability probe (`/api/hello`) gets a 200; anything else the API's own
/// not-found shape. Both are recorded so a test can see them.
async fn other(State(ledger): State<Ledger>, method: Method, uri: Uri) -> Response {
    record_other(&ledger, &method, &uri);
    if uri.path() == "/api/hello" {
        return Json(json!({})).into_response();
    }
    api_error(
        StatusCode::NOT_FOUND,
        "not_found_error",
        "not served by the stand-in",
    )
}

fn record_other(ledger: &Ledger, method: &Method, uri: &Uri) {
    ledger.lock().expect("ledger").requests.push(SeenRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        caller: None,
        user_text: String::new(),
    });
}

fn api_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"type": "error", "error": {"type": kind, "message": message}})),
    )
        .into_response()
}
