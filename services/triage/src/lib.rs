//! `baton-triage`: the server side of the Stop nudge (schema `triage`).
//!
//! It decides whether a turn end may inject a debrief, bounds injections to one per attempt
//! without trusting the harness's loop guard (the `pending` state is the cap), and tells a
//! productive continuation from a zero-write one by the set of event ids it accounted for.
//! Decisions are pure functions in [`decide`]; [`service`] applies them under the run's row
//! lock; [`debrief`] renders the words the hook injects; [`states`] answers the console's
//! batch read.

pub mod close;
pub mod config;
pub mod debrief;
pub mod decide;
pub mod grpc;
pub mod links;
pub mod report;
pub mod service;
pub mod states;
pub mod status;
pub mod store;

use std::future::Future;

use tokio::net::TcpListener;

use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::error::ApiError;
use baton_kit::grpc::{Outbound, ServerSettings};
use baton_kit::telemetry::Component;
use baton_proto::triage::v1::triage_server::TriageServer;

pub use config::TriageConfig;

/// Triage's place in the database.
pub const DB: ContextDb = ContextDb {
    schema: "triage",
    owner_role: "baton_triage_owner",
    runtime_role: "baton_triage",
    maintenance_role: None,
};

/// Triage's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Errors that stop triage.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    Client(#[from] ApiError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Serves triage on an already-bound listener until `shutdown` resolves.
pub async fn serve(
    config: TriageConfig,
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
    let links = links::Links::new(
        baton_kit::grpc::traced_channel_with_tls(
            Component::Triage,
            &config.registry_addr,
            config.common.grpc_tls.as_ref(),
        )?,
        baton_kit::grpc::traced_channel_with_tls(
            Component::Triage,
            &config.provenance_addr,
            config.common.grpc_tls.as_ref(),
        )?,
        Outbound::new(&config.common.service_token),
    );
    let triage = service::Triage::new(
        pool,
        links,
        Clock::new(config.common.test_clock),
        config.thresholds,
    );
    let settings = ServerSettings::new(Component::Triage, config.common.service_token.clone())
        .with_readiness(readiness)
        .with_tls(config.common.grpc_tls.clone());
    baton_kit::grpc::serve(
        listener,
        settings,
        TriageServer::new(grpc::TriageGrpc::new(triage)),
        shutdown,
    )
    .await?;
    Ok(())
}
