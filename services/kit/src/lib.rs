//! `baton-kit`: what every Baton service shares.
//!
//! Config from the environment, telemetry, database helpers (pool, tenant transaction,
//! per-context migrations), gRPC plumbing (server stack, call context, outbound metadata), the
//! error-code table both transports answer from, the clock, text rules shared by contexts,
//! shutdown signals and the start-up every service's `serve` shares. Nothing here knows a domain.

pub mod bus;
pub mod clock;
pub mod config;
pub mod db;
pub mod error;
pub mod grpc;
pub mod grpc_tls;
pub mod internal_clients;
pub mod member;
pub mod schema;
pub mod selector;
pub mod service_tokens;
pub mod shape_error;
pub mod shutdown;
pub mod start;
pub mod telemetry;
pub mod text;

pub use clock::Clock;
pub use config::{ConfigError, Env, Secret};
pub use error::{ApiError, ErrorCode};

#[cfg(feature = "testing")]
pub mod testing;
