//! Triage against real services: registry and provenance served over gRPC, triage in-process,
//! one fresh Postgres database per test, instants driven by the test clock.

mod close;
mod debrief;
mod handshake;
mod states;

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::Clock;
use baton_kit::config::{Env, Secret};
use baton_kit::db;
use baton_kit::grpc::{CallContext, Outbound, OutboundCall, ServerSettings};
use baton_kit::selector::Selector;
use baton_kit::testing::{TestDatabase, init_logging, serve_on_free_port};
use baton_proto::triage::v1::triage_client::TriageClient;
use baton_proto::triage::v1::triage_server::TriageServer;
use baton_provenance::link::{Provenance as WriteProvenance, RegistryLink};
use baton_provenance::memory::{ActorKind, MemoryType};
use baton_provenance::service::Provenance;
use baton_provenance::validate::NewMemory;
use baton_registry::decide::OpenCommand;
use baton_registry::service::Registry;
use baton_registry::session::{BriefedMemory, Lease, Session, Source};
use baton_triage::close::Claim;
use baton_triage::decide::Thresholds;
use baton_triage::grpc::TriageGrpc;
use baton_triage::links::Links;
use baton_triage::service::{Began, Completed, Triage};
use baton_triage::status::Status;

pub const TOKEN: &str = "triage-test-service-token";
pub const AGENT: &str = "claude-code";

pub struct Harness {
    pub database: TestDatabase,
    pub registry: Registry,
    pub provenance: Provenance,
    pub triage: Triage,
    pub admin: PgPool,
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
            (&baton_triage::DB, baton_triage::migrator()),
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
            baton_registry::serve(
                registry_config,
                listener,
                baton_kit::shutdown::Shutdown::never(),
            )
        })
        .await;
        let mut provenance_config =
            baton_provenance::ProvenanceConfig::from_env(&env).expect("config");
        provenance_config.registry_addr = registry_addr.clone();
        let provenance_addr = serve_on_free_port(|listener| {
            baton_provenance::serve(provenance_config, listener, std::future::pending())
        })
        .await;

        let outbound = Outbound::new(Secret::new(TOKEN.to_string()));
        use baton_kit::telemetry::Component;
        let channel = |component, address: &str| {
            baton_kit::grpc::traced_channel(component, address).expect("channel")
        };
        let registry_pool = db::connect_runtime(database.url(), None, &baton_registry::DB, 4)
            .await
            .expect("pool");
        let provenance_pool = db::connect_runtime(database.url(), None, &baton_provenance::DB, 4)
            .await
            .expect("pool");
        let triage_pool = db::connect_runtime(database.url(), None, &baton_triage::DB, 24)
            .await
            .expect("pool");
        let registry = Registry::new(registry_pool, Lease::new(Duration::from_secs(24 * 3600)));
        let provenance = Provenance::new(
            provenance_pool,
            RegistryLink::new(
                channel(Component::Provenance, &registry_addr),
                outbound.clone(),
            ),
            Clock::new(true),
        );
        let triage = Triage::new(
            triage_pool,
            Links::new(
                channel(Component::Triage, &registry_addr),
                channel(Component::Triage, &provenance_addr),
                outbound,
            ),
            Clock::new(true),
            Thresholds::default(),
        );
        let admin = PgPool::connect(database.url()).await.expect("admin");
        Harness {
            database,
            registry,
            provenance,
            triage,
            admin,
        }
    }

    /// `triage/begin` for the test agent at `at`, expected to answer.
    pub async fn begin(
        &self,
        tenant: Uuid,
        session_id: &str,
        at: DateTime<Utc>,
        turn_count: Option<u32>,
        stop_hook_active: bool,
    ) -> Began {
        self.triage
            .begin(
                &call(tenant, at),
                AGENT,
                session_id,
                turn_count,
                stop_hook_active,
            )
            .await
            .expect("begin")
    }

    /// `triage/complete` for the test agent at `at`, expected to answer.
    pub async fn complete(
        &self,
        tenant: Uuid,
        session_id: &str,
        attempt: Uuid,
        at: DateTime<Utc>,
    ) -> Completed {
        self.triage
            .complete(&call(tenant, at), AGENT, session_id, attempt)
            .await
            .expect("complete")
    }

    /// Opens a startup session at `at` with optional briefed rows; returns its run id.
    pub async fn open(
        &self,
        tenant_id: Uuid,
        session_id: &str,
        project: Option<&str>,
        briefed: Option<Vec<BriefedMemory>>,
        at: DateTime<Utc>,
    ) -> Uuid {
        let command = OpenCommand {
            agent: AGENT.to_string(),
            session_id: session_id.to_string(),
            source: Source::Startup,
            project: project.map(str::to_string),
            scope: Some("work".to_string()),
            selector: Selector::All {},
            briefed_memories: briefed,
            follows_session_id: None,
        };
        self.registry
            .open(tenant_id, &command, at)
            .await
            .expect("open")
            .session
            .id
    }

    /// Closes the test agent's session `session_id` at `at` in the registry.
    pub async fn close(&self, tenant_id: Uuid, session_id: &str, at: DateTime<Utc>) {
        self.registry
            .close(tenant_id, AGENT, session_id, at)
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

    /// The run's triage state as `GetState` reads it at `at`.
    pub async fn state(&self, tenant_id: Uuid, run: Uuid, at: DateTime<Utc>) -> Status {
        self.triage
            .state(&call(tenant_id, at), run)
            .await
            .expect("state")
    }

    /// The closer's claim on `run` at `at`, for `epoch`, having seen `observed`.
    pub async fn claim(
        &self,
        tenant_id: Uuid,
        run: Uuid,
        at: DateTime<Utc>,
        epoch: i64,
        observed: Option<Uuid>,
    ) -> Claim {
        self.triage
            .claim_for_close(&call(tenant_id, at), run, epoch, observed)
            .await
            .expect("claim")
    }

    /// The closer's finish of `attempt` on `run` at epoch 1 with no visible events.
    pub async fn finish(
        &self,
        tenant_id: Uuid,
        run: Uuid,
        attempt: Uuid,
        at: DateTime<Utc>,
        truncated: bool,
    ) -> Option<Status> {
        self.triage
            .finish_close(&call(tenant_id, at), run, attempt, 1, &[], truncated)
            .await
            .expect("finish")
    }

    /// A note written with the run's id, as the agent does during a debrief.
    pub async fn write(
        &self,
        tenant_id: Uuid,
        run: Uuid,
        content: &str,
        at: DateTime<Utc>,
    ) -> Uuid {
        let memory = NewMemory {
            memory_type: MemoryType::Note,
            topic: "debrief".to_string(),
            content: content.to_string(),
            scope: "personal".to_string(),
            project: None,
            tags: Vec::new(),
            due_at: None,
        };
        self.provenance
            .remember(
                &call(tenant_id, at),
                &memory,
                ActorKind::UserMcp,
                WriteProvenance::Given(run),
            )
            .await
            .expect("write")
            .memory_id
    }

    /// The harness's triage served over gRPC on port 0 (service token, tenant metadata and the
    /// test instant on the wire), and a client of it.
    pub async fn triage_client(&self) -> TriageClient<tonic::transport::Channel> {
        let settings = ServerSettings::new(
            baton_kit::telemetry::Component::Triage,
            Secret::new(TOKEN.to_string()),
        );
        let service = TriageServer::new(TriageGrpc::new(self.triage.clone()));
        let address = serve_on_free_port(|listener| {
            baton_kit::grpc::serve(listener, settings, service, std::future::pending())
        })
        .await;
        TriageClient::new(baton_kit::grpc::channel(&address).expect("channel"))
    }
}

/// A gRPC request for `tenant` at `now`, stamped as a calling service stamps it.
pub fn request<T>(tenant_id: Uuid, now: DateTime<Utc>, message: T) -> tonic::Request<T> {
    Outbound::new(Secret::new(TOKEN.to_string())).request(
        &OutboundCall {
            tenant_id,
            test_now: Some(baton_kit::clock::iso(now)),
        },
        message,
    )
}

pub fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 1, 9, 0, 0)
        .single()
        .expect("valid")
        + chrono::Duration::minutes(minutes)
}

pub fn call(tenant_id: Uuid, now: DateTime<Utc>) -> CallContext {
    CallContext { tenant_id, now }
}
