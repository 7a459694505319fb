//! Provenance against real services: registry's gRPC server and provenance's service on one
//! fresh Postgres database per test.

mod attach;
mod briefing;
mod events_read;
mod import;
mod lifecycle;

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::Clock;
use baton_kit::config::{Env, Secret};
use baton_kit::db;
use baton_kit::grpc::{CallContext, Outbound};
use baton_kit::selector::Selector;
use baton_kit::shutdown::Shutdown;
use baton_kit::testing::{TestDatabase, init_logging, serve_on_free_port};
use baton_provenance::link::{Provenance as WriteProvenance, RegistryLink};
use baton_provenance::memory::CommitmentStatus;
use baton_provenance::memory::{ActorKind, MemoryType};
use baton_provenance::service::{Provenance, Written};
use baton_provenance::validate::NewMemory;
use baton_provenance::writes::{EdgeIntent, Transitioned};
use baton_registry::decide::OpenCommand;
use baton_registry::service::Registry;
use baton_registry::session::{Lease, Session, Source};

pub const TOKEN: &str = "provenance-test-service-token";

/// Registry served over gRPC, provenance in-process, both on one test database.
pub struct Harness {
    pub database: TestDatabase,
    pub provenance: Provenance,
    /// Direct access to registry's decisions, to arrange sessions.
    pub registry: Registry,
    pub admin: PgPool,
    pub runtime_pool: PgPool,
}

impl Harness {
    /// A harness and a fresh tenant id: the start of most tests.
    pub async fn with_tenant() -> (Harness, Uuid) {
        (Harness::new().await, Uuid::now_v7())
    }

    pub async fn new() -> Harness {
        init_logging();
        let database = TestDatabase::migrated(vec![
            (&baton_registry::DB, baton_registry::migrator()),
            (&baton_provenance::DB, baton_provenance::migrator()),
        ])
        .await;
        let env = Env::from_pairs([
            ("BATON_SERVICE_TOKEN", TOKEN),
            ("BATON_DATABASE_URL", database.url()),
            ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
            ("BATON_TEST_CLOCK", "1"),
        ]);
        let registry_config = baton_registry::RegistryConfig::from_env(&env).expect("config");
        let registry_addr = serve_on_free_port(|listener| {
            baton_registry::serve(registry_config, listener, Shutdown::never())
        })
        .await;

        let registry_pool = db::connect_runtime(database.url(), None, &baton_registry::DB, 8)
            .await
            .expect("registry pool");
        let registry = Registry::new(registry_pool, Lease::new(Duration::from_secs(24 * 3600)));
        let runtime_pool = db::connect_runtime(database.url(), None, &baton_provenance::DB, 16)
            .await
            .expect("provenance pool");
        let link = RegistryLink::new(
            baton_kit::grpc::traced_channel(
                baton_kit::telemetry::Component::Provenance,
                &registry_addr,
            )
            .expect("channel"),
            Outbound::new(Secret::new(TOKEN.to_string())),
        );
        let provenance = Provenance::new(runtime_pool.clone(), link, Clock::new(true));
        let admin = PgPool::connect(database.url()).await.expect("admin");
        Harness {
            database,
            provenance,
            registry,
            admin,
            runtime_pool,
        }
    }

    /// Opens a startup session for `project` at `now`; returns its run id.
    pub async fn open(
        &self,
        tenant_id: Uuid,
        session_id: &str,
        project: Option<&str>,
        now: DateTime<Utc>,
    ) -> Uuid {
        let command = OpenCommand {
            agent: "claude-code".to_string(),
            session_id: session_id.to_string(),
            source: Source::Startup,
            project: project.map(str::to_string),
            scope: None,
            selector: Selector::All {},
            briefed_memories: None,
            follows_session_id: None,
        };
        self.registry
            .open(tenant_id, &command, now)
            .await
            .expect("open")
            .session
            .id
    }

    /// Writes a note (or any type) as the REST actor.
    pub async fn remember(
        &self,
        call: &CallContext,
        memory: &NewMemory,
        provenance: WriteProvenance,
    ) -> Result<Written, baton_kit::ApiError> {
        self.provenance
            .remember(call, memory, ActorKind::UserApi, provenance)
            .await
    }

    /// Writes a project-less memory with the default provenance, as the REST actor.
    pub async fn write(
        &self,
        call: &CallContext,
        memory_type: MemoryType,
        topic: &str,
        content: &str,
    ) -> Result<Written, baton_kit::ApiError> {
        let new_memory = memory(memory_type, topic, content, None);
        self.remember(call, &new_memory, WriteProvenance::Default)
            .await
    }

    /// Revises `predecessor` into `memory` as the REST actor.
    pub async fn revise(
        &self,
        call: &CallContext,
        predecessor: Uuid,
        memory: &NewMemory,
        intent: EdgeIntent,
        provenance: WriteProvenance,
    ) -> Result<Written, baton_kit::ApiError> {
        self.provenance
            .revise(
                call,
                predecessor,
                memory,
                intent,
                ActorKind::UserApi,
                provenance,
            )
            .await
    }

    /// Moves the commitment on `memory_id` to `target` as the REST actor.
    pub async fn transition(
        &self,
        call: &CallContext,
        memory_id: Uuid,
        target: CommitmentStatus,
        provenance: WriteProvenance,
    ) -> Result<Transitioned, baton_kit::ApiError> {
        self.provenance
            .transition(call, memory_id, target, ActorKind::UserApi, provenance)
            .await
    }

    /// Archives `memory_id` as the REST actor with the default provenance.
    pub async fn archive(
        &self,
        call: &CallContext,
        memory_id: Uuid,
    ) -> Result<(), baton_kit::ApiError> {
        self.provenance
            .archive(
                call,
                memory_id,
                ActorKind::UserApi,
                WriteProvenance::Default,
            )
            .await
    }

    /// Closes the session `session_id` of `claude-code` at `at` in the registry.
    pub async fn close(&self, tenant_id: Uuid, session_id: &str, at: DateTime<Utc>) {
        self.registry
            .close(tenant_id, "claude-code", session_id, at)
            .await
            .expect("close");
    }

    /// The registry's row for `run` (it must exist).
    pub async fn row(&self, tenant_id: Uuid, run: Uuid) -> Session {
        self.registry
            .get_by_id(tenant_id, run)
            .await
            .expect("session row")
    }

    /// Every event of the tenant as (memory id, kind, payload run id), in id order (admin).
    pub async fn events(&self, tenant_id: Uuid) -> Vec<(Uuid, String, Option<String>)> {
        sqlx::query_as(
            "SELECT memory_id, event_kind, payload->>'sessionRunId' FROM provenance.memory_events \
             WHERE tenant_id = $1 ORDER BY id",
        )
        .bind(tenant_id)
        .fetch_all(&self.admin)
        .await
        .expect("events")
    }

    pub async fn count(&self, table: &'static str) -> i64 {
        let query = match table {
            "memories" => "SELECT count(*) FROM provenance.memories",
            "events" => "SELECT count(*) FROM provenance.memory_events",
            _ => "SELECT count(*) FROM provenance.commitments",
        };
        sqlx::query_scalar(query)
            .fetch_one(&self.admin)
            .await
            .expect("count")
    }
}

pub fn t(hours: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 1, 9, 0, 0)
        .single()
        .expect("valid")
        + chrono::Duration::hours(hours)
}

pub fn call(tenant_id: Uuid, now: DateTime<Utc>) -> CallContext {
    CallContext { tenant_id, now }
}

pub fn memory(
    memory_type: MemoryType,
    topic: &str,
    content: &str,
    project: Option<&str>,
) -> NewMemory {
    NewMemory {
        memory_type,
        topic: topic.to_string(),
        content: content.to_string(),
        scope: "personal".to_string(),
        project: project.map(str::to_string),
        tags: Vec::new(),
        due_at: None,
    }
}
