//! `baton-closer`: after a session ends — explicitly at SessionEnd, or implicitly when its lease
//! runs out — a background pass reads what the session was briefed on and what it wrote, and
//! resolves the briefed commitments it completed (schema `closer`).
//!
//! Resolve only, reversible, fenced on the activation epoch ([`pass`]). Passes start from
//! `registry.session.closed` messages ([`consume`]) and from the periodic sweep's retries
//! ([`sweep`]). [`judge`] holds the deciders; [`metering`] the generation budget; [`eval`] the
//! corpus evaluation. The kill switch (`BATON_CLOSER__ENABLED`, default off) stops the sweep and
//! the consumer: nothing runs, nothing is billed, messages wait in their queue.

pub mod budget_gauge;
pub mod config;
pub mod consume;
pub mod eval;
pub mod grpc;
pub mod judge;
pub mod links;
pub mod links_report;
pub mod metering;
pub mod outcome;
pub mod pass;
mod pass_metrics;
pub mod report;
pub mod store;
pub mod sweep;
pub mod undo;
pub mod verdicts;

use std::sync::Arc;

use tokio::net::TcpListener;

use baton_kit::bus::{consumer, topology};
use baton_kit::db::ContextDb;
use baton_kit::grpc::Outbound;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::closer::v1::closer_server::CloserServer;

pub use baton_kit::start::ServeError;
pub use config::CloserConfig;

/// The closer's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("closer", maintenance);

/// The closer's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves the closer until `shutdown` fires: its gRPC service always, the consumer and the
/// sweep only when enabled.
pub async fn serve(
    config: CloserConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let place = start::Context::new(Component::Closer, &DB, &config.common, &config.database);
    let Started {
        pool,
        settings,
        clock,
    } = place.start(migrator(), shutdown.clone()).await?;
    // Lazy channels: the listing and the report read the owners even while disabled.
    let links = links::Links::new(
        place.channel(&config.registry_addr)?,
        place.channel(&config.provenance_addr)?,
        place.channel(&config.triage_addr)?,
        Outbound::new(&config.common.service_token),
    );
    if !config.enabled {
        tracing::info!("closer disabled (BATON_CLOSER__ENABLED=false): no sweep, no passes");
        let grpc = grpc::CloserGrpc::new(None, pool, links, clock);
        baton_kit::grpc::serve(listener, settings, CloserServer::new(grpc), shutdown.wait())
            .await?;
        return Ok(());
    }
    let lock_pool = place
        .runtime_pool(u32::from(topology::CLOSER_SESSION_CLOSED.prefetch) + 4)
        .await?;
    let maintenance = place.maintenance_pool(4).await?;
    let meter = metering::Meter::new(pool.clone(), config.default_monthly_tokens);
    let passes = Arc::new(
        pass::Passes::new(
            pool.clone(),
            lock_pool,
            links.clone(),
            judge::from_config(&config.judge).map_err(ServeError::setup)?,
            meter,
        )
        .with_backoff(config.backoff)
        .with_min_confidence(config.min_confidence),
    );
    let sweeper = sweep::Sweeper::new(passes.clone(), maintenance);
    // Under the test clock "now" belongs to each request; a sweep on the system clock would
    // close sessions a test placed in the past. Sweeps then run only on demand (`Sweep`).
    let sweeping = (!config.common.test_clock).then(|| {
        tokio::spawn(
            sweeper
                .clone()
                .run(config.sweep_interval, clock, shutdown.clone()),
        )
    });
    let handler_passes = passes.clone();
    let consuming = tokio::spawn(consumer::run(
        config.bus.clone(),
        topology::CLOSER_SESSION_CLOSED,
        move |received| consume::handle(handler_passes.clone(), clock, received),
        shutdown.clone(),
    ));
    let grpc = grpc::CloserGrpc::new(Some(sweeper), pool, links, clock);
    let served =
        baton_kit::grpc::serve(listener, settings, CloserServer::new(grpc), shutdown.wait()).await;
    let _ = consuming.await;
    if let Some(sweeping) = sweeping {
        let _ = sweeping.await;
    }
    served?;
    Ok(())
}
