//! Harness for end-to-end tests: the real `baton` binary on free ports against a fresh
//! database, tenants created with the real CLI, and a small HTTP client.
//!
//! The binary is found next to the test executable (`target/<profile>/baton`); `make test`
//! builds it first.

pub mod browser;
pub mod chat_standin;
mod client;
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
mod spawn;
pub mod standin;
pub mod tls;
pub mod tls_proxy;
pub mod tmux;
pub mod usage_recorder;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::process::{Child, Command};

use baton_kit::testing::TestDatabase;

pub use client::{Answer, Client, Tenant};
pub use spawn::{Logs, ServiceProcess, binary, spawn, spawn_with_logs};
use spawn::{Ready, spawn_logged};

/// The service token every test process shares.
pub const SERVICE_TOKEN: &str = "e2e-test-service-token";

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

/// The setting that takes the request rate limit out of a test's way.
pub const UNLIMITED: (&str, &str) = ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "1000000");

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
        Client::new(&self.base_url, Some(&tenant.api_key))
    }

    /// An HTTP client without a key.
    pub fn anonymous(&self) -> Client {
        Client::new(&self.base_url, None)
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
        ("BATON_CLOSER__ENABLED", "false"),
        // Many test processes share one Postgres (max_connections 100 by default).
        ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect()
}
