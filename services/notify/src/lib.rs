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
use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::grpc::ServerSettings;
use baton_kit::shutdown::Shutdown;
use baton_kit::telemetry::Component;
use baton_proto::notify::v1::notify_server::NotifyServer;

pub use config::NotifyConfig;

/// Notify's place in the database.
pub const DB: ContextDb = ContextDb {
    schema: "notify",
    owner_role: "baton_notify_owner",
    runtime_role: "baton_notify",
    // Claims due deliveries across tenants (scheduling columns only; see the migration).
    maintenance_role: Some("baton_notify_maint"),
};

/// Notify's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Errors that stop notify.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    Client(#[from] deliver::ClientError),
}

/// Serves notify on an already-bound listener until `shutdown` fires: the gRPC service, the
/// alerts consumer and the delivery worker. In-flight attempts and messages finish first.
pub async fn serve(
    config: NotifyConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let base = config.common.database_url.expose();
    let pool = db::connect_runtime(
        base,
        config
            .database_url
            .as_ref()
            .map(baton_kit::config::SecretUrl::expose),
        &DB,
        config.common.database_max_connections,
    )
    .await?;
    let maintenance = db::connect_maintenance(
        base,
        config
            .maintenance_database_url
            .as_ref()
            .map(baton_kit::config::SecretUrl::expose),
        &DB,
        2,
    )
    .await?;
    // Not ready until the schema is the one this binary was built for (`--no-migrate` pods).
    let readiness = baton_kit::schema::gate(pool.clone(), &DB, migrator(), shutdown.clone());
    let policy =
        address::AddressPolicy::from_allow_private(config.delivery.allow_private_addresses);
    let worker = deliver::Worker::new(pool.clone(), maintenance, config.delivery.clone())?;
    let wake = worker.waker();
    let delivering = tokio::spawn(worker.run(shutdown.clone()));
    let handler_pool = pool.clone();
    let consuming = tokio::spawn(consumer::run(
        config.bus.clone(),
        topology::NOTIFY_ALERTS,
        move |received| consume::handle(handler_pool.clone(), wake.clone(), received),
        shutdown.clone(),
    ));
    let settings = ServerSettings::new(Component::Notify, config.common.service_token.clone())
        .with_readiness(readiness)
        .with_tls(config.common.grpc_tls.clone());
    let grpc = grpc::NotifyGrpc::new(
        service::Notify::new(pool, policy),
        Clock::new(config.common.test_clock),
    );
    let served =
        baton_kit::grpc::serve(listener, settings, NotifyServer::new(grpc), shutdown.wait()).await;
    let _ = consuming.await;
    let _ = delivering.await;
    served?;
    Ok(())
}
