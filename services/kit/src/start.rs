//! How a service starts: the part every `serve` shares, written once.
//!
//! Every service connects its runtime pool as its own role, keeps its health NOT_SERVING until
//! its schema is the one the binary was built for ([`crate::schema::gate`]), serves with the
//! common token and TLS settings, reads "now" through a [`Clock`] that honours test instants
//! only under the test clock, and calls its peers over traced channels with the common TLS.
//! A service names its place once, as a [`Context`]; [`Context::start`] does the first four,
//! [`Context::channel`] builds the peer channels; [`ServeError`] is what stops any of them. What only one service has (outbox relays, sweepers, retention, lock and
//! maintenance pools, a judge, a delivery worker) stays in that service's `serve`.

use std::error::Error;

use sqlx::PgPool;
use sqlx::migrate::Migrator;

use crate::clock::Clock;
use crate::config::{CommonConfig, OwnDatabase, SecretUrl};
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

/// What [`Context::start`] hands back; a service destructures it.
#[derive(Debug)]
pub struct Started {
    /// The runtime pool: the context's runtime role, `database_max_connections` connections.
    pub pool: PgPool,
    /// The component's server settings, ready only once the schema gate passed.
    pub settings: ServerSettings,
    /// `Clock::new(common.test_clock)`.
    pub clock: Clock,
}

/// One service's place, named once in its `serve`: which component it is, its schema and
/// roles, the common settings and the database URLs it was given for its own roles.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    component: Component,
    db: &'static ContextDb,
    common: &'a CommonConfig,
    own: &'a OwnDatabase,
}

impl<'a> Context<'a> {
    pub fn new(
        component: Component,
        db: &'static ContextDb,
        common: &'a CommonConfig,
        own: &'a OwnDatabase,
    ) -> Context<'a> {
        Context {
            component,
            db,
            common,
            own,
        }
    }

    /// Connects the runtime pool and gates readiness on the schema; see [`Context::gated`].
    pub async fn start(
        &self,
        migrator: Migrator,
        gate_shutdown: Shutdown,
    ) -> Result<Started, DbError> {
        let pool = self
            .runtime_pool(self.common.database_max_connections)
            .await?;
        Ok(self.gated(pool, migrator, gate_shutdown))
    }

    /// Starts the schema gate on `pool` and builds the settings around it. Split from
    /// [`Context::start`] for a service that connects another pool before the gate starts
    /// (notify).
    ///
    /// The gate watches until the schema matches or `gate_shutdown` fires. A service whose own
    /// stop signal is a bare future passes `Shutdown::never()`: its gate then ends only once the
    /// schema matches, or with the process.
    pub fn gated(&self, pool: PgPool, migrator: Migrator, gate_shutdown: Shutdown) -> Started {
        // Not ready until the schema is the one this binary was built for (`--no-migrate` pods).
        let readiness = schema::gate(pool.clone(), self.db, migrator, gate_shutdown);
        let settings = ServerSettings::new(self.component, self.common.service_token.clone())
            .with_readiness(readiness)
            .with_tls(self.common.grpc_tls.clone());
        Started {
            pool,
            settings,
            clock: Clock::new(self.common.test_clock),
        }
    }

    /// A pool of `max_connections` as the context's runtime role ([`db::connect_runtime`]);
    /// also for a second runtime pool sized for one job (the closer's session locks).
    pub async fn runtime_pool(&self, max_connections: u32) -> Result<PgPool, DbError> {
        let own = self.own.url.as_ref().map(SecretUrl::expose);
        db::connect_runtime(self.common_url(), own, self.db, max_connections).await
    }

    /// A pool of `max_connections` as the context's maintenance role
    /// ([`db::connect_maintenance`]).
    pub async fn maintenance_pool(&self, max_connections: u32) -> Result<PgPool, DbError> {
        let own = self.own.maintenance_url.as_ref().map(SecretUrl::expose);
        db::connect_maintenance(self.common_url(), own, self.db, max_connections).await
    }

    /// `BATON_DATABASE_URL`: where a role without its own URL connects.
    fn common_url(&self) -> &str {
        self.common.database_url.expose()
    }

    /// A lazily-connecting channel to the peer at `address`, with the common TLS, its calls
    /// traced as this component's.
    pub fn channel(&self, address: &str) -> Result<TracedChannel, ApiError> {
        traced_channel_with_tls(self.component, address, self.common.grpc_tls.as_ref())
    }
}
