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
use baton_kit::db::ContextDb;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::registry::v1::session_registry_server::SessionRegistryServer;

pub use baton_kit::start::ServeError;
pub use config::RegistryConfig;

/// The registry's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("registry", maintenance);

/// The registry's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves the registry on an already-bound listener until `shutdown` fires; the outbox relay
/// runs alongside it.
pub async fn serve(
    config: RegistryConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let place = start::Context::new(Component::Registry, &DB, &config.common, &config.database);
    let Started {
        pool,
        settings,
        clock,
    } = place.start(migrator(), shutdown.clone()).await?;
    let maintenance = place.maintenance_pool(4).await?;
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
    let grpc = grpc::RegistryGrpc::new(registry, sweeper, clock);
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
