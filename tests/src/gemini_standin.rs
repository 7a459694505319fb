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
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Gemini CLI sends whole conversations and tool declarations; bounded all the same.
const BODY_LIMIT: usize = 32 * 1024 * 1024;

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

/// What one scripted response says.
#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// `reply`, once the file `gate` exists: the client waits mid-turn until the test lets it
    /// go (or kills it).
    After {
        gate: PathBuf,
        reply: Box<Reply>,
    },
}

/// The replies, consumed in order, one per streamed call; an exhausted script answers `Done.`.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub replies: Vec<Reply>,
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

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// Whether it was a streamed generation (answered from the script, with usage).
    pub streamed: bool,
}

#[derive(Default)]
struct Ledger {
    replies: VecDeque<Reply>,
    issued: Vec<Issued>,
    requests: Vec<SeenRequest>,
}

/// A running stand-in, stopped on drop.
pub struct GeminiStandIn {
    /// `GOOGLE_GEMINI_BASE_URL`: `http://127.0.0.1:PORT`.
    pub base_url: String,
    ledger: Arc<Mutex<Ledger>>,
    server: JoinHandle<()>,
}

impl GeminiStandIn {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> GeminiStandIn {
        let ledger = Arc::new(Mutex::new(Ledger {
            replies: script.replies.into(),
            ..Ledger::default()
        }));
        let app = Router::new()
            .route("/v1beta/models/{call}", post(generate))
            .fallback(other)
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(ledger.clone());
        let (address, server) = crate::standin::serve(app).await;
        GeminiStandIn {
            base_url: format!("http://{address}"),
            ledger,
            server,
        }
    }

    /// Every response issued so far, in order.
    pub fn issued(&self) -> Vec<Issued> {
        self.ledger.lock().expect("ledger").issued.clone()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.ledger.lock().expect("ledger").requests.clone()
    }
}

impl Drop for GeminiStandIn {
    fn drop(&mut self) {
        self.server.abort();
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
    State(ledger): State<Arc<Mutex<Ledger>>>,
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
    let (issued, mut reply) = {
        let mut ledger = ledger.lock().expect("ledger");
        let sequence = ledger.issued.len() as u64 + 1;
        let issued = Issued {
            sequence,
            response_id: format!("standin-response-{sequence:04}"),
            model: model.to_string(),
            usage: Usage::for_response(sequence),
            user_text: last_user_text(&request),
        };
        ledger.issued.push(issued.clone());
        let reply = ledger
            .replies
            .pop_front()
            .unwrap_or_else(|| Reply::Text("Done.".to_string()));
        (issued, reply)
    };
    while let Reply::After { gate, reply: then } = reply {
        crate::standin::until_released(&gate).await;
        reply = *then;
    }
    let Reply::Text(text) = reply else {
        unreachable!("gates were unwrapped above")
    };
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
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(format!("data: {chunk}\r\n\r\n")),
    )
        .into_response()
}

async fn other(State(ledger): State<Arc<Mutex<Ledger>>>, method: Method, uri: Uri) -> Response {
    record(&ledger, &method, &uri, false);
    api_error(StatusCode::NOT_FOUND, "not served by the stand-in")
}

fn record(ledger: &Mutex<Ledger>, method: &Method, uri: &Uri, streamed: bool) {
    ledger.lock().expect("ledger").requests.push(SeenRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        streamed,
    });
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
