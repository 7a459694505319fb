//! `baton-notify`: tells tenants about alerts raised on the bus, through their webhooks
//! (schema `notify`).
//!
//! A tenant registers webhooks over gRPC ([`grpc`], [`service`]): a URL, the events it wants
//! (`budget.crossed`, `runaway.flagged`), a body format (Baton's JSON or Slack's
//! `{"text": ...}`), and a signing secret the service generates and shows once ([`signing`]
//! documents how a receiver verifies a delivery). The consumer ([`consume`]) turns each
//! `usage.budget.crossed` / `usage.runaway.flagged` message into one pending delivery per
//! subscribed webhook, in one transaction, idempotent per (webhook, message). The worker
//! ([`deliver`]) sends them signed, logs every attempt and retries failures with jittered
//! exponential backoff. In hosted mode it only ever connects to public addresses it vetted
//! itself ([`address`]).

pub mod address;
pub mod backoff;
pub mod config;
pub mod consume;
pub mod deliver;
pub mod grpc;
pub mod metrics;
pub mod render;
pub mod service;
pub mod signing;
pub mod store;
pub mod webhook;

use tokio::net::TcpListener;

use baton_kit::bus::{consumer, topology};
use baton_kit::db::ContextDb;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::notify::v1::notify_server::NotifyServer;

pub use baton_kit::start::ServeError;
pub use config::NotifyConfig;

/// Notify's place in the database. Its maintenance role claims due deliveries across tenants
/// (scheduling columns only; see the migration).
pub const DB: ContextDb = baton_kit::context_db!("notify", maintenance);

/// Notify's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves notify on an already-bound listener until `shutdown` fires: the gRPC service, the
/// alerts consumer and the delivery worker. In-flight attempts and messages finish first.
pub async fn serve(
    config: NotifyConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let place = start::Context::new(Component::Notify, &DB, &config.common, &config.database);
    // Both pools connect before the schema gate starts: `gated` rather than `start`.
    let runtime = place
        .runtime_pool(config.common.database_max_connections)
        .await?;
    let maintenance = place.maintenance_pool(2).await?;
    let Started {
        pool,
        settings,
        clock,
    } = place.gated(runtime, migrator(), shutdown.clone());
    let policy =
        address::AddressPolicy::from_allow_private(config.delivery.allow_private_addresses);
    let worker = deliver::Worker::new(pool.clone(), maintenance, config.delivery.clone())
        .map_err(ServeError::setup)?;
    let wake = worker.waker();
    let delivering = tokio::spawn(worker.run(shutdown.clone()));
    let handler_pool = pool.clone();
    let consuming = tokio::spawn(consumer::run(
        config.bus.clone(),
        topology::NOTIFY_ALERTS,
        move |received| consume::handle(handler_pool.clone(), wake.clone(), received),
        shutdown.clone(),
    ));
    let grpc = grpc::NotifyGrpc::new(service::Notify::new(pool, policy), clock);
    let served =
        baton_kit::grpc::serve(listener, settings, NotifyServer::new(grpc), shutdown.wait()).await;
    let _ = consuming.await;
    let _ = delivering.await;
    served?;
    Ok(())
}
