//! Triage settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::config::peers::{ProvenancePeer, RegistryPeer};
use baton_kit::config::values::{Int, Listen, Span, days, mins, secs};
use baton_kit::config::{
    CommonConfig, ConfigError, Env, OwnDatabase, Renamed, SecretUrl, Settings, load,
};
use serde::{Deserialize, Serialize};

use crate::decide::Thresholds;

/// Triage's own settings, `BATON_TRIAGE__<FIELD>`: where it listens and when a Stop is worth a
/// debrief.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TriageSettings {
    /// gRPC listen address.
    pub listen: Listen<50053>,
    /// Full database URL for the triage role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Turns a session must have had before a Stop asks for a debrief.
    pub min_turns: Int<3, 0, 100_000>,
    /// Time a session must have run before a Stop asks for a debrief.
    pub min_elapsed: Span<{ mins(10) }, 0, { days(7) }>,
    /// Age an unanswered debrief attempt must reach before another is asked for.
    pub min_attempt_age: Span<{ secs(30) }, { secs(1) }, { mins(10) }>,
}

impl Settings for TriageSettings {
    const SECTION: &'static str = "triage";
    const RENAMED: &'static [Renamed] = &[
        Renamed::new("BATON_TRIAGE_MIN_TURNS", "min_turns"),
        Renamed::new("BATON_TRIAGE_MIN_ELAPSED", "min_elapsed"),
        Renamed::new("BATON_TRIAGE_MIN_ATTEMPT_AGE", "min_attempt_age"),
    ];
}

/// The services triage calls (`BATON_<SERVICE>__ADDR`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TriageCalls {
    pub registry: RegistryPeer,
    pub provenance: ProvenancePeer,
}

impl Settings for TriageCalls {
    const SECTION: &'static str = "";
}

/// Everything triage needs to start.
#[derive(Debug, Clone)]
pub struct TriageConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_TRIAGE__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    /// Registry and provenance addresses (`BATON_REGISTRY__ADDR`, `BATON_PROVENANCE__ADDR`).
    pub registry_addr: String,
    pub provenance_addr: String,
    pub thresholds: Thresholds,
}

fn chrono(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

impl TriageConfig {
    pub fn from_env(env: &Env) -> Result<TriageConfig, ConfigError> {
        let settings: TriageSettings = load(env)?;
        let common = CommonConfig::from_env(env)?;
        let calls: TriageCalls = load(env)?;
        Ok(TriageConfig {
            common,
            listen: settings.listen.get(),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: None,
            },
            registry_addr: calls.registry.addr(),
            provenance_addr: calls.provenance.addr(),
            thresholds: Thresholds {
                min_turns: settings.min_turns.get() as u32,
                min_elapsed: chrono(settings.min_elapsed.get()),
                min_attempt_age: chrono(settings.min_attempt_age.get()),
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
            let env = base.clone().with("BATON_TRIAGE__MIN_ATTEMPT_AGE", bad);
            assert!(TriageConfig::from_env(&env).is_err(), "{bad}");
        }
        let env = base.clone().with("BATON_TRIAGE__MIN_ATTEMPT_AGE", "600s");
        assert!(TriageConfig::from_env(&env).is_ok());
        let old = base.with("BATON_TRIAGE_MIN_ATTEMPT_AGE", "601s");
        assert_eq!(
            TriageConfig::from_env(&old)
                .expect_err("old name, same bound")
                .key,
            "BATON_TRIAGE_MIN_ATTEMPT_AGE",
            "the error names the variable that was set"
        );
    }
}
