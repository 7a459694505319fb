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

use baton_kit::db::ContextDb;
use baton_kit::grpc::Outbound;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::triage::v1::triage_server::TriageServer;

pub use baton_kit::start::ServeError;
pub use config::TriageConfig;

/// Triage's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("triage");

/// Triage's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves triage on an already-bound listener until `shutdown` resolves.
pub async fn serve(
    config: TriageConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    // `shutdown` is a bare future the schema gate cannot watch: the gate ends once the schema
    // matches, or with the process.
    let place = start::Context::new(Component::Triage, &DB, &config.common, &config.database);
    let Started {
        pool,
        settings,
        clock,
    } = place.start(migrator(), Shutdown::never()).await?;
    let links = links::Links::new(
        place.channel(&config.registry_addr)?,
        place.channel(&config.provenance_addr)?,
        Outbound::new(&config.common.service_token),
    );
    let triage = service::Triage::new(pool, links, clock, config.thresholds);
    baton_kit::grpc::serve(
        listener,
        settings,
        TriageServer::new(grpc::TriageGrpc::new(triage)),
        shutdown,
    )
    .await?;
    Ok(())
}
