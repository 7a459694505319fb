//! How a service starts: the part every `serve` shares, written once.
//!
//! Every service connects its runtime pool as its own role, keeps its health NOT_SERVING until
//! its schema is the one the binary was built for ([`crate::schema::gate`]), serves with the
//! common token and TLS settings, reads "now" through a [`Clock`] that honours test instants
//! only under the test clock, and calls its peers over traced channels with the common TLS.
//! [`start`] does the first four; [`channel`] builds the peer channels; [`ServeError`] is what
//! stops any of them. What only one service has (outbox relays, sweepers, retention, lock and
//! maintenance pools, a judge, a delivery worker) stays in that service's `serve`.

use std::error::Error;

use sqlx::PgPool;
use sqlx::migrate::Migrator;

use crate::clock::Clock;
use crate::config::{CommonConfig, SecretUrl};
use crate::db::{self, ContextDb, DbError};
use crate::error::ApiError;
use crate::grpc::{ServerSettings, TracedChannel, traced_channel_with_tls};
use crate::schema;
use crate::shutdown::Shutdown;
use crate::telemetry::Component;

/// Errors that stop a service.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] DbError),
    /// A peer channel could not be built (a bad address or TLS settings).
    #[error(transparent)]
    Client(#[from] ApiError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    /// A part only one service has could not be built (the closer's judge, notify's HTTP
    /// client). Boxed, so the kit names no domain's error types.
    #[error(transparent)]
    Setup(Box<dyn Error + Send + Sync>),
}

impl ServeError {
    /// For `map_err` at the call that builds a service's own part.
    pub fn setup(error: impl Into<Box<dyn Error + Send + Sync>>) -> ServeError {
        ServeError::Setup(error.into())
    }
}

/// What [`start`] hands back; a service destructures it.
#[derive(Debug)]
pub struct Started {
    /// The runtime pool: the context's runtime role, `database_max_connections` connections.
    pub pool: PgPool,
    /// The component's server settings, ready only once the schema gate passed.
    pub settings: ServerSettings,
    /// `Clock::new(common.test_clock)`.
    pub clock: Clock,
}

/// Connects `component`'s runtime pool (as `own_database_url` when set, else as the context's
/// runtime role on the common URL) and gates readiness on its schema; see [`gated`].
pub async fn start(
    component: Component,
    common: &CommonConfig,
    own_database_url: Option<&SecretUrl>,
    db: &'static ContextDb,
    migrator: Migrator,
    gate_shutdown: Shutdown,
) -> Result<Started, DbError> {
    let pool = runtime_pool(
        common,
        own_database_url,
        db,
        common.database_max_connections,
    )
    .await?;
    Ok(gated(component, common, pool, db, migrator, gate_shutdown))
}

/// Starts the schema gate on `pool` and builds the settings around it. Split from [`start`]
/// for a service that connects another pool before the gate starts (notify).
///
/// The gate watches until the schema matches or `gate_shutdown` fires. A service whose own
/// stop signal is a bare future passes `Shutdown::never()`: its gate then ends only once the
/// schema matches, or with the process.
pub fn gated(
    component: Component,
    common: &CommonConfig,
    pool: PgPool,
    db: &'static ContextDb,
    migrator: Migrator,
    gate_shutdown: Shutdown,
) -> Started {
    // Not ready until the schema is the one this binary was built for (`--no-migrate` pods).
    let readiness = schema::gate(pool.clone(), db, migrator, gate_shutdown);
    let settings = ServerSettings::new(component, common.service_token.clone())
        .with_readiness(readiness)
        .with_tls(common.grpc_tls.clone());
    Started {
        pool,
        settings,
        clock: Clock::new(common.test_clock),
    }
}

/// A pool of `max_connections` as the context's runtime role ([`db::connect_runtime`]); for
/// a second runtime pool sized for one job (the closer's session locks).
pub async fn runtime_pool(
    common: &CommonConfig,
    own_database_url: Option<&SecretUrl>,
    db: &ContextDb,
    max_connections: u32,
) -> Result<PgPool, DbError> {
    db::connect_runtime(
        common.database_url.expose(),
        own_database_url.map(SecretUrl::expose),
        db,
        max_connections,
    )
    .await
}

/// A pool of `max_connections` as the context's maintenance role ([`db::connect_maintenance`]),
/// as `own_maintenance_url` when set.
pub async fn maintenance_pool(
    common: &CommonConfig,
    own_maintenance_url: Option<&SecretUrl>,
    db: &ContextDb,
    max_connections: u32,
) -> Result<PgPool, DbError> {
    db::connect_maintenance(
        common.database_url.expose(),
        own_maintenance_url.map(SecretUrl::expose),
        db,
        max_connections,
    )
    .await
}

/// A lazily-connecting channel to the peer at `address`, with the common TLS, its calls
/// traced as `component`'s.
pub fn channel(
    component: Component,
    address: &str,
    common: &CommonConfig,
) -> Result<TracedChannel, ApiError> {
    traced_channel_with_tls(component, address, common.grpc_tls.as_ref())
}
