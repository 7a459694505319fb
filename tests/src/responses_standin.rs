//! A stand-in for the OpenAI Responses API, for running the real Codex CLI: it answers
//! `POST /v1/responses` (streamed as SSE: `response.created`, the output item events,
//! `response.completed` with the usage) from a script, gives every response its own known token
//! usage and id, and records what it issued and to which session and turn, so a test can compare
//! a rollout parser's totals with the usage actually issued.

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

pub use crate::standin::SeenRequest;
use crate::standin::{Shared, StandIn, event_stream, named_events, record};

/// The usage of one response as the Responses API reports it: `input_tokens` counts every
/// input token, cached (`input_tokens_details.cached_tokens`) and cache-written
/// (`input_tokens_details.cache_write_tokens`) ones included; `output_tokens` counts the
/// reasoning tokens (`output_tokens_details.reasoning_tokens`) too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Distinct counts for the `sequence`-th response (1-based), each kind at its own order of
    /// magnitude so a swapped field shows: cache reads on even responses, cache writes on all
    /// but every third from the first (so some responses have both, some one, some neither).
    pub fn for_response(sequence: u64) -> Usage {
        let uncached = 3 + sequence;
        let cached_tokens = if sequence.is_multiple_of(2) {
            1000 * sequence + 11
        } else {
            0
        };
        let cache_write_tokens = if sequence % 3 == 1 {
            0
        } else {
            200 * sequence + 13
        };
        Usage {
            input_tokens: uncached + cached_tokens + cache_write_tokens,
            cached_tokens,
            cache_write_tokens,
            output_tokens: 50 * sequence + 7,
            reasoning_tokens: 5 * sequence + 1,
        }
    }

    /// `total_tokens`: input plus output.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another response's counts.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    /// The `usage` object of `response.completed`.
    fn wire(&self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.total_tokens(),
        })
    }
}

/// What one scripted response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// One assistant message: ends the turn.
    Text(String),
    /// One call of a function tool the request offers (Codex runs it and asks again within the
    /// same turn). When the request does not offer it, the reply is a message saying so.
    Call { name: String, arguments: Value },
}

/// One response the stand-in issued.
#[derive(Debug, Clone)]
pub struct Issued {
    pub sequence: u64,
    /// `response.id`, which Codex stores as `response_id`.
    pub response_id: String,
    pub model: String,
    /// `client_metadata.session_id` of the request (Codex's thread id).
    pub session_id: Option<String>,
    /// `client_metadata.turn_id` of the request.
    pub turn_id: Option<String>,
    /// The function this response called, if it called one.
    pub called: Option<String>,
    pub usage: Usage,
}

/// The replies, consumed in order, one per `POST /v1/responses`; an exhausted script answers
/// `Done.`.
pub type Script = crate::standin::Script<Reply>;

/// The stand-in's ledger as its handlers share it.
type Ledger = Shared<VecDeque<Reply>, Issued, SeenRequest>;

impl crate::standin::Ledger<VecDeque<Reply>, Issued, SeenRequest> {
    /// Records the request and the response it gets: the next scripted reply (a call of a tool
    /// the request does not offer becomes a message saying so) and the next usage.
    fn issue(&mut self, request: &Value, path: &str) -> (Issued, Reply) {
        self.requests.push(SeenRequest {
            method: "POST".to_string(),
            path: path.to_string(),
            streamed: true,
        });
        let reply = match self.replies.pop_front() {
            Some(Reply::Call { name, .. }) if !offers_function(request, &name) => {
                Reply::Text(format!("The tool {name} was not offered."))
            }
            Some(reply) => reply,
            None => Reply::Text("Done.".to_string()),
        };
        let sequence = self.next_sequence();
        let metadata = |key: &str| request["client_metadata"][key].as_str().map(str::to_string);
        let issued = Issued {
            sequence,
            response_id: format!("resp_standin{sequence:04}"),
            model: request["model"].as_str().unwrap_or("unknown").to_string(),
            session_id: metadata("session_id"),
            turn_id: metadata("turn_id"),
            called: match &reply {
                Reply::Call { name, .. } => Some(name.clone()),
                Reply::Text(_) => None,
            },
            usage: Usage::for_response(sequence),
        };
        self.issued.push(issued.clone());
        (issued, reply)
    }
}

/// A running stand-in, stopped on drop; its base URL is the provider's `base_url` as Codex
/// takes it: `http://127.0.0.1:PORT/v1`.
pub type ResponsesStandIn = StandIn<VecDeque<Reply>, Issued, SeenRequest>;

impl ResponsesStandIn {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> ResponsesStandIn {
        let routes = Router::new()
            .route("/v1/responses", post(responses))
            .fallback(other);
        StandIn::serve(script.replies.into(), routes, "/v1").await
    }
}

async fn responses(State(ledger): State<Ledger>, uri: Uri, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        record(&ledger, &Method::POST, &uri, false);
        return api_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "body is not JSON",
        );
    };
    if request["stream"] != true {
        record(&ledger, &Method::POST, &uri, false);
        return api_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the stand-in only streams",
        );
    }
    let (issued, reply) = ledger.lock().expect("ledger").issue(&request, uri.path());
    event_stream(sse_body(&issued, &reply))
}

fn offers_function(request: &Value, name: &str) -> bool {
    request["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|tool| tool["type"] == "function" && tool["name"] == name)
    })
}

/// The event sequence of one streamed response with one output item.
fn sse_body(issued: &Issued, reply: &Reply) -> String {
    let sequence = issued.sequence;
    let response = |status: &str, output: Vec<Value>| {
        json!({
            "id": issued.response_id,
            "object": "response",
            "status": status,
            "model": issued.model,
            "output": output,
        })
    };
    let (added, deltas, done) = match reply {
        Reply::Text(text) => {
            let id = format!("msg_standin{sequence:04}");
            (
                json!({"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}),
                vec![json!({
                    "type": "response.output_text.delta",
                    "item_id": id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                })],
                json!({
                    "type": "message",
                    "id": id,
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }),
            )
        }
        Reply::Call { name, arguments } => {
            let id = format!("fc_standin{sequence:04}");
            let call_id = format!("call_standin{sequence:04}");
            let arguments = arguments.to_string();
            (
                json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}),
                vec![json!({
                    "type": "response.function_call_arguments.delta",
                    "item_id": id,
                    "output_index": 0,
                    "delta": arguments,
                })],
                json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"}),
            )
        }
    };
    let mut completed = response("completed", vec![done.clone()]);
    completed["usage"] = issued.usage.wire();
    let mut events = vec![
        json!({"type": "response.created", "response": response("in_progress", vec![])}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
    ];
    events.extend(deltas);
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": done}));
    events.push(json!({"type": "response.completed", "response": completed}));
    named_events(&events)
}

/// Anything but a streamed `POST /v1/responses` gets the API's not-found shape, recorded so a
/// test can see it.
async fn other(State(ledger): State<Ledger>, method: Method, uri: Uri) -> Response {
    record(&ledger, &method, &uri, false);
    api_error(
        StatusCode::NOT_FOUND,
        "not_found_error",
        "not served by the stand-in",
    )
}

fn api_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"type": kind, "message": message}})),
    )
        .into_response()
}
