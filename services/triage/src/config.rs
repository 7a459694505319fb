//! Triage settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

use crate::decide::Thresholds;

/// Everything triage needs to start.
#[derive(Debug, Clone)]
pub struct TriageConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_TRIAGE__LISTEN`).
    pub listen: SocketAddr,
    /// Full database URL for the triage role (`BATON_TRIAGE__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// Registry and provenance addresses (`BATON_REGISTRY__ADDR`, `BATON_PROVENANCE__ADDR`).
    pub registry_addr: String,
    pub provenance_addr: String,
    pub thresholds: Thresholds,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50053";

fn chrono(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

impl TriageConfig {
    pub fn from_env(env: &Env) -> Result<TriageConfig, ConfigError> {
        let min_attempt_age = env.bounded_duration(
            "BATON_TRIAGE_MIN_ATTEMPT_AGE",
            Duration::from_secs(30),
            Duration::from_secs(1),
            Duration::from_secs(600),
        )?;
        let min_elapsed = env.bounded_duration(
            "BATON_TRIAGE_MIN_ELAPSED",
            Duration::from_secs(600),
            Duration::ZERO,
            Duration::from_secs(7 * 24 * 3600),
        )?;
        Ok(TriageConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_TRIAGE__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_TRIAGE__DATABASE_URL"),
            registry_addr: env.string("BATON_REGISTRY__ADDR", "127.0.0.1:50051"),
            provenance_addr: env.string("BATON_PROVENANCE__ADDR", "127.0.0.1:50052"),
            thresholds: Thresholds {
                min_turns: env.bounded_u64("BATON_TRIAGE_MIN_TURNS", 3, 0, 100_000)? as u32,
                min_elapsed: chrono(min_elapsed),
                min_attempt_age: chrono(min_attempt_age),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attempt_age_is_bounded_1_to_600_seconds() {
        let base = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let config = TriageConfig::from_env(&base).expect("defaults");
        assert_eq!(config.thresholds, Thresholds::default());
        for bad in ["0s", "601s", "never"] {
            let env = base.clone().with("BATON_TRIAGE_MIN_ATTEMPT_AGE", bad);
            assert!(TriageConfig::from_env(&env).is_err(), "{bad}");
        }
        let env = base.with("BATON_TRIAGE_MIN_ATTEMPT_AGE", "600s");
        assert!(TriageConfig::from_env(&env).is_ok());
    }
}
