//! Closer settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::peers::{ProvenancePeer, RegistryPeer, TriagePeer};
use baton_kit::config::values::{Flag, Int, Listen, Share, Span, days, hours, millis, mins, secs};
use baton_kit::config::{
    CommonConfig, ConfigError, Env, OwnDatabase, Renamed, Secret, SecretUrl, Settings, load,
};
use serde::{Deserialize, Serialize};

use crate::outcome::{BACKOFF_BASE, BACKOFF_MAX};

/// The closer's own settings, `BATON_CLOSER__<FIELD>`; each type declares the default and the
/// bounds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct CloserSettings {
    /// gRPC listen address.
    pub listen: Listen<50054>,
    /// Full database URL for the closer role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role (the sweep, the outbox relay).
    pub maintenance_database_url: Option<SecretUrl>,
    /// Kill switch: off, there is no sweep, no consumption, and passes do nothing; messages
    /// wait in their durable queue.
    pub enabled: Flag<false>,
    /// Lease-expiry sweep cadence (one replica at a time).
    pub sweep_interval: Span<{ mins(20) }, { secs(1) }, { hours(24) }>,
    /// A refused or failed pass is retried after min(max, base · 2^(n−1)) (the seed's
    /// CLOSER_BACKOFF_*).
    pub backoff_base: Span<{ BACKOFF_BASE.as_millis() as u64 }, { secs(1) }, { hours(24) }>,
    /// The longest retry delay; not below `backoff_base`.
    pub backoff_max: Span<{ BACKOFF_MAX.as_millis() as u64 }, { secs(1) }, { days(7) }>,
    /// Which judge decides what a session completed.
    pub judge: JudgeKind,
    /// Base URL of the openai judge's endpoint (any OpenAI-compatible chat completions, e.g.
    /// `https://api.openai.com/v1`); required with that judge.
    pub judge_url: Option<String>,
    /// The openai judge's model.
    pub judge_model: JudgeModel,
    /// The openai judge's API key.
    pub judge_key: Option<Secret>,
    /// Output tokens an openai verdict may use.
    pub judge_max_tokens: Int<400, 16, 4096>,
    /// Longest an openai verdict may take.
    pub judge_timeout: Span<{ secs(30) }, { millis(100) }, { mins(5) }>,
    /// Tokens a tenant may spend on generations per calendar month when it has no budget row.
    pub monthly_token_budget: Int<2_000_000, 0, 1_000_000_000_000>,
    /// The abstention margin: a finding the judge is less sure of stays open. The default is
    /// the lowest threshold at which the evidence judge's spurious rate on the development
    /// corpora (`eval/closer`, `eval/closer/real/dev`) is at most 1% (`make eval-closer`
    /// prints the curve).
    pub min_confidence: Share<{ DEFAULT_MIN_CONFIDENCE.to_bits() }>,
}

impl Settings for CloserSettings {
    const SECTION: &'static str = "closer";
    const RENAMED: &'static [Renamed] = &[
        Renamed::new("BATON_CLOSER_ENABLED", "enabled"),
        Renamed::new("BATON_SWEEP_INTERVAL", "sweep_interval"),
        Renamed::new("BATON_CLOSER_BACKOFF_BASE", "backoff_base"),
        Renamed::new("BATON_CLOSER_BACKOFF_MAX", "backoff_max"),
        Renamed::new("BATON_CLOSER_JUDGE", "judge"),
        Renamed::new("BATON_CLOSER_JUDGE_URL", "judge_url"),
        Renamed::new("BATON_CLOSER_JUDGE_MODEL", "judge_model"),
        Renamed::new("BATON_CLOSER_JUDGE_KEY", "judge_key"),
        Renamed::new("BATON_CLOSER_JUDGE_MAX_TOKENS", "judge_max_tokens"),
        Renamed::new("BATON_CLOSER_JUDGE_TIMEOUT", "judge_timeout"),
        Renamed::new("BATON_CLOSER_MONTHLY_TOKEN_BUDGET", "monthly_token_budget"),
        Renamed::new("BATON_CLOSER_MIN_CONFIDENCE", "min_confidence"),
    ];

    fn check(&self) -> Result<(), ConfigError> {
        if self.backoff_max.get() < self.backoff_base.get() {
            return Err(ConfigError::new(
                "BATON_CLOSER__BACKOFF_MAX",
                "must not be shorter than BATON_CLOSER__BACKOFF_BASE",
            ));
        }
        if self.judge == JudgeKind::OpenAi && self.judge_url.is_none() {
            return Err(ConfigError::new(
                "BATON_CLOSER__JUDGE_URL",
                "required for the openai judge",
            ));
        }
        Ok(())
    }
}

/// `evidence` (the default) or `openai`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeKind {
    #[default]
    Evidence,
    OpenAi,
}

impl<'de> Deserialize<'de> for JudgeKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<JudgeKind, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "evidence" => Ok(JudgeKind::Evidence),
            "openai" => Ok(JudgeKind::OpenAi),
            _ => Err(serde::de::Error::custom(
                "must be evidence or openai (lexical is an evaluation baseline only: its verdicts carry no evidence)",
            )),
        }
    }
}

impl CloserSettings {
    /// The openai judge these settings describe, when its URL is set (whichever judge decides;
    /// `baton eval-closer` measures both).
    pub fn openai_judge(&self) -> Option<JudgeConfig> {
        Some(JudgeConfig::OpenAi {
            url: self.judge_url.clone()?,
            model: self.judge_model.0.clone(),
            key: self.judge_key.clone(),
            max_tokens: self.judge_max_tokens.get() as u32,
            timeout: self.judge_timeout.get(),
        })
    }
}

/// The openai judge's model, `gpt-4o-mini` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct JudgeModel(pub String);

impl Default for JudgeModel {
    fn default() -> JudgeModel {
        JudgeModel("gpt-4o-mini".to_string())
    }
}

/// The services the closer calls (`BATON_<SERVICE>__ADDR`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct CloserCalls {
    pub registry: RegistryPeer,
    pub provenance: ProvenancePeer,
    pub triage: TriagePeer,
}

impl Settings for CloserCalls {
    const SECTION: &'static str = "";
}

/// Which judge decides what a session completed.
#[derive(Debug, Clone)]
pub enum JudgeConfig {
    /// The deterministic evidence judge (the default).
    Evidence,
    /// Any OpenAI-compatible chat-completions endpoint.
    OpenAi {
        /// Base URL, e.g. `https://api.openai.com/v1` (`BATON_CLOSER__JUDGE_URL`).
        url: String,
        model: String,
        key: Option<Secret>,
        /// Output tokens a verdict may use (`BATON_CLOSER__JUDGE_MAX_TOKENS`, 400).
        max_tokens: u32,
        timeout: Duration,
    },
}

/// Everything the closer needs to start.
#[derive(Debug, Clone)]
pub struct CloserConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_CLOSER__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    /// Kill switch (`BATON_CLOSER__ENABLED`, default false): no sweep, no consumption, passes
    /// do nothing. Messages wait in their durable queue.
    pub enabled: bool,
    /// `BATON_CLOSER__SWEEP_INTERVAL`, default 20 min.
    pub sweep_interval: Duration,
    pub registry_addr: String,
    pub provenance_addr: String,
    pub triage_addr: String,
    pub bus: BusConfig,
    pub judge: JudgeConfig,
    /// Tokens a tenant may spend on generations per calendar month when it has no budget row
    /// (`BATON_CLOSER__MONTHLY_TOKEN_BUDGET`, 2,000,000).
    pub default_monthly_tokens: i64,
    /// Retry schedule of refused and failed passes (`BATON_CLOSER__BACKOFF_BASE`, default
    /// 20 min; `BATON_CLOSER__BACKOFF_MAX`, default 4 h).
    pub backoff: crate::outcome::Backoff,
    /// The abstention margin (`BATON_CLOSER__MIN_CONFIDENCE`, in [0, 1], default
    /// [`DEFAULT_MIN_CONFIDENCE`]; see [`CloserSettings::min_confidence`]).
    pub min_confidence: f64,
}

/// Default abstention margin (see [`CloserSettings::min_confidence`]).
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.5;

impl CloserConfig {
    pub fn from_env(env: &Env) -> Result<CloserConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let bus = BusConfig::from_env(env)?;
        let settings: CloserSettings = load(env)?;
        let calls: CloserCalls = load(env)?;
        let judge = match (settings.judge, settings.openai_judge()) {
            (JudgeKind::OpenAi, Some(openai)) => openai,
            _ => JudgeConfig::Evidence,
        };
        Ok(CloserConfig {
            common,
            listen: settings.listen.get(),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: settings.maintenance_database_url,
            },
            enabled: settings.enabled.get(),
            sweep_interval: settings.sweep_interval.get(),
            registry_addr: calls.registry.addr(),
            provenance_addr: calls.provenance.addr(),
            triage_addr: calls.triage.addr(),
            bus,
            judge,
            default_monthly_tokens: settings.monthly_token_budget.get() as i64,
            backoff: crate::outcome::Backoff {
                base: settings.backoff_base.get(),
                max: settings.backoff_max.get(),
            },
            min_confidence: settings.min_confidence.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_abstention_margin_is_a_share_between_zero_and_one() {
        let table = [
            (None, Some(DEFAULT_MIN_CONFIDENCE)),
            (Some("0"), Some(0.0)),
            (Some("0.8"), Some(0.8)),
            (Some("1"), Some(1.0)),
            (Some("1.5"), None),
            (Some("-0.1"), None),
            (Some("NaN"), None),
            (Some("high"), None),
        ];
        for (raw, expected) in table {
            let env = match raw {
                Some(value) => Env::from_pairs([("BATON_CLOSER__MIN_CONFIDENCE", value)]),
                None => Env::default(),
            };
            let got = load::<CloserSettings>(&env).ok();
            assert_eq!(got.map(|s| s.min_confidence.get()), expected, "{raw:?}");
        }
    }

    #[test]
    fn the_backoff_is_ordered_and_the_openai_judge_needs_its_url() {
        let inverted = Env::from_pairs([
            ("BATON_CLOSER__BACKOFF_BASE", "1h"),
            ("BATON_CLOSER__BACKOFF_MAX", "10m"),
        ]);
        let error = load::<CloserSettings>(&inverted).expect_err("inverted");
        assert_eq!(error.key, "BATON_CLOSER__BACKOFF_MAX");
        let openai = Env::from_pairs([("BATON_CLOSER_JUDGE", "openai")]);
        let error = load::<CloserSettings>(&openai).expect_err("no url");
        assert_eq!(error.key, "BATON_CLOSER__JUDGE_URL");
        let lexical = Env::from_pairs([("BATON_CLOSER__JUDGE", "lexical")]);
        let error = load::<CloserSettings>(&lexical).expect_err("baseline only");
        assert!(
            error.message.starts_with("must be evidence or openai"),
            "{error}"
        );
    }
}
