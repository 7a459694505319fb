//! A stand-in for the OpenAI Chat Completions API, for running the real Copilot CLI in its
//! "bring your own key" mode (`COPILOT_PROVIDER_BASE_URL`): it answers
//! `POST /v1/chat/completions` (streamed as SSE `chat.completion.chunk`s, the usage on a last
//! chunk with no choices, then `[DONE]`) from a script, gives every response its own known
//! usage, and records what it issued and the last user message of each request.
//!
//! Copilot CLI 1.0.102 with a custom provider and `COPILOT_OFFLINE=true` makes no other call
//! (no `/models`, no GitHub). Anything else is recorded and refused with the API's error shape.

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

pub use crate::standin::{Reply, Script, SeenRequest};
use crate::standin::{Shared, StandIn, event_stream, record};

/// The `usage` of one response as Chat Completions reports it: `prompt_tokens` counts every
/// prompt token, the cached ones (`prompt_tokens_details.cached_tokens`) included;
/// `completion_tokens` counts the reasoning tokens too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    pub reasoning: u64,
}

impl Usage {
    /// Distinct counts for the `sequence`-th response (1-based), each kind at its own order of
    /// magnitude so a swapped field shows; cached tokens on even responses.
    pub fn for_response(sequence: u64) -> Usage {
        let cached = if sequence.is_multiple_of(2) {
            1000 * sequence + 11
        } else {
            0
        };
        Usage {
            prompt: 3 + sequence + cached,
            cached,
            completion: 50 * sequence + 7,
            reasoning: 5 * sequence + 1,
        }
    }

    fn wire(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "prompt_tokens_details": {"cached_tokens": self.cached},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning},
        })
    }
}

/// One response the stand-in issued (recorded when its request arrives).
#[derive(Debug, Clone)]
pub struct Issued {
    pub sequence: u64,
    pub completion_id: String,
    /// The request's `model`.
    pub model: String,
    pub usage: Usage,
    /// The text of the request's last user message (to see what a continuation sent).
    pub user_text: String,
    /// The text of every user message of the request, in order (to see injected context).
    pub all_user_text: String,
}

/// The stand-in's ledger as its handlers share it.
type Ledger = Shared<VecDeque<Reply>, Issued, SeenRequest>;

/// A running stand-in, stopped on drop; its base URL is the provider's:
/// `http://127.0.0.1:PORT/v1`.
pub type ChatStandIn = StandIn<VecDeque<Reply>, Issued, SeenRequest>;

impl ChatStandIn {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> ChatStandIn {
        let routes = Router::new()
            .route("/v1/chat/completions", post(complete))
            .fallback(other);
        StandIn::serve(script.replies.into(), routes, "/v1").await
    }
}

/// The texts of the request's `user` messages, in order.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|message| message["role"] == "user")
                .map(message_text)
                .collect()
        })
        .unwrap_or_default()
}

/// A message's text: a string, or its text parts.
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

async fn complete(State(ledger): State<Ledger>, method: Method, uri: Uri, body: Bytes) -> Response {
    let streamed = serde_json::from_slice::<Value>(&body)
        .ok()
        .filter(|request| request["stream"] == true);
    let Some(request) = streamed else {
        record(&ledger, &method, &uri, false);
        return api_error(StatusCode::BAD_REQUEST, "the stand-in only streams");
    };
    record(&ledger, &method, &uri, true);
    let (issued, reply) = ledger.lock().expect("ledger").issue(|sequence| Issued {
        sequence,
        completion_id: format!("chatcmpl-standin{sequence:04}"),
        model: request["model"].as_str().unwrap_or("unknown").to_string(),
        usage: Usage::for_response(sequence),
        user_text: user_texts(&request).pop().unwrap_or_default(),
        all_user_text: user_texts(&request).join("\n"),
    });
    let text = reply.released().await;
    let chunk = |choices: Value| {
        json!({"id": issued.completion_id, "object": "chat.completion.chunk",
            "created": 1_796_000_000, "model": issued.model, "choices": choices})
    };
    let mut usage_chunk = chunk(json!([]));
    usage_chunk["usage"] = issued.usage.wire();
    let events = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
        ),
        chunk(json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}])),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
        usage_chunk,
    ];
    let mut sse: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    sse.push_str("data: [DONE]\n\n");
    event_stream(sse)
}

async fn other(State(ledger): State<Ledger>, method: Method, uri: Uri) -> Response {
    record(&ledger, &method, &uri, false);
    api_error(StatusCode::NOT_FOUND, "not served by the stand-in")
}

fn api_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
    )
        .into_response()
}
