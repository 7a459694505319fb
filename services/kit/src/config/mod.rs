//! Typed configuration from the environment.
//!
//! Each component declares one settings struct (`CloserSettings`, `GatewaySettings`, ...), and
//! the process-wide ones live here and next to the code that uses them ([`CommonSettings`],
//! [`DatabaseTlsSettings`], `service_tokens::TokenSettings`, `grpc_tls::GrpcTlsSettings`,
//! `bus::BusSettings`). A field's doc comment says what it does and its type declares its
//! default and bounds ([`values`]); [`load`] reads one struct with figment (why figment: see
//! [`load`]'s module) and a bad value stops the process with a message naming the variable.
//!
//! Names: a component's setting is `BATON_<COMPONENT>__<FIELD>` (`BATON_CLOSER__BACKOFF_BASE`),
//! a setting the whole process shares is `BATON_<FIELD>` (`BATON_DATABASE_URL`), and where
//! callers reach a service is in that service's section (`BATON_REGISTRY__ADDR`, [`peers`]).
//! Names from before the scheme still work and log one deprecation line ([`Renamed`]).
//! Secrets are held in [`Secret`] and [`SecretUrl`], which never print their value; any
//! `BATON_<NAME>_FILE` reads `BATON_<NAME>` from a file ([`Env::with_files`]).

pub mod database_tls;
pub mod describe;
pub mod env;
pub mod load;
pub mod peers;
pub mod secret;
pub mod service;
pub mod settings;
pub mod values;

pub use database_tls::DatabaseTlsSettings;
pub use env::{ConfigError, DEFAULT_DATABASE_URL, Env};
pub use load::load;
pub use secret::{Secret, SecretUrl};
pub use service::{
    CommonConfig, CommonSettings, DEPLOYMENT_ENVIRONMENT_KEY, DatabaseUrl, OwnDatabase,
};
pub use settings::{Renamed, Settings};

#[cfg(test)]
mod tests;
