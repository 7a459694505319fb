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
#[doc(hidden)]
pub mod testing;
pub mod validate;
pub mod writes;

use std::future::Future;

use tokio::net::TcpListener;

use baton_kit::db::ContextDb;
use baton_kit::grpc::Outbound;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::provenance::v1::provenance_server::ProvenanceServer;

pub use baton_kit::start::ServeError;
pub use config::ProvenanceConfig;

/// Provenance's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("provenance");

/// Provenance's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves provenance on an already-bound listener until `shutdown` resolves.
pub async fn serve(
    config: ProvenanceConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    // `shutdown` is a bare future the schema gate cannot watch: the gate ends once the schema
    // matches, or with the process.
    let place = start::Context::new(Component::Provenance, &DB, &config.common, &config.database);
    let Started {
        pool,
        settings,
        clock,
    } = place.start(migrator(), Shutdown::never()).await?;
    let link = link::RegistryLink::new(
        place.channel(&config.registry_addr)?,
        Outbound::new(&config.common.service_token),
    );
    let service = service::Provenance::new(pool, link, clock);
    let server = ProvenanceServer::new(grpc::ProvenanceGrpc::new(service));
    baton_kit::grpc::serve(listener, settings, server, shutdown).await?;
    Ok(())
}
