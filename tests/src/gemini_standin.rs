//! A stand-in for the Gemini API, for running the real Gemini CLI: it answers
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (SSE chunks of
//! `GenerateContentResponse`) from a script, gives every response its own known
//! `usageMetadata`, and records what it issued and the last user text of each request, so a
//! test can compare what Baton reports with what was actually issued.
//!
//! One response is one SSE chunk holding the whole text and the usage (Gemini CLI 0.61.0 puts
//! a multi-chunk answer into AfterAgent's `prompt_response` twice over; the transcript is
//! right either way). No SSE comment lines: the CLI's stream reader retries on them (HOOKS.md
//! 4.10). Anything else the CLI asks (`generateContent`, `countTokens`, ...) is recorded and
//! refused with the API's error shape, so a test sees any call it did not plan for.

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

pub use crate::standin::{Reply, Script, SeenRequest};
use crate::standin::{Shared, StandIn, event_stream, record};

/// `usageMetadata` of one response as the Gemini API reports it: `prompt` counts every prompt
/// token, the `cached` ones included; `thoughts` and `tool_prompt` are counted apart from
/// `candidates` and `prompt`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub candidates: u64,
    pub thoughts: u64,
    pub tool_prompt: u64,
}

impl Usage {
    /// Distinct counts for the `sequence`-th response (1-based), each kind at its own order
    /// of magnitude so a swapped field shows; cached tokens on even responses, tool-use prompt
    /// tokens on every third.
    pub fn for_response(sequence: u64) -> Usage {
        let cached = if sequence.is_multiple_of(2) {
            1000 * sequence + 11
        } else {
            0
        };
        Usage {
            prompt: 3 + sequence + cached,
            cached,
            candidates: 50 * sequence + 7,
            thoughts: 5 * sequence + 1,
            tool_prompt: if sequence.is_multiple_of(3) {
                200 * sequence + 13
            } else {
                0
            },
        }
    }

    /// `totalTokenCount`.
    pub fn total(&self) -> u64 {
        self.prompt + self.candidates + self.thoughts + self.tool_prompt
    }

    fn wire(&self) -> Value {
        json!({
            "promptTokenCount": self.prompt,
            "cachedContentTokenCount": self.cached,
            "candidatesTokenCount": self.candidates,
            "thoughtsTokenCount": self.thoughts,
            "toolUsePromptTokenCount": self.tool_prompt,
            "totalTokenCount": self.total(),
        })
    }
}

/// One response the stand-in issued (recorded when its request arrives).
#[derive(Debug, Clone)]
pub struct Issued {
    pub sequence: u64,
    pub response_id: String,
    /// The model named in the path.
    pub model: String,
    pub usage: Usage,
    /// The text of the request's last user turn (to see what a continuation sent).
    pub user_text: String,
}

/// The stand-in's ledger as its handlers share it.
type Ledger = Shared<VecDeque<Reply>, Issued, SeenRequest>;

/// A running stand-in, stopped on drop; its base URL is `GOOGLE_GEMINI_BASE_URL`:
/// `http://127.0.0.1:PORT`.
pub type GeminiStandIn = StandIn<VecDeque<Reply>, Issued, SeenRequest>;

impl GeminiStandIn {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> GeminiStandIn {
        let routes = Router::new()
            .route("/v1beta/models/{call}", post(generate))
            .fallback(other);
        StandIn::serve(script.replies.into(), routes, "").await
    }
}

/// The text parts of the request's last `user` content.
fn last_user_text(request: &Value) -> String {
    request["contents"]
        .as_array()
        .and_then(|contents| {
            contents
                .iter()
                .rev()
                .find(|content| content["role"] == "user")
        })
        .and_then(|content| content["parts"].as_array())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

async fn generate(
    State(ledger): State<Ledger>,
    Path(call): Path<String>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let streamed = call.ends_with(":streamGenerateContent");
    let request = serde_json::from_slice::<Value>(&body);
    let (Some(model), true, Ok(request)) = (call.split(':').next(), streamed, request) else {
        record(&ledger, &method, &uri, false);
        return api_error(StatusCode::NOT_FOUND, "not served by the stand-in");
    };
    record(&ledger, &method, &uri, true);
    // Issued (sequence, usage, recorded) on arrival, before any gate: a test waiting for the
    // request sees it while the client waits for the answer.
    let (issued, reply) = ledger.lock().expect("ledger").issue(|sequence| Issued {
        sequence,
        response_id: format!("standin-response-{sequence:04}"),
        model: model.to_string(),
        usage: Usage::for_response(sequence),
        user_text: last_user_text(&request),
    });
    let text = reply.released().await;
    let chunk = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": issued.usage.wire(),
        "modelVersion": issued.model,
        "responseId": issued.response_id,
    });
    event_stream(format!("data: {chunk}\r\n\r\n"))
}

async fn other(State(ledger): State<Ledger>, method: Method, uri: Uri) -> Response {
    record(&ledger, &method, &uri, false);
    api_error(StatusCode::NOT_FOUND, "not served by the stand-in")
}

fn api_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(
            json!({"error": {"code": status.as_u16(), "message": message, "status": "NOT_FOUND"}}),
        ),
    )
        .into_response()
}
