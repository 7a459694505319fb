//! Abusive callers (issue 9): floods of bad keys cannot lock a tenant out, slow clients are
//! cut off, early refusals close the connection, one client cannot hold every connection.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use baton_tests::Baton;

use crate::startup;

fn bad_key(prefix: &str) -> String {
    format!("btn_{prefix}_{}", "Z".repeat(40))
}

async fn last_used(admin: &sqlx::PgPool) -> Option<chrono::DateTime<chrono::Utc>> {
    sqlx::query_scalar("SELECT last_used_at FROM gateway.api_keys")
        .fetch_one(admin)
        .await
        .expect("key row")
}

#[tokio::test]
async fn bad_key_floods_spend_the_callers_bucket_never_the_tenants() {
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "5"),
        ("BATON_GATEWAY__RATE_LIMIT_FAILURES", "3"),
        ("BATON_GATEWAY__RATE_LIMIT_WINDOW", "60s"),
        ("BATON_GATEWAY__TRUSTED_PROXIES", "127.0.0.1/32, ::1"),
    ])
    .await;
    let (tenant, client) = baton.tenant_client("victim").await;
    let admin = baton.admin().await;
    let prefix = tenant
        .api_key
        .split('_')
        .nth(1)
        .expect("prefix")
        .to_string();

    // A wrong-secret flood with the tenant's own prefix: 401 until the caller's failure
    // bucket is empty, then 429, and nothing is recorded against the key.
    let flood = client.with_key(&bad_key(&prefix));
    let mut statuses = vec![];
    for _ in 0..20 {
        statuses.push(
            flood
                .post("/api/v1/agent-sessions/open", &startup("f"))
                .await
                .status,
        );
    }
    assert_eq!(&statuses[..3], &[401, 401, 401]);
    assert!(
        statuses[3..].iter().all(|status| *status == 429),
        "{statuses:?}"
    );
    assert_eq!(
        last_used(&admin).await,
        None,
        "an unverified secret writes nothing"
    );

    // The tenant's real key, from the very same address, still has its whole bucket.
    for _ in 0..5 {
        let answer = client
            .post("/api/v1/agent-sessions/open", &startup("real"))
            .await;
        assert_eq!(
            answer.status, 200,
            "the flood did not spend the tenant's bucket"
        );
    }
    let limited = client
        .post("/api/v1/agent-sessions/open", &startup("real"))
        .await;
    assert_eq!(
        (limited.status, limited.refusal()),
        (429, json!({"error": "rate_limited"}))
    );
    assert!(
        last_used(&admin).await.is_some(),
        "a verified key records its use"
    );

    // Random prefixes from another client (named by the trusted proxy's X-Forwarded-For):
    // limited the same way, by that client's own bucket, with no key row touched.
    let before = last_used(&admin).await;
    let http = reqwest::Client::new();
    let mut random_statuses = vec![];
    for index in 0..20 {
        let answer = http
            .post(format!("{}/api/v1/agent-sessions/open", baton.base_url))
            .header("x-api-key", bad_key(&format!("{index:0>12}")))
            .header("x-forwarded-for", "6.6.6.6, 198.51.100.7")
            .json(&startup("r"))
            .send()
            .await
            .expect("sent");
        random_statuses.push(answer.status().as_u16());
    }
    assert_eq!(&random_statuses[..3], &[401, 401, 401]);
    assert!(
        random_statuses[3..].iter().all(|status| *status == 429),
        "{random_statuses:?}"
    );
    assert_eq!(
        last_used(&admin).await,
        before,
        "random prefixes write nothing"
    );
    // A different forwarded client has a bucket of its own.
    let other = http
        .post(format!("{}/api/v1/agent-sessions/open", baton.base_url))
        .header("x-api-key", bad_key("zzzzzzzzzzzz"))
        .header("x-forwarded-for", "203.0.113.5")
        .json(&startup("r"))
        .send()
        .await
        .expect("sent");
    assert_eq!(other.status().as_u16(), 401);
}

fn address(baton: &Baton) -> String {
    baton.base_url.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection (or `limit` passes); returns what it sent.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&received).into(), true),
            Ok(Ok(read)) => received.extend_from_slice(&buffer[..read]),
            Err(_) => return (String::from_utf8_lossy(&received).into(), false),
        }
    }
}

#[tokio::test]
async fn slow_clients_are_cut_off_and_early_refusals_close_the_connection() {
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__HEADER_READ_TIMEOUT", "1s"),
        ("BATON_GATEWAY__BODY_TIMEOUT", "1s"),
        ("BATON_GATEWAY__MAX_CONNECTIONS_PER_CLIENT", "4"),
    ])
    .await;
    let tenant = baton.create_tenant("slow").await;

    // Slowloris: one header byte every 200 ms is cut off at the header timeout.
    let started = Instant::now();
    let mut drip = TcpStream::connect(address(&baton)).await.expect("connect");
    drip.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .expect("write");
    let mut cut_off = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if drip.write_all(b"a").await.is_err() {
            cut_off = true;
            break;
        }
        let mut probe = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(1), drip.read(&mut probe)).await
        {
            cut_off = true;
            break;
        }
    }
    assert!(cut_off, "the dripping client was never cut off");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "cut off near the 1 s header timeout"
    );

    // A body dripped past the body timeout is 408 and the connection is closed.
    let mut slow_body = TcpStream::connect(address(&baton)).await.expect("connect");
    let head = format!(
        "POST /api/v1/agent-sessions/open HTTP/1.1\r\nHost: x\r\nX-API-Key: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{",
        tenant.api_key
    );
    slow_body.write_all(head.as_bytes()).await.expect("write");
    let (answer, closed) = read_to_close(&mut slow_body, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(closed, "the connection was closed");

    // An early 401 on a POST whose body was never read says `Connection: close` and closes.
    let mut refused = TcpStream::connect(address(&baton)).await.expect("connect");
    refused
        .write_all(
            b"POST /api/v1/agent-sessions/open HTTP/1.1\r\nHost: x\r\n\
              Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        )
        .await
        .expect("write");
    let (answer, closed) = read_to_close(&mut refused, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(closed, "the connection was closed after the 401");
    // And through a pooling client: the request after a 401 on the same client succeeds.
    let client = baton.client(&tenant);
    let anonymous_on_same_pool = client.with_key("btn_nope");
    assert_eq!(
        anonymous_on_same_pool
            .post("/api/v1/agent-sessions/open", &startup("k"))
            .await
            .status,
        401
    );
    assert_eq!(
        client
            .post("/api/v1/agent-sessions/open", &startup("k"))
            .await
            .status,
        200
    );

    // Connections per client are capped: with four held open, the fifth is refused at once.
    let mut held = vec![];
    for _ in 0..4 {
        held.push(TcpStream::connect(address(&baton)).await.expect("connect"));
    }
    let mut fifth = TcpStream::connect(address(&baton)).await.expect("connect");
    let (answer, closed) = read_to_close(&mut fifth, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(
        answer.ends_with(
            r#"{"error":"rate_limited","detail":"too many open connections from this client"}"#
        ),
        "{answer}"
    );
    assert!(closed);
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        client
            .get("/api/v1/agent-sessions/00000000-0000-0000-0000-000000000000")
            .await
            .status,
        400
    );
}

/// An oversized body is refused in a way its client can read: a client that waits for
/// `100 Continue` is answered 413 before it sends a byte of the body, and one that sends its
/// whole body at once reads the 413 after it. The server reads and discards the rest of that
/// body before it closes: closed with input unread, the connection would be reset while the
/// client is still writing, and the client would see a failed write, never the answer.
#[tokio::test]
async fn an_oversized_body_is_refused_in_a_way_its_client_can_read() {
    const LIMIT: usize = 4 << 20;
    let baton = Baton::start_with(&[("BATON_GATEWAY__BODY_LIMIT", &LIMIT.to_string())]).await;
    let tenant = baton.create_tenant("oversized").await;
    let head = |length: usize, expect: &str| {
        format!(
            "POST /api/v1/agent-sessions/heartbeat HTTP/1.1\r\nHost: x\r\nX-API-Key: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {length}\r\n{expect}\r\n",
            tenant.api_key
        )
    };
    let mut waiting = TcpStream::connect(address(&baton)).await.expect("connect");
    waiting
        .write_all(head(LIMIT + 1, "Expect: 100-continue\r\n").as_bytes())
        .await
        .expect("write");
    let (answer, closed) = read_to_close(&mut waiting, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(!answer.contains(" 100 "), "no 100 Continue: {answer}");
    assert!(closed, "the connection was closed");
    // Twice the limit, sent whole, more than the connection buffers: each write completes and
    // each client reads its 413.
    for attempt in 0..3 {
        let length = 2 * LIMIT;
        let mut request = head(length, "").into_bytes();
        request.resize(request.len() + length, b'a');
        let mut eager = TcpStream::connect(address(&baton)).await.expect("connect");
        eager
            .write_all(&request)
            .await
            .unwrap_or_else(|error| panic!("attempt {attempt}: the body was cut off: {error}"));
        let (answer, closed) = read_to_close(&mut eager, Duration::from_secs(5)).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "attempt {attempt}: {answer}"
        );
        assert!(closed, "attempt {attempt}: the connection was closed");
    }
}
