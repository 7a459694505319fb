//! Typed configuration from the environment.
//!
//! Every setting has a default that fits a local machine, is overridden by a `BATON_`-prefixed
//! variable (`__` separates nesting, e.g. `BATON_RATE_LIMIT__REQUESTS`), and is validated when the
//! service starts: a bad value stops the process with a message naming the variable. Secrets are
//! held in [`Secret`], whose `Debug` never prints the value.

pub mod env;
pub mod secret;
pub mod service;

pub use env::{ConfigError, DEFAULT_DATABASE_URL, Env};
pub use secret::{Secret, SecretUrl};
pub use service::{CommonConfig, DEPLOYMENT_ENVIRONMENT_KEY};

#[cfg(test)]
mod tests;
