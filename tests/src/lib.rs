//! Harness for end-to-end tests: the real `baton` binary on free ports against a fresh
//! database, tenants created with the real CLI, and a small HTTP client.
//!
//! The binary is found next to the test executable (`target/<profile>/baton`); `make test`
//! builds it first.

pub mod browser;
pub mod chat_standin;
pub mod client_standin;
pub mod gemini_standin;
pub mod hook;
pub mod judge;
pub mod messages_standin;
pub mod otlp_receiver;
pub mod pg_cut_proxy;
pub mod poll;
pub mod private_postgres;
pub mod private_rabbitmq;
pub mod recording_proxy;
pub mod responses_standin;
pub mod scratch;
pub mod standin;
pub mod tls;
pub mod tls_proxy;
pub mod tmux;
pub mod usage_recorder;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use baton_kit::testing::TestDatabase;

/// The service token every test process shares.
pub const SERVICE_TOKEN: &str = "e2e-test-service-token";

/// Path of a workspace binary built alongside the caller: next to it (a benchmark binary in
/// `target/<profile>/`) or one level up (a test in `target/<profile>/deps/`).
pub fn binary(name: &str) -> PathBuf {
    let executable = std::env::current_exe().expect("executable path");
    let candidates = executable
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(name))
        .collect::<Vec<_>>();
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{name} is missing next to {}: run `cargo build --workspace --bins` (make test does)",
                executable.display()
            )
        })
}

/// A running `baton serve all` with its own database.
pub struct Baton {
    pub database: TestDatabase,
    pub base_url: String,
    /// Every service's bound address, by service name (`registry`, `provenance`, `gateway`, ...).
    pub addresses: HashMap<String, String>,
    /// This instance's exchange and queue prefix on the shared broker (deleted on drop).
    pub namespace: String,
    /// Every line the process printed on stdout (its JSON logs), in order.
    pub logs: Logs,
    child: Child,
    extra_env: Vec<(String, String)>,
}

/// The stdout lines of a spawned process, collected as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Logs(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Logs {
    fn push(&self, line: &str) {
        self.0.lock().expect("logs").push(line.to_string());
    }

    /// The lines that are JSON objects, parsed.
    pub fn json(&self) -> Vec<Value> {
        self.0
            .lock()
            .expect("logs")
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// Every line, raw.
    pub fn raw(&self) -> Vec<String> {
        self.0.lock().expect("logs").clone()
    }
}

/// The setting that takes the request rate limit out of a test's way.
pub const UNLIMITED: (&str, &str) = ("BATON_RATE_LIMIT__REQUESTS", "1000000");

impl Baton {
    /// Starts `baton serve all` with the test clock on and default limits.
    pub async fn start() -> Baton {
        Baton::start_with(&[]).await
    }

    /// Starts with the request rate limit out of the way: for tests that drive a real client,
    /// whose hooks and sidecar call more often than the default limit lets one tenant.
    pub async fn unthrottled() -> Baton {
        Baton::start_with(&[UNLIMITED]).await
    }

    /// Starts with extra environment variables (e.g. a tight rate limit).
    pub async fn start_with(extra_env: &[(&str, &str)]) -> Baton {
        Baton::start_services(&["all"], extra_env).await
    }

    /// Starts `baton serve <targets>` (which must include the gateway).
    pub async fn start_services(targets: &[&str], extra_env: &[(&str, &str)]) -> Baton {
        Baton::start_on(TestDatabase::create().await, targets, extra_env).await
    }

    /// Starts `baton serve all` on a database of the cluster `admin_url` names (a private
    /// cluster a test restarts, never the shared one).
    pub async fn start_on_cluster(admin_url: &str, extra_env: &[(&str, &str)]) -> Baton {
        Baton::start_on(
            TestDatabase::create_on(admin_url).await,
            &["all"],
            extra_env,
        )
        .await
    }

    /// Starts `baton serve all` on an existing database with extra environment (the database
    /// lives on a cluster the test set up, e.g. one that only speaks TLS).
    pub async fn start_on_database(database: TestDatabase, extra_env: &[(&str, &str)]) -> Baton {
        Baton::start_on(database, &["all"], extra_env).await
    }

    async fn start_on(
        database: TestDatabase,
        targets: &[&str],
        extra_env: &[(&str, &str)],
    ) -> Baton {
        baton_kit::testing::init_logging();
        let namespace = format!("t{}", uuid::Uuid::new_v4().simple());
        let extra_env: Vec<(String, String)> = extra_env
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        let mut env = base_env(database.url(), &namespace);
        env.extend(extra_env.iter().cloned());
        let logs = Logs::default();
        let (child, addresses) =
            spawn_logged(targets, &env, Ready::Listening("gateway"), logs.clone()).await;
        Baton {
            database,
            base_url: format!("http://{}", addresses["gateway"]),
            addresses,
            namespace,
            logs,
            child,
            extra_env,
        }
    }

    /// Starts a separate `baton serve closer` process wired to this instance's services, on the
    /// same database and bus namespace.
    pub async fn spawn_closer(&self, extra_env: &[(&str, &str)]) -> ServiceProcess {
        let mut env = base_env(self.database.url(), &self.namespace);
        env.extend(self.extra_env.iter().cloned());
        for (service, key) in [
            ("registry", "BATON_REGISTRY__ADDR"),
            ("provenance", "BATON_PROVENANCE__ADDR"),
            ("triage", "BATON_TRIAGE__ADDR"),
        ] {
            env.push((key.to_string(), self.addresses[service].clone()));
        }
        env.extend(
            extra_env
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string())),
        );
        // Ready when its consumer consumes, not when its port binds: a kill before that point
        // would interrupt no pass.
        let logs = Logs::default();
        let (child, addresses) = spawn_logged(
            &["closer", "--no-migrate"],
            &env,
            Ready::Consuming("closer"),
            logs.clone(),
        )
        .await;
        ServiceProcess {
            child,
            addresses,
            logs,
        }
    }

    /// An admin pool on this instance's database.
    pub async fn admin(&self) -> sqlx::PgPool {
        sqlx::PgPool::connect(self.database.url())
            .await
            .expect("admin pool")
    }

    /// Creates a tenant with the real CLI; returns (tenant id, API key).
    pub async fn create_tenant(&self, name: &str) -> Tenant {
        let output = Command::new(binary("baton"))
            .args(["tenant", "create", "--name", name])
            .envs(base_env(self.database.url(), &self.namespace))
            .envs(self.extra_env.iter().cloned())
            .output()
            .await
            .expect("run baton tenant create");
        assert!(output.status.success(), "tenant create failed: {output:?}");
        let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
        Tenant {
            tenant_id: line["tenantId"].as_str().expect("tenantId").to_string(),
            api_key: line["apiKey"].as_str().expect("apiKey").to_string(),
        }
    }

    /// Runs the real CLI (`baton ARGS`) with this instance's environment.
    pub async fn cli(&self, args: &[&str], extra_env: &[(&str, &str)]) -> std::process::Output {
        Command::new(binary("baton"))
            .args(args)
            .envs(base_env(self.database.url(), &self.namespace))
            .envs(self.extra_env.iter().cloned())
            .envs(
                extra_env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            )
            .output()
            .await
            .expect("run baton")
    }

    /// A new tenant (`baton tenant create`) and a client holding its key: the start of most
    /// tests.
    pub async fn tenant_client(&self, name: &str) -> (Tenant, Client) {
        let tenant = self.create_tenant(name).await;
        let client = self.client(&tenant);
        (tenant, client)
    }

    /// An HTTP client for one tenant.
    pub fn client(&self, tenant: &Tenant) -> Client {
        Client {
            base_url: self.base_url.clone(),
            api_key: Some(tenant.api_key.clone()),
            http: reqwest::Client::new(),
            test_now: None,
        }
    }

    /// An HTTP client without a key.
    pub fn anonymous(&self) -> Client {
        Client {
            base_url: self.base_url.clone(),
            api_key: None,
            http: reqwest::Client::new(),
            test_now: None,
        }
    }

    /// Stops the process (also done on drop).
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

impl Drop for Baton {
    fn drop(&mut self) {
        // Stop the process first: a live relay or consumer would declare the topology again.
        let _ = self.child.start_kill();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        baton_kit::testing::delete_bus_namespace(&self.namespace);
    }
}

/// The environment every test process gets: its database, bus namespace, service token, test
/// clock, free ports and hermetic defaults.
pub fn base_env(database_url: &str, namespace: &str) -> Vec<(String, String)> {
    [
        ("BATON_DATABASE_URL", database_url),
        ("BATON_BUS_NAMESPACE", namespace),
        ("BATON_SERVICE_TOKEN", SERVICE_TOKEN),
        ("BATON_TEST_CLOCK", "1"),
        ("BATON_GATEWAY__LISTEN", "127.0.0.1:0"),
        ("BATON_REGISTRY__LISTEN", "127.0.0.1:0"),
        ("BATON_PROVENANCE__LISTEN", "127.0.0.1:0"),
        ("BATON_TRIAGE__LISTEN", "127.0.0.1:0"),
        ("BATON_CLOSER__LISTEN", "127.0.0.1:0"),
        ("BATON_USAGE__LISTEN", "127.0.0.1:0"),
        ("BATON_NOTIFY__LISTEN", "127.0.0.1:0"),
        ("BATON_LOG", "info"),
        // Hermetic whatever the caller's environment: tests that want the closer say so.
        ("BATON_CLOSER_ENABLED", "false"),
        // Many test processes share one Postgres (max_connections 100 by default).
        ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect()
}

/// A process running some services, killed on drop.
pub struct ServiceProcess {
    child: Child,
    pub addresses: HashMap<String, String>,
    logs: Logs,
}

impl ServiceProcess {
    /// What the process has logged so far.
    pub fn logs(&self) -> &Logs {
        &self.logs
    }

    /// SIGKILL: no drain, no goodbye.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Spawns `baton serve <args>` and waits until `last` announces its address.
/// What a spawned process must have logged before a test uses it.
#[derive(Debug, Clone, Copy)]
enum Ready<'a> {
    /// The named service announced its address.
    Listening(&'a str),
    /// The named service announced its address and a bus consumer reported `consuming`.
    Consuming(&'a str),
}

/// Starts `baton serve ARGS` with exactly `env` and waits until the service named `last`
/// announced its address; returns the child and every announced address.
pub async fn spawn(
    args: &[&str],
    env: &[(String, String)],
    last: &str,
) -> (Child, HashMap<String, String>) {
    spawn_until(args, env, Ready::Listening(last)).await
}

/// As [`spawn`], also returning the process's stdout lines (its JSON logs) as they arrive.
pub async fn spawn_with_logs(
    args: &[&str],
    env: &[(String, String)],
    last: &str,
) -> (Child, HashMap<String, String>, Logs) {
    let logs = Logs::default();
    let (child, addresses) = spawn_logged(args, env, Ready::Listening(last), logs.clone()).await;
    (child, addresses, logs)
}

async fn spawn_until(
    args: &[&str],
    env: &[(String, String)],
    ready: Ready<'_>,
) -> (Child, HashMap<String, String>) {
    spawn_logged(args, env, ready, Logs::default()).await
}

async fn spawn_logged(
    args: &[&str],
    env: &[(String, String)],
    ready: Ready<'_>,
    logs: Logs,
) -> (Child, HashMap<String, String>) {
    let mut command = Command::new(binary("baton"));
    command
        .arg("serve")
        .args(args)
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    // Exactly the Baton settings the test chose: none leaks in from the caller (`make test`
    // exports BATON_SERVICE_TOKEN and BATON_DATABASE_URL for local runs).
    for (key, _) in std::env::vars() {
        if key.starts_with("BATON_") && !env.iter().any(|(given, _)| *given == key) {
            command.env_remove(&key);
        }
    }
    let mut child = command.spawn().expect("spawn baton serve");
    let stdout = child.stdout.take().expect("stdout");
    let addresses = tokio::time::timeout(Duration::from_secs(60), wait_for(stdout, ready, logs))
        .await
        .expect("baton announced its addresses in time");
    (child, addresses)
}

async fn wait_for(
    stdout: tokio::process::ChildStdout,
    ready: Ready<'_>,
    logs: Logs,
) -> HashMap<String, String> {
    let (last, needs_consumer) = match ready {
        Ready::Listening(service) => (service, false),
        Ready::Consuming(service) => (service, true),
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut addresses = HashMap::new();
    let mut consuming = false;
    while let Ok(Some(line)) = lines.next_line().await {
        if std::env::var_os("TEST_LOG").is_some() {
            eprintln!("{line}");
        }
        logs.push(&line);
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["message"] == "consuming" {
            consuming = true;
        } else if event["message"] == "listening"
            && let (Some(service), Some(address)) =
                (event["service"].as_str(), event["addr"].as_str())
        {
            addresses.insert(service.to_string(), address.to_string());
        }
        if addresses.contains_key(last) && (consuming || !needs_consumer) {
            // Keep draining stdout so the child never blocks on a full pipe.
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    if std::env::var_os("TEST_LOG").is_some() {
                        eprintln!("{line}");
                    }
                    logs.push(&line);
                }
            });
            return addresses;
        }
    }
    panic!("baton exited before announcing {last}");
}

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
        let request = self
            .http
            .post(format!("{}{path}", self.base_url))
            .header("content-type", "application/json")
            .body(body);
        self.send(request).await
    }

    /// Posts raw bytes (which need not be UTF-8).
    pub async fn post_bytes(&self, path: &str, body: Vec<u8>) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base_url))
            .header("content-type", "application/json")
            .body(body);
        self.send(request).await
    }

    /// Posts bytes with a `Content-Encoding` header.
    pub async fn post_encoded(&self, path: &str, body: Vec<u8>, encoding: &str) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base_url))
            .header("content-type", "application/json")
            .header("content-encoding", encoding)
            .body(body);
        self.send(request).await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base_url)))
            .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Answer {
        let request = self
            .http
            .put(format!("{}{path}", self.base_url))
            .header("content-type", "application/json")
            .body(body.to_string());
        self.send(request).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.send(self.http.delete(format!("{}{path}", self.base_url)))
            .await
    }

    /// A GET with an `Accept` header (a body that is not JSON comes back as a JSON string).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Answer {
        let request = self
            .http
            .get(format!("{}{path}", self.base_url))
            .header("accept", accept);
        self.send(request).await
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
