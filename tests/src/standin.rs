//! What every model-API stand-in does the same way: serve its router on a free loopback port
//! until dropped, keep a ledger of the replies still to give, the responses issued and the
//! requests received, hold a scripted answer until the test lets it go, and write SSE.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Model clients send whole conversations and tool definitions; bounded all the same.
const BODY_LIMIT: usize = 32 * 1024 * 1024;

/// What a stand-in keeps: the scripted `replies` still to give, the responses it issued and
/// the requests it received, in order.
#[derive(Default)]
pub struct Ledger<R, I, S> {
    pub replies: R,
    pub issued: Vec<I>,
    pub requests: Vec<S>,
}

/// A stand-in's ledger as its handlers share it.
pub type Shared<R, I, S> = Arc<Mutex<Ledger<R, I, S>>>;

impl<R, I, S> Ledger<R, I, S> {
    /// The 1-based sequence number of the next response.
    pub fn next_sequence(&self) -> u64 {
        self.issued.len() as u64 + 1
    }
}

/// A running stand-in, stopped on drop.
pub struct StandIn<R, I, S> {
    /// The base URL the client is pointed at: `http://127.0.0.1:PORT` and the API's prefix.
    pub base_url: String,
    ledger: Shared<R, I, S>,
    server: JoinHandle<()>,
}

impl<R, I, S> StandIn<R, I, S>
where
    R: Send + 'static,
    I: Clone + Send + 'static,
    S: Clone + Send + 'static,
{
    /// Serves `routes` over a ledger holding `replies` on 127.0.0.1 at a free port, request
    /// bodies bounded; the base URL is the address followed by `prefix`.
    pub async fn serve(replies: R, routes: Router<Shared<R, I, S>>, prefix: &str) -> Self {
        let ledger = Arc::new(Mutex::new(Ledger {
            replies,
            issued: Vec::new(),
            requests: Vec::new(),
        }));
        let app = routes
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(ledger.clone());
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a stand-in");
        let address = listener.local_addr().expect("address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        StandIn {
            base_url: format!("http://{address}{prefix}"),
            ledger,
            server,
        }
    }

    /// Every response issued so far, in order.
    pub fn issued(&self) -> Vec<I> {
        self.ledger.lock().expect("ledger").issued.clone()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<S> {
        self.ledger.lock().expect("ledger").requests.clone()
    }
}

impl<R, I, S: std::fmt::Debug> StandIn<R, I, S> {
    /// Waits, two minutes at most, until `count` responses were issued to `client`.
    pub async fn until_issued(&self, count: usize, client: &str) {
        let started = std::time::Instant::now();
        while self.ledger.lock().expect("ledger").issued.len() < count {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{client} never sent model request {count}: {:?}",
                self.ledger.lock().expect("ledger").requests
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl<R, I, S> Drop for StandIn<R, I, S> {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One request a stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// Whether it was a streamed model call (answered from the script, with usage).
    pub streamed: bool,
}

/// Records a request in the ledger.
pub fn record<R, I>(
    ledger: &Mutex<Ledger<R, I, SeenRequest>>,
    method: &Method,
    uri: &Uri,
    streamed: bool,
) {
    ledger.lock().expect("ledger").requests.push(SeenRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        streamed,
    });
}

/// What one scripted text response says.
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

impl Reply {
    /// The text, once every gate in front of it is released.
    pub async fn released(self) -> String {
        let mut reply = self;
        loop {
            match reply {
                Reply::Text(text) => return text,
                Reply::After { gate, reply: then } => {
                    until_released(&gate).await;
                    reply = *then;
                }
            }
        }
    }
}

/// The replies, consumed in order, one per streamed call; an exhausted script answers `Done.`.
#[derive(Debug, Clone)]
pub struct Script<R = Reply> {
    pub replies: Vec<R>,
}

impl<R> Default for Script<R> {
    fn default() -> Self {
        Script {
            replies: Vec::new(),
        }
    }
}

impl<I: Clone, S> Ledger<VecDeque<Reply>, I, S> {
    /// Records the response `issued` makes of the next sequence number and takes the next
    /// scripted reply (`Done.` once the script is out).
    pub fn issue(&mut self, issued: impl FnOnce(u64) -> I) -> (I, Reply) {
        let issued = issued(self.next_sequence());
        self.issued.push(issued.clone());
        let reply = self
            .replies
            .pop_front()
            .unwrap_or_else(|| Reply::Text("Done.".to_string()));
        (issued, reply)
    }
}

/// Waits until the file `gate` exists (the test releases a held answer by creating it).
pub async fn until_released(gate: &Path) {
    while !gate.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A `text/event-stream` response carrying `body`.
pub fn event_stream(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(body),
    )
        .into_response()
}

/// SSE events named by their `type`: `event: TYPE` and `data: JSON` each.
pub fn named_events(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect()
}
