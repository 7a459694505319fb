//! `baton-registry`: session identity, lease and activation epoch (schema `registry`).
//!
//! Registry is the authority on who is running, since when, whether a run is live or closed
//! (explicitly or implicitly) and at which epoch. The decisions of CONTRACT Part 2 tables A–D
//! live in [`decide`] as pure functions; [`service`] applies them under a row lock in one
//! transaction; [`grpc`] adapts `baton.registry.v1` onto them.

pub mod config;
pub mod decide;
pub mod grpc;
pub mod live_batch;
pub mod service;
pub mod session;
pub mod store;
pub mod validate;

use std::future::Future;

use tokio::net::TcpListener;

use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::grpc::ServerSettings;
use baton_proto::registry::v1::session_registry_server::SessionRegistryServer;

pub use config::RegistryConfig;

/// The registry's place in the database.
pub const DB: ContextDb = ContextDb {
    schema: "registry",
    owner_role: "baton_registry_owner",
    runtime_role: "baton_registry",
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

/// Serves the registry on an already-bound listener until `shutdown` resolves.
pub async fn serve(
    config: RegistryConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let pool = db::connect_runtime(
        &config.common.database_url,
        config.database_url.as_deref(),
        &DB,
        config.common.database_max_connections,
    )
    .await?;
    let registry = service::Registry::new(pool, session::Lease::new(config.lease));
    let clock = Clock::new(config.common.test_clock);
    let grpc = grpc::RegistryGrpc::new(registry, clock);
    let settings = ServerSettings::new(config.common.service_token.clone());
    baton_kit::grpc::serve(
        listener,
        settings,
        SessionRegistryServer::new(grpc),
        shutdown,
    )
    .await?;
    Ok(())
}
