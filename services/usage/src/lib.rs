//! `baton-usage`: the usage context (schema `usage`, seed 002). What every machine's
//! transcripts say, as identifiers and counts only: sessions, agent trees with their edges,
//! token usage one row per dedup key with 15-minute rollups, dated prices, and the immutable
//! record of hook deliveries.
//!
//! [`validate`] checks a batch at the boundary; [`decide`] applies the transcripts' collision
//! rule; [`upload`] writes a batch in one tenant transaction, one bulk statement per table of
//! [`store`] (where each merge rule lives); [`keys`] names the natural keys; [`rollups`] keeps
//! the per-bucket sums; [`pricing`] holds the dated tables (models and server tools) and
//! re-prices on import ([`reprice`]); [`status`], [`savings`] and [`figures`] are the read-side
//! decisions, [`aggregate`] the sums they read; [`query`], [`tree`], [`sessions`] and
//! [`session_figures`] the reads (the last two summarise a session through [`summaries`]);
//! [`retention`] prunes old deliveries; [`metrics`] counts and times the uploads.

pub mod aggregate;
pub mod budgets;
pub mod config;
pub mod decide;
pub mod figures;
pub mod grpc;
pub mod keys;
pub mod metrics;
pub mod pricing;
pub mod query;
pub mod reprice;
pub mod retention;
pub mod rollups;
pub mod row_price;
pub mod runaway;
pub mod savings;
pub mod session_figures;
pub mod sessions;
pub mod status;
pub mod store;
pub mod stored_row;
pub mod summaries;
pub mod tree;
pub mod upload;
pub mod validate;

use tokio::net::TcpListener;
use tonic::codec::CompressionEncoding;

use baton_kit::bus::outbox::Relay;
use baton_kit::db::ContextDb;
use baton_kit::shutdown::Shutdown;
use baton_kit::start::{self, Started};
use baton_kit::telemetry::Component;
use baton_proto::usage::v1::usage_server::UsageServer;

pub use baton_kit::start::ServeError;
pub use config::UsageConfig;

/// The usage context's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("usage", maintenance);

/// Largest decoded (decompressed) request: a full batch with room to spare.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The usage context's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Serves usage on an already-bound listener until `shutdown` fires, with the periodic
/// retention run beside it (not under the test clock).
pub async fn serve(
    config: UsageConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let place = start::Context::new(Component::Usage, &DB, &config.common, &config.database);
    let Started {
        pool,
        settings,
        clock,
    } = place.start(migrator(), shutdown.clone()).await?;
    let maintenance = place.maintenance_pool(3).await?;
    // The outbox relay publishes usage.budget.crossed (and later messages) to the bus.
    let relay = Relay::new(
        Component::Usage,
        maintenance.clone(),
        budgets::check::OUTBOX,
        config.bus.clone(),
    );
    let relay_waker = relay.waker();
    let relay_task = tokio::spawn(relay.run(shutdown.clone()));
    let retention = if config.common.test_clock {
        None
    } else {
        Some(tokio::spawn(retention::run_periodically(
            maintenance,
            config.retention,
            shutdown.clone(),
        )))
    };
    let service = UsageServer::new(
        grpc::UsageGrpc::new(pool, clock, config.watchdog_window).with_relay(relay_waker),
    )
    .accept_compressed(CompressionEncoding::Gzip)
    .accept_compressed(CompressionEncoding::Zstd)
    .max_decoding_message_size(MAX_MESSAGE_BYTES);
    let served = baton_kit::grpc::serve(listener, settings, service, shutdown.wait()).await;
    if let Some(retention) = retention {
        let _ = retention.await;
    }
    let _ = relay_task.await;
    served?;
    Ok(())
}
