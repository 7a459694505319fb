//! A stand-in for an OpenAI-compatible chat-completions endpoint, for closer tests run with
//! `BATON_CLOSER__JUDGE=openai`: it answers every request with all the briefed ids it was sent
//! (so each pass resolves its briefed commitments), each quoting the session's last message
//! verbatim as its evidence (or, without one, the first written memory), after an optional
//! delay, and can be held shut until a test releases it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Handle to a running fake judge.
#[derive(Debug, Clone)]
pub struct FakeJudge {
    pub url: String,
    requests: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    open: Arc<watch::Sender<bool>>,
}

#[derive(Clone)]
struct JudgeState {
    delay: Duration,
    requests: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    open: watch::Receiver<bool>,
}

/// Counts one request as in flight until its handler ends: answered, or dropped because its
/// caller went away (a killed closer's connection closes and the server cancels the handler).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(counter: &Arc<AtomicUsize>) -> InFlight {
        counter.fetch_add(1, Ordering::SeqCst);
        InFlight(counter.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl FakeJudge {
    /// Starts a judge that answers after `delay`; `held` keeps it from answering until
    /// [`FakeJudge::release`].
    pub async fn start(delay: Duration, held: bool) -> FakeJudge {
        let (open, receiver) = watch::channel(!held);
        let requests = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let state = JudgeState {
            delay,
            requests: requests.clone(),
            in_flight: in_flight.clone(),
            open: receiver,
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake judge");
        let address: SocketAddr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeJudge {
            url: format!("http://{address}/v1"),
            requests,
            in_flight,
            open: Arc::new(open),
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Requests received whose answer has not been produced yet: a caller killed now never
    /// sees their verdict.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Lets held requests (and all later ones) answer.
    pub fn release(&self) {
        let _ = self.open.send(true);
    }

    /// Waits until at least `count` requests arrived.
    pub async fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            if self.requests() >= count {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

async fn answer(State(state): State<JudgeState>, Json(body): Json<Value>) -> Json<Value> {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let in_flight = InFlight::enter(&state.in_flight);
    let mut open = state.open.clone();
    let _ = open.wait_for(|open| *open).await;
    tokio::time::sleep(state.delay).await;
    let data: Value = body["messages"][1]["content"]
        .as_str()
        .and_then(|content| serde_json::from_str(content).ok())
        .unwrap_or(Value::Null);
    let (quote, source) = match data["lastMessage"].as_str() {
        Some(text) => (text.trim().to_string(), "lastMessage".to_string()),
        None => (
            data["writtenMemories"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .trim()
                .to_string(),
            data["writtenMemories"][0]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
    };
    let entries: Vec<Value> = data["briefedCommitments"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| json!({"id": row["id"], "quote": quote, "source": source}))
                .collect()
        })
        .unwrap_or_default();
    let verdict = json!({"completed": entries}).to_string();
    // Out of flight before the answer leaves: from here on the caller may act on it.
    drop(in_flight);
    Json(json!({
        "choices": [{"message": {"role": "assistant", "content": verdict}}],
        "usage": {"total_tokens": 321},
    }))
}
