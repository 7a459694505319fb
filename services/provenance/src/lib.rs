//! `baton-provenance`: memories, the append-only event log, write-time session provenance, the
//! typed provenance read and the briefing (schema `provenance`).
//!
//! Every write asks registry how it is tied to a session ([`link`]) and stamps the same
//! `{"sessionRunId"}` payload on every event it inserts ([`writes`]). The typed read
//! ([`run_events`]) lists a run's events through the session expression index. Lifecycle rules
//! are pure functions in [`lifecycle`].

pub mod briefing;
pub mod config;
pub mod grpc;
pub mod import;
pub mod lifecycle;
pub mod link;
pub mod memory;
pub mod reads;
pub mod report;
pub mod run_events;
pub mod service;
pub mod store;
pub mod validate;
pub mod writes;

use std::future::Future;

use tokio::net::TcpListener;

use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::error::ApiError;
use baton_kit::grpc::{Outbound, ServerSettings};
use baton_kit::telemetry::Component;
use baton_proto::provenance::v1::provenance_server::ProvenanceServer;

pub use config::ProvenanceConfig;

/// Provenance's place in the database.
pub const DB: ContextDb = ContextDb {
    schema: "provenance",
    owner_role: "baton_provenance_owner",
    runtime_role: "baton_provenance",
    maintenance_role: None,
};

/// Provenance's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Errors that stop provenance.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    Client(#[from] ApiError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Serves provenance on an already-bound listener until `shutdown` resolves.
pub async fn serve(
    config: ProvenanceConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let pool = db::connect_runtime(
        config.common.database_url.expose(),
        config
            .database_url
            .as_ref()
            .map(baton_kit::config::SecretUrl::expose),
        &DB,
        config.common.database_max_connections,
    )
    .await?;
    // Not ready until the schema is the one this binary was built for (`--no-migrate` pods).
    let readiness = baton_kit::schema::gate(
        pool.clone(),
        &DB,
        migrator(),
        baton_kit::shutdown::Shutdown::never(),
    );
    let link = link::RegistryLink::new(
        baton_kit::grpc::traced_channel_with_tls(
            Component::Provenance,
            &config.registry_addr,
            config.common.grpc_tls.as_ref(),
        )?,
        Outbound::new(&config.common.service_token),
    );
    let service = service::Provenance::new(pool, link, Clock::new(config.common.test_clock));
    let settings = ServerSettings::new(Component::Provenance, config.common.service_token.clone())
        .with_readiness(readiness)
        .with_tls(config.common.grpc_tls.clone());
    let server = ProvenanceServer::new(grpc::ProvenanceGrpc::new(service));
    baton_kit::grpc::serve(listener, settings, server, shutdown).await?;
    Ok(())
}
