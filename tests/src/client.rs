//! A small JSON client of the gateway's REST API, as a hook or a user's script calls it.

use serde_json::Value;

/// A tenant created through the CLI.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub tenant_id: String,
    pub api_key: String,
}

/// A tiny JSON client.
#[derive(Debug, Clone)]
pub struct Client {
    base_url: String,
    api_key: Option<String>,
    http: reqwest::Client,
    test_now: Option<String>,
}

/// A response: status and JSON body (Null when empty), plus headers.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// An error answer reduced to `{"error": code}`, once its `detail` is checked: every 4xx
    /// says why (a non-empty string of at most 500 characters), a 5xx says nothing of its cause.
    pub fn refusal(&self) -> Value {
        let detail = self.body.get("detail");
        if (400..500).contains(&self.status) {
            let text = detail
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("a {} says why in `detail`: {}", self.status, self.body));
            assert!(
                !text.is_empty() && text.chars().count() <= 500,
                "detail is a bounded sentence: {text:?}"
            );
        } else {
            assert!(
                detail.is_none(),
                "a {} keeps its cause: {}",
                self.status,
                self.body
            );
        }
        serde_json::json!({"error": self.body["error"]})
    }
}

impl Client {
    /// A client of the gateway at `base_url`, sending `api_key` when it has one.
    pub fn new(base_url: &str, api_key: Option<&str>) -> Client {
        Client {
            base_url: base_url.to_string(),
            api_key: api_key.map(str::to_string),
            http: reqwest::Client::new(),
            test_now: None,
        }
    }

    /// The same client, with requests stamped `X-Baton-Test-Now: <instant>`.
    pub fn at(&self, instant: &str) -> Client {
        Client {
            test_now: Some(instant.to_string()),
            ..self.clone()
        }
    }

    /// The same client with a different key.
    pub fn with_key(&self, key: &str) -> Client {
        Client {
            api_key: Some(key.to_string()),
            ..self.clone()
        }
    }

    /// Opens `session_id` for `agent` from startup (asserting 200); its session run id.
    pub async fn open_startup(&self, agent: &str, session_id: &str) -> String {
        self.open(
            &serde_json::json!({"agent": agent, "sessionId": session_id, "source": "startup"}),
        )
        .await
    }

    /// Opens the session `body` describes (asserting 200); its session run id.
    pub async fn open(&self, body: &Value) -> String {
        let opened = self.post("/api/v1/agent-sessions/open", body).await;
        assert_eq!(opened.status, 200, "{:?}", opened.body);
        opened.body["sessionRunId"]
            .as_str()
            .expect("run")
            .to_string()
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.post_raw(path, body.to_string()).await
    }

    pub async fn post_raw(&self, path: &str, body: String) -> Answer {
        self.send(self.json(reqwest::Method::POST, path, body))
            .await
    }

    /// Posts raw bytes (which need not be UTF-8).
    pub async fn post_bytes(&self, path: &str, body: Vec<u8>) -> Answer {
        self.send(self.json(reqwest::Method::POST, path, body))
            .await
    }

    /// Posts bytes with a `Content-Encoding` header.
    pub async fn post_encoded(&self, path: &str, body: Vec<u8>, encoding: &str) -> Answer {
        let request = self
            .json(reqwest::Method::POST, path, body)
            .header("content-encoding", encoding);
        self.send(request).await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(self.url(path))).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Answer {
        self.send(self.json(reqwest::Method::PUT, path, body.to_string()))
            .await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.send(self.http.delete(self.url(path))).await
    }

    /// A GET with an `Accept` header (a body that is not JSON comes back as a JSON string).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Answer {
        let request = self.http.get(self.url(path)).header("accept", accept);
        self.send(request).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// A request carrying `body` as JSON.
    fn json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .header("content-type", "application/json")
            .body(body)
    }

    async fn send(&self, mut request: reqwest::RequestBuilder) -> Answer {
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        if let Some(instant) = &self.test_now {
            request = request.header("x-baton-test-now", instant);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Answer {
            status,
            body,
            headers,
        }
    }
}
