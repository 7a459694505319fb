//! Alert delivery end to end with the real binaries and a local webhook receiver: a budget
//! crossed by an upload sends exactly one signed webhook per threshold (the signature verifies
//! with the secret answered once), none for a re-upload of the same facts, one per threshold
//! under 8 concurrent uploaders; a receiver answering 500 gets the delivery retried until it
//! answers 200, every attempt in the delivery log; in hosted mode (the default) an `http` URL
//! is refused and a host resolving to a private address is never connected to; another tenant
//! sees none of it. Prints how long a crossing takes to reach the receiver.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use baton_tests::{Baton, Client};

use crate::budgets::{batch, row_cost, upload};

const NOW: &str = "2026-03-15T12:00:00.000Z";
const WAIT: Duration = Duration::from_secs(30);

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: String,
    at: Instant,
}

/// A local webhook receiver: records every request and answers the scripted statuses, then 200.
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    receiver.got.lock().expect("lock").push(Received {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    });
    let status = receiver
        .script
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or(200);
    StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
}

impl Receiver {
    async fn start() -> (Receiver, SocketAddr) {
        let receiver = Receiver::default();
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (receiver, address)
    }

    fn answer_next(&self, statuses: &[u16]) {
        self.script.lock().expect("lock").extend(statuses);
    }

    fn count(&self) -> usize {
        self.got.lock().expect("lock").len()
    }

    /// Waits for the request numbered `index` (0-based).
    async fn nth(&self, index: usize) -> Received {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(received) = self.got.lock().expect("lock").get(index).cloned() {
                return received;
            }
            assert!(Instant::now() < deadline, "request {index} never came");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The receiver's check, as the README shows it in shell.
fn verifies(received: &Received, secret: &str) -> bool {
    let header = |name: &str| {
        received
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let timestamp = header("x-baton-timestamp");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{timestamp}.{}", received.body).as_bytes());
    let expected = format!("v1={}", hex::encode(mac.finalize().into_bytes()));
    header("x-baton-signature") == expected
}

fn threshold(received: &Received) -> u64 {
    let body: Value = serde_json::from_str(&received.body).expect("json body");
    body["data"]["thresholdPercent"]
        .as_u64()
        .or_else(|| body["thresholdPercent"].as_u64())
        .unwrap_or_else(|| panic!("no threshold in {body}"))
}

async fn webhook(client: &Client, url: &str) -> String {
    let answer = client
        .post(
            "/api/v1/webhooks",
            &json!({"url": url, "events": ["budget.crossed"]}),
        )
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    let secret = answer.body["secret"].as_str().expect("secret").to_string();
    assert!(secret.starts_with("whsec_"));
    let listed = client.get("/api/v1/webhooks").await;
    assert!(
        !listed.body.to_string().contains(&secret),
        "never listed again"
    );
    secret
}

async fn budget(client: &Client, limit: f64) {
    let answer = client
        .post(
            "/api/v1/budgets",
            &json!({"scope": "tenant", "period": "month", "limitUsd": limit,
                "thresholds": [50, 80, 100, 1000]}),
        )
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_crossing_reaches_the_receiver_once_signed_and_retried_until_it_succeeds() {
    let baton = Baton::start_with(&[
        ("BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES", "true"),
        ("BATON_NOTIFY__BACKOFF_BASE", "50ms"),
        ("BATON_NOTIFY__BACKOFF_MAX", "200ms"),
        ("BATON_NOTIFY__POLL_INTERVAL", "50ms"),
    ])
    .await;
    let (receiver, address) = Receiver::start().await;
    let url = format!("http://{address}/hook");
    let cost = row_cost(&baton).await;
    let limit = (cost * 10.0 * 1e6).round() / 1e6;
    let tenant = baton.create_tenant("alerts").await;
    let client = baton.client(&tenant).at(NOW);
    let secret = webhook(&client, &url).await;
    budget(&client, limit).await;

    let sent = Instant::now();
    upload(&client, &batch("s-1", "a", 0..5)).await;
    let first = receiver.nth(0).await;
    println!(
        "budget crossing → receiver: {} ms after the upload answered",
        first.at.duration_since(sent).as_millis()
    );
    assert!(
        verifies(&first, &secret),
        "the signature verifies: {:?}",
        first.headers
    );
    assert_eq!(threshold(&first), 50);
    assert_eq!(first.headers["x-baton-event"], "budget.crossed");
    // The same facts again, then the next threshold: the next request is 80, not a second 50.
    upload(&client, &batch("s-1", "a", 0..5)).await;
    upload(&client, &batch("s-1", "a", 5..8)).await;
    assert_eq!(threshold(&receiver.nth(1).await), 80);

    // 500 twice, then 200: the same delivery three times, three attempts in the log.
    receiver.answer_next(&[500, 500]);
    upload(&client, &batch("s-1", "a", 8..10)).await;
    let tries = [
        receiver.nth(2).await,
        receiver.nth(3).await,
        receiver.nth(4).await,
    ];
    let id = tries[0].headers["x-baton-delivery"].clone();
    for attempt in &tries {
        assert_eq!(threshold(attempt), 100);
        assert_eq!(
            attempt.headers["x-baton-delivery"], id,
            "one delivery, retried"
        );
        assert!(verifies(attempt, &secret));
    }
    let deadline = Instant::now() + WAIT;
    let log = loop {
        let log = client.get("/api/v1/webhooks/deliveries").await;
        assert_eq!(log.status, 200, "{:?}", log.body);
        let delivered = log.body["deliveries"]
            .as_array()
            .expect("deliveries")
            .iter()
            .find(|delivery| delivery["id"] == id.to_str().expect("id"))
            .cloned();
        if let Some(delivery) = delivered
            && delivery["state"] == "delivered"
        {
            break delivery;
        }
        assert!(
            Instant::now() < deadline,
            "never marked delivered: {}",
            log.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let statuses: Vec<Value> = log["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|attempt| attempt["statusCode"].clone())
        .collect();
    assert_eq!(statuses, [json!(500), json!(500), json!(200)]);

    // Eight uploaders at once in another tenant: one request per threshold, the sentinel last.
    let busy = baton.create_tenant("alerts-busy").await;
    let busy_client = baton.client(&busy).at(NOW);
    let busy_secret = webhook(&busy_client, &url).await;
    budget(&busy_client, limit).await;
    let before = receiver.count();
    let uploads = (0..8).map(|n| {
        let client = busy_client.clone();
        async move { upload(&client, &batch(&format!("c-{n}"), &format!("c{n}"), 0..2)).await }
    });
    futures::future::join_all(uploads).await;
    upload(&busy_client, &batch("c-big", "big", 0..90)).await;
    let mut seen = Vec::new();
    let mut index = before;
    loop {
        let received = receiver.nth(index).await;
        index += 1;
        assert!(
            verifies(&received, &busy_secret),
            "the busy tenant's own secret"
        );
        seen.push(threshold(&received));
        if seen.last() == Some(&1000) {
            break;
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, [50, 80, 100, 1000], "each exactly once");

    // Another tenant sees neither webhooks nor deliveries.
    let stranger = baton.client(&baton.create_tenant("alerts-other").await);
    assert_eq!(
        stranger.get("/api/v1/webhooks").await.body["webhooks"],
        json!([])
    );
    assert_eq!(
        stranger.get("/api/v1/webhooks/deliveries").await.body["deliveries"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosted_mode_refuses_http_and_never_connects_to_a_private_address() {
    let baton = Baton::start_with(&[
        ("BATON_NOTIFY__BACKOFF_BASE", "50ms"),
        ("BATON_NOTIFY__MAX_ATTEMPTS", "2"),
        ("BATON_NOTIFY__POLL_INTERVAL", "50ms"),
    ])
    .await;
    let (receiver, address) = Receiver::start().await;
    let cost = row_cost(&baton).await;
    let tenant = baton.create_tenant("hosted").await;
    let client = baton.client(&tenant).at(NOW);
    for url in [
        format!("http://{address}/hook"),
        format!("https://127.0.0.1:{}/hook", address.port()),
    ] {
        let refused = client
            .post(
                "/api/v1/webhooks",
                &json!({"url": url, "events": ["budget.crossed"]}),
            )
            .await;
        assert_eq!(refused.status, 400, "{url}: {:?}", refused.body);
    }
    // A name that resolves to loopback is accepted at creation and refused at delivery.
    webhook(
        &client,
        &format!("https://localhost:{}/hook", address.port()),
    )
    .await;
    budget(&client, (cost * 10.0 * 1e6).round() / 1e6).await;
    upload(&client, &batch("s-1", "a", 0..5)).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let log = client.get("/api/v1/webhooks/deliveries").await;
        let errors: Vec<Value> = log.body["deliveries"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|delivery| delivery["attempts"].as_array().cloned().unwrap_or_default())
            .map(|attempt| attempt["error"].clone())
            .collect();
        if !errors.is_empty() {
            assert!(
                errors.iter().all(|error| error == "address_refused"),
                "{errors:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no attempt logged: {}", log.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        receiver.count(),
        0,
        "nothing ever reached the private address"
    );
}
