//! A blocking HTTP client bounded by the event's deadline.
//!
//! Every call gets at most what is left of the event's budget (and never more than
//! [`MAX_CALL`]); connecting gets at most [`MAX_CONNECT`]. A call past the deadline is not
//! attempted. Answers are JSON or nothing.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::Server;

/// The longest one call may take, whatever the budget.
pub const MAX_CALL: Duration = Duration::from_secs(5);
/// The longest connecting may take.
pub const MAX_CONNECT: Duration = Duration::from_millis(1500);

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    /// The JSON body; `Null` when there was none or it was not JSON.
    pub body: Value,
    /// The wait a `Retry-After` header asked for, when it had one.
    pub retry_after: Option<Duration>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn text(&self, key: &str) -> Option<&str> {
        self.body.get(key).and_then(Value::as_str)
    }
}

/// Why a call has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The budget ran out before the call could start.
    Deadline,
    /// No connection, a timeout, or a broken exchange.
    Transport,
}

impl Failure {
    pub fn code(self) -> &'static str {
        match self {
            Failure::Deadline => "deadline",
            Failure::Transport => "transport",
        }
    }
}

/// One event's client.
pub struct Client {
    agent: ureq::Agent,
    server: Server,
    deadline: Instant,
}

impl Client {
    pub fn new(server: Server, deadline: Instant) -> Client {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(MAX_CONNECT))
            .user_agent(concat!("baton-hook/", env!("CARGO_PKG_VERSION")))
            .max_redirects(0)
            .build()
            .into();
        Client {
            agent,
            server,
            deadline,
        }
    }

    fn budget(&self) -> Result<Duration, Failure> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(5) {
            return Err(Failure::Deadline);
        }
        Ok(left.min(MAX_CALL))
    }

    /// `POST <url><path>` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Answer, Failure> {
        self.post_keyed(path, body, None)
    }

    /// As [`Client::post`], with the call's `Idempotency-Key` when it has one (a spooled line).
    pub fn post_keyed(
        &self,
        path: &str,
        body: &Value,
        key: Option<&str>,
    ) -> Result<Answer, Failure> {
        let budget = self.budget()?;
        let url = format!("{}{path}", self.server.url);
        let mut request = self
            .agent
            .post(&url)
            .config()
            .timeout_global(Some(budget))
            .build()
            .header("X-API-Key", &self.server.api_key);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        answer(request.send_json(body))
    }

    /// `GET <url><path_and_query>`.
    pub fn get(&self, path_and_query: &str) -> Result<Answer, Failure> {
        let budget = self.budget()?;
        let url = format!("{}{path_and_query}", self.server.url);
        let response = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(budget))
            .build()
            .header("X-API-Key", &self.server.api_key)
            .call();
        answer(response)
    }
}

fn answer(
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<Answer, Failure> {
    let mut response = response.map_err(|_| Failure::Transport)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| crate::backoff::retry_after(value, std::time::SystemTime::now()));
    let text = response
        .body_mut()
        .with_config()
        .limit(1024 * 1024)
        .read_to_string()
        .map_err(|_| Failure::Transport)?;
    Ok(Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        retry_after,
    })
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                encoded.push(byte as char);
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    #[test]
    fn encoding() {
        assert_eq!(super::encode("a b/ü"), "a%20b%2F%C3%BC");
        assert_eq!(super::encode("claude-code"), "claude-code");
    }
}
