//! `baton-registry`: session identity, lease and activation epoch (schema `registry`).
//!
//! Registry is the authority on who is running, since when, whether a run is live or closed
//! (explicitly or implicitly) and at which epoch. The decisions of CONTRACT Part 2 tables A–D
//! live in [`decide`] as pure functions; [`service`] applies them under a row lock in one
//! transaction; [`grpc`] adapts `baton.registry.v1` onto them.

pub mod config;
pub mod console_reads;
pub mod console_store;
pub mod cursor;
pub mod decide;
pub mod episodes;
pub mod grpc;
pub mod grpc_console;
pub mod grpc_liveness;
pub mod live_batch;
pub mod liveness;
pub mod machines;
pub mod members;
pub mod messages;
pub mod report;
pub mod service;
pub mod session;
pub mod session_list;
pub mod store;
pub mod sweep;
pub mod validate;

use tokio::net::TcpListener;

use baton_kit::bus::outbox::Relay;
use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::grpc::ServerSettings;
use baton_kit::shutdown::Shutdown;
use baton_kit::telemetry::Component;
use baton_proto::registry::v1::session_registry_server::SessionRegistryServer;

pub use config::RegistryConfig;

/// The registry's place in the database.
pub const DB: ContextDb = ContextDb {
    schema: "registry",
    owner_role: "baton_registry_owner",
    runtime_role: "baton_registry",
    maintenance_role: Some("baton_registry_maint"),
};

/// The registry's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Errors that stop the registry.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Serves the registry on an already-bound listener until `shutdown` fires; the outbox relay
/// runs alongside it.
pub async fn serve(
    config: RegistryConfig,
    listener: TcpListener,
    shutdown: Shutdown,
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
    let readiness = baton_kit::schema::gate(pool.clone(), &DB, migrator(), shutdown.clone());
    let maintenance = db::connect_maintenance(
        config.common.database_url.expose(),
        config
            .maintenance_database_url
            .as_ref()
            .map(baton_kit::config::SecretUrl::expose),
        &DB,
        4,
    )
    .await?;
    let relay = Relay::new(
        Component::Registry,
        maintenance.clone(),
        messages::OUTBOX,
        config.bus.clone(),
    );
    let lease = session::Lease::new(config.lease);
    let registry = service::Registry::new(pool, lease)
        .with_liveness_window(config.liveness_window)
        .with_relay(relay.waker());
    let sweeper = sweep::Sweeper::new(maintenance, lease, config.grace).with_relay(relay.waker());
    let relay_task = tokio::spawn(relay.run(shutdown.clone()));
    let clock = Clock::new(config.common.test_clock);
    let grpc = grpc::RegistryGrpc::new(registry, sweeper, clock);
    let settings = ServerSettings::new(Component::Registry, config.common.service_token.clone())
        .with_readiness(readiness)
        .with_tls(config.common.grpc_tls.clone());
    let served = baton_kit::grpc::serve(
        listener,
        settings,
        SessionRegistryServer::new(grpc),
        shutdown.wait(),
    )
    .await;
    let _ = relay_task.await;
    served?;
    Ok(())
}
