//! The judge's HTTP client against real local servers: it always has its timeouts, and it
//! refuses an oversized body instead of reading it.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{MAX_RESPONSE_BYTES, OpenAiJudge};
use crate::judge::{Judge, JudgeError, JudgeInput};

/// A server that answers every connection with `response` (or never, when `None`).
async fn server(response: Option<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut request).await;
                match response {
                    Some(bytes) => {
                        let _ = socket.write_all(&bytes).await;
                    }
                    // Hold the connection open and say nothing.
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    format!("http://{address}")
}

fn judge(url: String, timeout: Duration) -> OpenAiJudge {
    OpenAiJudge::new(url, "m".to_string(), None, 100, timeout).expect("client builds")
}

fn input() -> JudgeInput {
    JudgeInput {
        briefed: Vec::new(),
        excerpt: Some("done".to_string()),
        written: Vec::new(),
    }
}

#[tokio::test]
async fn a_silent_endpoint_fails_within_the_configured_timeout() {
    let url = server(None).await;
    let started = Instant::now();
    let outcome = judge(url, Duration::from_millis(300)).judge(&input()).await;
    assert!(
        matches!(outcome, Err(JudgeError::Transport(_))),
        "{outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the timeout was not applied"
    );
}

#[tokio::test]
async fn an_oversized_body_is_refused_without_being_read_whole() {
    let body = format!(
        "{{\"choices\":[{{\"message\":{{\"content\":\"{}\"}}}}]}}",
        "x".repeat(MAX_RESPONSE_BYTES)
    );
    // Chunked, so no Content-Length warns the client in advance: the cap must hold while reading.
    let chunked = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let url = server(Some(chunked.into_bytes())).await;
    let outcome = judge(url, Duration::from_secs(5)).judge(&input()).await;
    match outcome {
        Err(JudgeError::Malformed(message)) => {
            assert!(message.contains("larger than"), "{message}")
        }
        other => panic!("expected the cap to refuse the body, got {other:?}"),
    }
}

#[tokio::test]
async fn a_small_verdict_still_reads() {
    let body =
        r#"{"choices":[{"message":{"content":"{\"completed\":[]}"}}],"usage":{"total_tokens":7}}"#;
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let url = server(Some(response.into_bytes())).await;
    let verdict = judge(url, Duration::from_secs(5))
        .judge(&input())
        .await
        .expect("verdict");
    assert_eq!(verdict.tokens_used, 7);
}
