//! A judge backed by any OpenAI-compatible chat-completions endpoint.
//!
//! The request carries the briefed commitments, the excerpt and the written memories (each with
//! its id) as JSON data; the reply must be exactly `{"completed": [{"id", "quote", "source"}]}`
//! (at most 100 entries), where `source` is `"lastMessage"` or the id of a written memory and
//! `quote` is copied verbatim from that source — anything else is malformed and the pass is
//! retried later. An entry whose quote does not occur in its source is **dropped** (the
//! commitment stays open) and counted (`baton.closer.judge.unquoted`, and the verdict's
//! `dropped`): a judge that cannot point at its evidence has none. Output tokens are bounded;
//! the call has a timeout. Each entry may carry the model's `confidence` (0 to 1; unstated
//! reads as 0.5) and the closer's abstention margin applies to it as to the evidence judge's.
//! A quote that is there but, read as the evidence judge reads a statement, is a question, a
//! plan or a withdrawn claim ("not yet", "should I …?") leaves the commitment open. The key is sent only in the Authorization header and never logged.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use baton_kit::config::Secret;
use tracing::Instrument;

use super::http_trace::ClientCall;

use crate::judge::{
    Evidence, EvidenceSource, Finding, Judge, JudgeError, JudgeFuture, JudgeInput, Verdict,
};

/// Longest quote a verdict entry may carry.
pub const MAX_QUOTE_CHARS: usize = 1000;

fn unquoted() -> &'static Counter<u64> {
    static COUNTER: OnceLock<Counter<u64>> = OnceLock::new();
    COUNTER.get_or_init(|| {
        opentelemetry::global::meter("baton")
            .u64_counter("baton.closer.judge.unquoted")
            .with_description("Judge verdicts dropped because their quote is not in the input")
            .build()
    })
}

/// Most ids a verdict may name (MAX_BRIEFED_MEMORIES).
pub const MAX_VERDICT_IDS: usize = 100;

const INSTRUCTIONS: &str = "You review the end of a coding-agent session. You get the commitments the session was briefed on at its start (each with an id), the agent's last message, and the memories the agent wrote during the session (each with an id). Decide which commitments the session clearly completed. A commitment is completed only when the evidence says the work is done - every part of it, for the same entity and project - not started, not partly done, not planned, not deferred, not negated, not later contradicted or reverted. When unsure, leave it out. For each completed commitment quote the one sentence that shows it, copied verbatim, and name its source: \"lastMessage\" or the id of the written memory. Give your confidence that the commitment is really completed, from 0 to 1. Answer with exactly one JSON object and nothing else: {\"completed\": [{\"id\": \"<commitment id>\", \"quote\": \"<verbatim sentence>\", \"source\": \"lastMessage\" | \"<memory id>\", \"confidence\": <0 to 1>}]} using only ids from the briefed commitments.";

/// The OpenAI-compatible judge.
#[derive(Debug, Clone)]
pub struct OpenAiJudge {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    key: Option<Secret>,
    max_tokens: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictBody {
    completed: Vec<VerdictEntry>,
}

/// One entry of the model's verdict.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictEntry {
    pub id: String,
    pub quote: String,
    pub source: String,
    /// The model's confidence in [0, 1]; [`UNSTATED_CONFIDENCE`] when it gives none.
    #[serde(default)]
    pub confidence: Option<f64>,
}

/// Confidence of an entry that states none: the neutral middle, so any margin above it
/// abstains.
pub const UNSTATED_CONFIDENCE: f64 = 0.5;

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Debug, Deserialize)]
struct Message {
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    total_tokens: Option<i64>,
}

/// Largest completion body read: a verdict is a short list of ids, so anything near this is
/// not one, and reading it whole would let a misbehaving endpoint fill the closer's memory.
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024;

impl OpenAiJudge {
    /// The judge, or why its HTTP client cannot be built (never a client without timeouts).
    pub fn new(
        url: String,
        model: String,
        key: Option<Secret>,
        max_tokens: u32,
        timeout: Duration,
    ) -> Result<OpenAiJudge, JudgeError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|error| {
                JudgeError::Transport(format!("cannot build the judge's HTTP client: {error}"))
            })?;
        Ok(OpenAiJudge {
            http,
            endpoint: format!("{}/chat/completions", url.trim_end_matches('/')),
            model,
            key,
            max_tokens,
        })
    }

    fn body(&self, input: &JudgeInput) -> serde_json::Value {
        let data = json!({
            "briefedCommitments": input.briefed.iter().map(|row| json!({
                "id": row.id.to_string(), "topic": row.topic, "status": row.status, "content": row.content,
            })).collect::<Vec<_>>(),
            "lastMessage": input.excerpt,
            "writtenMemories": input.written.iter().map(|row| json!({
                "id": row.id.to_string(), "memoryType": row.memory_type, "topic": row.topic, "content": row.content,
            })).collect::<Vec<_>>(),
        });
        json!({
            "model": self.model,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": data.to_string()},
            ],
        })
    }

    /// One traced call: a CLIENT span around the exchange ([`super::http_trace`]).
    async fn call(&self, input: &JudgeInput) -> Result<Verdict, JudgeError> {
        let traced = ClientCall::start("POST", &self.endpoint);
        let span = traced.span().clone();
        let (status, verdict) = self
            .exchange(input, traced.trace_headers())
            .instrument(span)
            .await;
        traced.finish(status);
        verdict
    }

    /// The request and its reply; the status is `None` when no response came.
    async fn exchange(
        &self,
        input: &JudgeInput,
        trace_headers: reqwest::header::HeaderMap,
    ) -> (Option<u16>, Result<Verdict, JudgeError>) {
        let mut request = self
            .http
            .post(&self.endpoint)
            .headers(trace_headers)
            .json(&self.body(input));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                return (
                    None,
                    Err(JudgeError::Transport(error.without_url().to_string())),
                );
            }
        };
        let status = response.status();
        if !status.is_success() {
            return (
                Some(status.as_u16()),
                Err(JudgeError::Transport(format!("status {status}"))),
            );
        }
        (Some(status.as_u16()), self.verdict(input, response).await)
    }

    async fn verdict(
        &self,
        input: &JudgeInput,
        response: reqwest::Response,
    ) -> Result<Verdict, JudgeError> {
        let body = read_capped(response, MAX_RESPONSE_BYTES).await?;
        let completion: Completion = serde_json::from_slice(&body)
            .map_err(|error| JudgeError::Malformed(error.to_string()))?;
        let content = completion
            .choices
            .first()
            .and_then(|choice| choice.message.content.clone())
            .ok_or_else(|| JudgeError::Malformed("no message".to_string()))?;
        let entries = parse_verdict(&content)?;
        let tokens_used = completion
            .usage
            .and_then(|usage| usage.total_tokens)
            .unwrap_or_else(|| self.reservation(input));
        let (findings, dropped) = quoted(input, entries);
        if dropped > 0 {
            unquoted().add(dropped as u64, &[KeyValue::new("judge", "openai")]);
            tracing::warn!(dropped, "judge verdicts dropped: quote not in the input");
        }
        Ok(Verdict {
            findings,
            tokens_used,
            dropped,
        })
    }
}

/// The entries whose quote occurs verbatim in the source they name, as findings; and how
/// many were dropped.
pub fn quoted(input: &JudgeInput, entries: Vec<VerdictEntry>) -> (Vec<Finding>, usize) {
    let mut findings = Vec::new();
    let mut dropped = 0;
    for entry in entries {
        let quote = entry.quote.trim();
        let source = if entry.source == "lastMessage" {
            input
                .excerpt
                .as_deref()
                .map(|text| (text, EvidenceSource::Excerpt))
        } else {
            Uuid::parse_str(entry.source.trim()).ok().and_then(|id| {
                input
                    .written
                    .iter()
                    .find(|memory| memory.id == id)
                    .map(|memory| (memory.content.as_str(), EvidenceSource::Memory(id)))
            })
        };
        match source {
            Some((text, source))
                if !quote.is_empty()
                    && quote.chars().count() <= MAX_QUOTE_CHARS
                    && text.contains(quote) =>
            {
                let evidence = vec![Evidence {
                    quote: quote.to_string(),
                    source,
                }];
                let content = input
                    .briefed
                    .iter()
                    .find(|row| Uuid::parse_str(entry.id.trim()).is_ok_and(|id| id == row.id))
                    .map_or("", |row| row.content.as_str());
                // The quote read as the evidence judge reads a statement: a question, a plan or
                // a withdrawn claim does not show the work done, whatever the model says.
                let finding = match super::evidence::quote_withdrawn(quote, content) {
                    Some(reason) => Finding {
                        id: entry.id,
                        done: false,
                        reason: format!("quote-{reason}"),
                        evidence,
                        confidence: 0.0,
                    },
                    None => Finding {
                        id: entry.id,
                        done: true,
                        reason: "completed".to_string(),
                        evidence,
                        confidence: entry.confidence.unwrap_or(UNSTATED_CONFIDENCE),
                    },
                };
                findings.push(finding);
            }
            _ => dropped += 1,
        }
    }
    (findings, dropped)
}

/// Reads a response body, refusing it as soon as it grows past `cap` bytes.
async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, JudgeError> {
    if response
        .content_length()
        .is_some_and(|length| length > cap as u64)
    {
        return Err(JudgeError::Malformed(format!(
            "response larger than {cap} bytes"
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| JudgeError::Transport(error.without_url().to_string()))?
    {
        if body.len() + chunk.len() > cap {
            return Err(JudgeError::Malformed(format!(
                "response larger than {cap} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The strict verdict: exactly `{"completed": [{"id", "quote", "source"}, ...]}`, at most 100.
pub fn parse_verdict(content: &str) -> Result<Vec<VerdictEntry>, JudgeError> {
    let body: VerdictBody = serde_json::from_str(content.trim())
        .map_err(|error| JudgeError::Malformed(error.to_string()))?;
    if let Some(entry) = body.completed.iter().find(|entry| {
        entry
            .confidence
            .is_some_and(|value| !(0.0..=1.0).contains(&value))
    }) {
        return Err(JudgeError::Malformed(format!(
            "confidence of {} is not between 0 and 1",
            entry.id
        )));
    }
    if body.completed.len() > MAX_VERDICT_IDS {
        return Err(JudgeError::Malformed(format!(
            "more than {MAX_VERDICT_IDS} ids"
        )));
    }
    Ok(body.completed)
}

impl Judge for OpenAiJudge {
    fn name(&self) -> &'static str {
        "openai"
    }

    /// The prompt's size (≈ 4 characters a token) plus the output bound.
    fn reservation(&self, input: &JudgeInput) -> i64 {
        let characters = INSTRUCTIONS.len()
            + input.excerpt.as_ref().map_or(0, String::len)
            + input
                .briefed
                .iter()
                .map(|row| row.topic.len() + row.content.len() + 64)
                .sum::<usize>()
            + input
                .written
                .iter()
                .map(|row| row.topic.len() + row.content.len() + 32)
                .sum::<usize>();
        (characters / 4) as i64 + i64::from(self.max_tokens)
    }

    fn judge<'a>(&'a self, input: &'a JudgeInput) -> JudgeFuture<'a> {
        Box::pin(self.call(input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_strict() {
        assert_eq!(
            parse_verdict(r#"{"completed": [{"id": "a", "quote": "q", "source": "lastMessage"}]}"#)
                .expect("valid"),
            vec![VerdictEntry {
                id: "a".to_string(),
                quote: "q".to_string(),
                source: "lastMessage".to_string(),
                confidence: None,
            }]
        );
        assert!(
            parse_verdict(r#"{"completed": []}"#)
                .expect("valid")
                .is_empty()
        );
        for bad in [
            "",
            "completed: a",
            r#"{"completed": "a"}"#,
            r#"{"completed": ["a"]}"#,
            r#"{"completed": [{"id": "a", "quote": "q"}]}"#,
            r#"{"completed": [{"id": "a", "quote": "q", "source": "lastMessage", "why": "x"}]}"#,
            r#"{"completed": [{"id": "a", "quote": "q", "source": "lastMessage", "confidence": 1.5}]}"#,
            r#"{"completed": [{"id": "a", "quote": "q", "source": "lastMessage", "confidence": "high"}]}"#,
            r#"{"completed": [], "reason": "x"}"#,
            r#"{"done": ["a"]}"#,
            r#"[{"completed": ["a"]}]"#,
        ] {
            assert!(parse_verdict(bad).is_err(), "{bad}");
        }
        let entry = r#"{"id": "x", "quote": "q", "source": "lastMessage"}"#;
        let many = format!(r#"{{"completed": [{}]}}"#, vec![entry; 101].join(","));
        assert!(parse_verdict(&many).is_err());
    }
}

#[cfg(test)]
#[path = "openai_http_tests.rs"]
mod http_tests;
