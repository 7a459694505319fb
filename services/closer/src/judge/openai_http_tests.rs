//! The judge's HTTP client against real local servers: it always has its timeouts, it
//! refuses an oversized body instead of reading it, and a verdict whose quote is not in the
//! input is dropped and counted.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use uuid::Uuid;

use super::{MAX_RESPONSE_BYTES, OpenAiJudge};
use crate::judge::{
    BriefedCommitment, EvidenceSource, Judge, JudgeError, JudgeInput, WrittenMemory,
};

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
        session_project: None,
    }
}

/// A chat-completions answer whose message content is `content`.
fn completion(content: &str) -> Vec<u8> {
    let body = serde_json::json!({
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"total_tokens": 11},
    })
    .to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn a_verdict_whose_quote_is_not_in_the_input_is_dropped_and_counted() {
    let (first, second, third) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
    let note = Uuid::from_u128(40);
    let commitment = |id, topic: &str| BriefedCommitment {
        id,
        topic: topic.to_string(),
        status: "open".to_string(),
        content: format!("Do the {topic} work"),
        project: None,
    };
    let input = JudgeInput {
        briefed: vec![
            commitment(first, "index"),
            commitment(second, "docs"),
            commitment(third, "ci"),
        ],
        excerpt: Some("Created the index on orders.customer_id. The docs wait.".to_string()),
        written: vec![WrittenMemory {
            id: note,
            memory_type: "note".to_string(),
            topic: "ci".to_string(),
            content: "CI caches the cargo registry now.".to_string(),
            project: None,
        }],
        session_project: None,
    };
    let content = serde_json::json!({"completed": [
        {"id": first.to_string(), "quote": "Created the index on orders.customer_id.", "source": "lastMessage"},
        {"id": second.to_string(), "quote": "The docs are published.", "source": "lastMessage"},
        {"id": third.to_string(), "quote": "CI caches the cargo registry now.", "source": "lastMessage"},
        {"id": third.to_string(), "quote": "CI caches the cargo registry now.", "source": note.to_string()},
    ]})
    .to_string();
    let url = server(Some(completion(&content))).await;
    let verdict = judge(url, Duration::from_secs(5))
        .judge(&input)
        .await
        .expect("verdict");
    // The invented quote, and the true quote attributed to the wrong source, are dropped.
    assert_eq!(verdict.dropped, 2);
    assert_eq!(
        verdict.completed(),
        vec![first.to_string(), third.to_string()]
    );
    assert_eq!(
        verdict.findings[1].evidence[0].source,
        EvidenceSource::Memory(note)
    );
    assert_eq!(verdict.tokens_used, 11);
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
