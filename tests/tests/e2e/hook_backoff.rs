//! Back-off against a real Baton behind a small proxy that says "not now" to the first call on
//! one path: a spooled close answered 429 with a `Retry-After` date is sent again, no sooner
//! than that date, by the detached drain SessionEnd starts — nobody drains by hand; a sidecar
//! whose pulse is refused the same way pulses again no sooner than the date, and keeps its
//! episode live.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::net::TcpListener;

use baton_tests::Baton;
use baton_tests::client_standin::{Launch, StandIn};
use baton_tests::hook::HookHome;

const CLOSE: &str = "/api/v1/agent-sessions/close";

#[derive(Clone)]
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    /// The path whose first POST is refused.
    refused: &'static str,
    /// When each call on that path arrived, and the instant the refusal told it to wait for.
    closes: Arc<Mutex<Vec<SystemTime>>>,
    retry_at: Arc<Mutex<Option<SystemTime>>>,
}

impl Proxy {
    /// Serves on a free port in front of `baton`; returns the proxy and its URL.
    async fn start(baton: &Baton, refused: &'static str) -> (Proxy, String) {
        let proxy = Proxy {
            upstream: baton.base_url.clone(),
            http: reqwest::Client::new(),
            refused,
            closes: Arc::default(),
            retry_at: Arc::default(),
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address: SocketAddr = listener.local_addr().expect("address");
        let app = Router::new().fallback(forward).with_state(proxy.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (proxy, format!("http://{address}"))
    }

    fn arrivals(&self) -> Vec<SystemTime> {
        self.closes.lock().expect("arrivals").clone()
    }

    fn retry_at(&self) -> SystemTime {
        self.retry_at
            .lock()
            .expect("retry")
            .expect("a date was named")
    }
}

/// An HTTP-date (IMF-fixdate) for `at`, and the whole second it names.
fn http_date(at: SystemTime) -> (String, SystemTime) {
    let seconds = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 1;
    let named = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
    let date = chrono::DateTime::<chrono::Utc>::from(named)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    (date, named)
}

async fn forward(
    State(proxy): State<Proxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::POST && uri.path() == proxy.refused {
        let now = SystemTime::now();
        let first = {
            let mut closes = proxy.closes.lock().expect("closes");
            closes.push(now);
            closes.len() == 1
        };
        if first {
            let (date, named) = http_date(now + Duration::from_secs(2));
            *proxy.retry_at.lock().expect("retry") = Some(named);
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", date)],
                "{\"error\":\"rate_limited\"}",
            )
                .into_response();
        }
    }
    let mut request = proxy
        .http
        .request(method, format!("{}{}", proxy.upstream, uri))
        .body(body);
    for name in ["x-api-key", "content-type"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value.as_bytes());
        }
    }
    let answer = request.send().await.expect("upstream");
    let status = StatusCode::from_u16(answer.status().as_u16()).expect("status");
    (status, answer.bytes().await.expect("body")).into_response()
}

#[tokio::test]
async fn a_close_refused_with_429_is_retried_no_sooner_than_its_retry_after_date() {
    let baton = Baton::start().await;
    let (tenant, client) = baton.tenant_client("backoff").await;
    let (proxy, url) = Proxy::start(&baton, CLOSE).await;
    let run_id = client
        .open(&json!({"agent": "codex", "sessionId": "limited", "source": "startup"}))
        .await;
    let home = HookHome::new(&url, &tenant.api_key);
    let end = json!({"session_id": "limited", "hook_event_name": "SessionEnd", "reason": "other",
        "model": "gpt-5.5"});
    let ended = home.run(&["codex", "session-end"], &end).await;
    assert_eq!((ended.code, ended.stdout.as_str()), (Some(0), ""));
    let observed = home.spooled()[0]["body"]["observedAt"].clone();

    let started = Instant::now();
    let row = loop {
        let row = client
            .get(&format!("/api/v1/agent-sessions/{run_id}"))
            .await
            .body;
        if row["closedAt"].is_string() {
            break row;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the close never arrived: {:?}",
            proxy.closes.lock().expect("closes")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let closes = proxy.closes.lock().expect("closes").clone();
    assert_eq!(closes.len(), 2, "refused once, then sent once more");
    let retry_at = proxy
        .retry_at
        .lock()
        .expect("retry")
        .expect("a date was named");
    assert!(
        closes[1] >= retry_at,
        "the retry came no sooner than Retry-After"
    );
    assert_eq!(
        row["closedAt"], observed,
        "closed when the end was observed"
    );
    assert!(home.spooled().is_empty());
    assert!(home.log_lines().is_empty(), "{:?}", home.log_lines());
}

#[tokio::test]
async fn a_sidecar_whose_pulse_gets_429_pulses_again_no_sooner_than_retry_after() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("pulse-backoff").await;
    let (proxy, url) = Proxy::start(&baton, "/api/v1/agent-sessions/pulse").await;
    let mut home = HookHome::new(&url, &tenant.api_key);
    home.set("BATON_HOOK_SIDECAR", "on");
    // Every 100 ms unless told otherwise: the refusal asks for about two seconds.
    home.set("BATON_HOOK_PULSE_INTERVAL_MS", "100");
    let mut standin = StandIn::spawn(&home, "codex", "codex-cli 0.171.0", Launch::Direct);
    let start = json!({"session_id": "pulsed", "hook_event_name": "SessionStart",
        "source": "startup", "model": "gpt-5.5"});
    let printed = standin.hook(&["codex", "session-start"], &start).await;
    let at = printed.find("sessionRunId = ").expect("run id") + 15;
    let run_id = printed[at..at + 36].to_string();
    let started = Instant::now();
    let read = loop {
        let read = client
            .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
            .await
            .body;
        if read["episodes"][0].is_object() {
            break read;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no pulse landed: {read}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(read["liveness"], "live");
    assert_eq!(read["episodes"][0]["endedAt"], serde_json::Value::Null);
    let pulses = proxy.arrivals();
    assert!(pulses.len() >= 2, "{pulses:?}");
    assert!(
        pulses[1] >= proxy.retry_at(),
        "the second pulse came no sooner than Retry-After"
    );
    standin.kill().await;
}
