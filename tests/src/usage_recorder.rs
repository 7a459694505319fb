//! A stand-in for `POST /api/v1/usage/batches` until the usage service exists: records every
//! upload body, answers with a status a test chooses, and refuses (404 `not_found`) a batch
//! whose usage rows or edges name a session or agent that is neither in the batch nor accepted
//! earlier — the contract's reference rule, so a client that sends facts out of order fails.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// One upload as received.
#[derive(Debug, Clone)]
pub struct Upload {
    pub path: String,
    pub api_key: Option<String>,
    pub body: Value,
    pub raw: String,
}

#[derive(Default)]
struct Known {
    sessions: HashSet<String>,
    agents: HashSet<String>,
}

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Upload>>>,
    known: Arc<Mutex<Known>>,
    status: Arc<AtomicU16>,
    /// Paths of the calls forwarded upstream, in arrival order.
    forwarded: Arc<Mutex<Vec<String>>>,
    /// Where every other path goes (a running Baton), when set.
    upstream: Option<String>,
    http: reqwest::Client,
}

/// Handle to a running recorder.
#[derive(Clone)]
pub struct UsageRecorder {
    pub url: String,
    shared: Shared,
}

impl UsageRecorder {
    pub async fn start() -> UsageRecorder {
        UsageRecorder::serve(None).await
    }

    /// A recorder in front of `upstream`: uploads are recorded and answered here, every other
    /// call is forwarded (so a hook can talk to one URL for both).
    pub async fn in_front_of(upstream: &str) -> UsageRecorder {
        UsageRecorder::serve(Some(upstream.trim_end_matches('/').to_string())).await
    }

    async fn serve(upstream: Option<String>) -> UsageRecorder {
        let shared = Shared {
            seen: Arc::default(),
            known: Arc::default(),
            status: Arc::new(AtomicU16::new(200)),
            forwarded: Arc::default(),
            upstream,
            http: reqwest::Client::new(),
        };
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address: SocketAddr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        UsageRecorder {
            url: format!("http://{address}"),
            shared,
        }
    }

    /// Answers every later upload with `status` (200 = accept).
    pub fn answer_with(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    /// Every upload so far, in arrival order.
    pub fn uploads(&self) -> Vec<Upload> {
        self.shared.seen.lock().expect("log").clone()
    }

    /// How many calls to `path` were forwarded upstream so far (a sidecar's pulses, say).
    pub fn forwarded(&self, path: &str) -> usize {
        let forwarded = self.shared.forwarded.lock().expect("log");
        forwarded.iter().filter(|seen| *seen == path).count()
    }

    /// Forgets the recorded uploads (what was accepted stays known).
    pub fn clear(&self) {
        self.shared.seen.lock().expect("log").clear();
    }
}

fn session_key(fact: &Value) -> String {
    format!("{}/{}", fact["agent"], fact["sessionId"])
}

fn agent_key(fact: &Value, field: &str) -> String {
    format!("{}/{}", session_key(fact), fact[field])
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes: Bytes = to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    if let Some(upstream) = &shared.upstream
        && parts.uri.path() != "/api/v1/usage/batches"
    {
        let path = parts.uri.path().to_string();
        let answer = forward(&shared.http, upstream, &parts, bytes).await;
        shared.forwarded.lock().expect("log").push(path);
        return answer;
    }
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    shared.seen.lock().expect("log").push(Upload {
        path: parts.uri.path().to_string(),
        api_key: parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: body.clone(),
        raw,
    });
    let status = shared.status.load(Ordering::SeqCst);
    if status != 200 {
        let code = match status {
            400 => "invalid_request",
            404 => "not_found",
            429 => "rate_limited",
            _ => "service_unavailable",
        };
        return (
            StatusCode::from_u16(status).expect("status"),
            axum::Json(json!({"error": code})),
        )
            .into_response();
    }
    if parts.uri.path() != "/api/v1/usage/batches" || !body.is_object() {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "not_found"})),
        )
            .into_response();
    }
    let list = |name: &str| body[name].as_array().cloned().unwrap_or_default();
    let mut known = shared.known.lock().expect("known");
    let sessions: HashSet<String> = list("sessions").iter().map(session_key).collect();
    let agents: HashSet<String> = list("agents")
        .iter()
        .map(|a| agent_key(a, "agentId"))
        .collect();
    let session_ok = |fact: &Value| {
        let key = session_key(fact);
        sessions.contains(&key) || known.sessions.contains(&key)
    };
    let agent_ok = |fact: &Value, field: &str| {
        let key = agent_key(fact, field);
        agents.contains(&key) || known.agents.contains(&key)
    };
    let references_ok = list("agents").iter().all(session_ok)
        && list("usage")
            .iter()
            .all(|u| session_ok(u) && agent_ok(u, "agentId"))
        && list("edges")
            .iter()
            .all(|e| session_ok(e) && agent_ok(e, "childAgentId") && agent_ok(e, "parentAgentId"))
        && list("deliveries").iter().all(session_ok);
    if !references_ok {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "not_found"})),
        )
            .into_response();
    }
    known.sessions.extend(sessions);
    known.agents.extend(agents);
    axum::Json(json!({
        "sessions": list("sessions").len(),
        "agents": list("agents").len(),
        "usageInserted": list("usage").len(),
        "deliveriesInserted": list("deliveries").len(),
    }))
    .into_response()
}

async fn forward(
    http: &reqwest::Client,
    upstream: &str,
    parts: &axum::http::request::Parts,
    bytes: Bytes,
) -> Response {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = http.request(parts.method.clone(), format!("{upstream}{path}"));
    for name in ["x-api-key", "content-type", "authorization"] {
        if let Some(value) = parts.headers.get(name) {
            request = request.header(name, value);
        }
    }
    let Ok(answer) = request.body(bytes).send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let body = answer.bytes().await.unwrap_or_default();
    (status, [("content-type", "application/json")], body).into_response()
}
