//! An HTTP proxy that records every request it forwards: a test sees each call a client
//! really sent, including repeats the server answers idempotently (a replayed heartbeat reads
//! "superseded", a repeated close "already closed", so the server's state cannot show them).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::Response;
use tokio::net::TcpListener;

/// Largest request or response body forwarded.
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// One request as the proxy received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Path and query.
    pub path: String,
    pub body: String,
    /// Its `Idempotency-Key` header, when it had one.
    pub key: Option<String>,
}

/// Handle to a running proxy.
#[derive(Debug, Clone)]
pub struct RecordingProxy {
    pub url: String,
    seen: Arc<Mutex<Vec<Recorded>>>,
    lose: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    seen: Arc<Mutex<Vec<Recorded>>>,
    /// Answers still to lose: the request reaches the server, its answer is replaced by a 503.
    lose: Arc<AtomicUsize>,
}

impl RecordingProxy {
    /// Starts a proxy forwarding to `upstream` (e.g. `http://127.0.0.1:8080`).
    pub async fn start(upstream: &str) -> RecordingProxy {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let lose = Arc::new(AtomicUsize::new(0));
        let state = ProxyState {
            upstream: upstream.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            seen: seen.clone(),
            lose: lose.clone(),
        };
        let app = Router::new().fallback(forward).with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let address: SocketAddr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        RecordingProxy {
            url: format!("http://{address}"),
            seen,
            lose,
        }
    }

    /// The next `count` answers are lost: each request is forwarded and the server's answer
    /// (a committed write, say) replaced by `503` with `Retry-After: 0`.
    pub fn lose_answers(&self, count: usize) {
        self.lose.store(count, Ordering::SeqCst);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().expect("proxy log").clone()
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        self.seen.lock().expect("proxy log").len()
    }
}

async fn forward(State(state): State<ProxyState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, BODY_LIMIT).await else {
        return status_only(StatusCode::PAYLOAD_TOO_LARGE);
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|value| value.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    // Recorded on arrival: a request counts as sent even when its sender dies before the answer.
    state.seen.lock().expect("proxy log").push(Recorded {
        path: path.clone(),
        body: String::from_utf8_lossy(&bytes).into_owned(),
        key: parts
            .headers
            .get("idempotency-key")
            .and_then(|value| value.to_str().ok())
            .map(str::to_string),
    });
    let mut outgoing = state
        .http
        .request(parts.method, format!("{}{path}", state.upstream))
        .body(bytes.to_vec());
    for (name, value) in &parts.headers {
        if !skipped(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    let Ok(answer) = outgoing.send().await else {
        return status_only(StatusCode::BAD_GATEWAY);
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let Ok(body) = answer.bytes().await else {
        return status_only(StatusCode::BAD_GATEWAY);
    };
    let lost = state
        .lose
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(1)
        })
        .is_ok();
    if lost {
        let mut response = status_only(StatusCode::SERVICE_UNAVAILABLE);
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("0"));
        return response;
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if !skipped(name) {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
}

/// Hop-by-hop and length headers: the proxy's own transport sets them.
fn skipped(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "content-length" | "connection" | "transfer-encoding" | "keep-alive"
    )
}

fn status_only(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}
