//! Registry against a real Postgres: one fresh database per test.

mod concurrency;
mod console_client;
mod console_liveness;
mod console_machines;
mod console_sessions;
mod grpc;
mod lifecycle;
mod members;
mod security;
mod sweep;

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::config::Env;
use baton_kit::db;
use baton_kit::selector::Selector;
use baton_kit::shutdown::Shutdown;
use baton_kit::testing::{TestDatabase, init_logging, serve_on_free_port};
use baton_registry::RegistryConfig;
use baton_registry::decide::OpenCommand;
use baton_registry::service::{Closed, Opened, Registry};
use baton_registry::session::{Lease, Source};

pub const LEASE: Duration = Duration::from_secs(24 * 3600);

/// A migrated test database and a registry on it.
pub struct Harness {
    pub database: TestDatabase,
    pub registry: Registry,
    pub runtime_pool: PgPool,
}

impl Harness {
    /// A harness and a fresh tenant id: the start of most tests.
    pub async fn with_tenant() -> (Harness, Uuid) {
        (Harness::new().await, Uuid::now_v7())
    }

    pub async fn new() -> Harness {
        init_logging();
        let database =
            TestDatabase::migrated(vec![(&baton_registry::DB, baton_registry::migrator())]).await;
        let runtime_pool = db::connect_runtime(database.url(), None, &baton_registry::DB, 32)
            .await
            .expect("connect as the runtime role");
        let registry = Registry::new(runtime_pool.clone(), Lease::new(LEASE));
        Harness {
            database,
            registry,
            runtime_pool,
        }
    }

    /// Opens `command` for `tenant` at `at`; the open must succeed.
    pub async fn open(&self, tenant: Uuid, command: &OpenCommand, at: DateTime<Utc>) -> Opened {
        self.registry.open(tenant, command, at).await.expect("open")
    }

    /// Closes the test agent's session `session_id` at `at`; the close must succeed.
    pub async fn close(&self, tenant: Uuid, session_id: &str, at: DateTime<Utc>) -> Closed {
        self.registry
            .close(tenant, "claude-code", session_id, at)
            .await
            .expect("close")
    }

    /// Serves the registry on port 0 of this database behind `token` (with the test clock on
    /// when `test_clock`); returns its address.
    pub async fn serve(&self, token: &str, test_clock: bool) -> String {
        let mut pairs = vec![
            ("BATON_SERVICE_TOKEN", token),
            ("BATON_DATABASE_URL", self.database.url()),
        ];
        if test_clock {
            pairs.push(("BATON_TEST_CLOCK", "1"));
        }
        let config = RegistryConfig::from_env(&Env::from_pairs(pairs)).expect("config");
        serve_on_free_port(|listener| baton_registry::serve(config, listener, Shutdown::never()))
            .await
    }

    /// An admin pool on the test database (superuser: sees through RLS for assertions).
    pub async fn admin(&self) -> PgPool {
        PgPool::connect(self.database.url())
            .await
            .expect("admin pool")
    }

    /// The stored excerpt of a row, read as admin.
    pub async fn excerpt(&self, id: Uuid) -> Option<String> {
        let admin = self.admin().await;
        sqlx::query_scalar("SELECT last_message_excerpt FROM registry.agent_sessions WHERE id = $1")
            .bind(id)
            .fetch_one(&admin)
            .await
            .expect("row exists")
    }
}

/// A fixed instant plus `hours`.
pub fn t(hours: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 8, 0, 0)
        .single()
        .expect("valid")
        + chrono::Duration::hours(hours)
}

pub fn startup(session_id: &str) -> OpenCommand {
    OpenCommand {
        agent: "claude-code".to_string(),
        session_id: session_id.to_string(),
        source: Source::Startup,
        project: Some("baton".to_string()),
        scope: Some("work".to_string()),
        selector: Selector::Scope {
            scope: "work".to_string(),
        },
        briefed_memories: None,
        follows_session_id: None,
    }
}

pub fn resume(session_id: &str) -> OpenCommand {
    OpenCommand {
        source: Source::Resume,
        project: None,
        scope: None,
        selector: Selector::All {},
        ..startup(session_id)
    }
}
