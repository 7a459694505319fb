//! Closer settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::{CommonConfig, ConfigError, Env, Secret, SecretUrl};

/// Which judge decides what a session completed.
#[derive(Debug, Clone)]
pub enum JudgeConfig {
    /// The deterministic evidence judge (the default).
    Evidence,
    /// Any OpenAI-compatible chat-completions endpoint.
    OpenAi {
        /// Base URL, e.g. `https://api.openai.com/v1` (`BATON_CLOSER_JUDGE_URL`).
        url: String,
        model: String,
        key: Option<Secret>,
        /// Output tokens a verdict may use (`BATON_CLOSER_JUDGE_MAX_TOKENS`, 400).
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
    pub database_url: Option<SecretUrl>,
    pub maintenance_database_url: Option<SecretUrl>,
    /// Kill switch (`BATON_CLOSER_ENABLED`, default false): no sweep, no consumption, passes
    /// do nothing. Messages wait in their durable queue.
    pub enabled: bool,
    /// `BATON_SWEEP_INTERVAL`, default 20 min.
    pub sweep_interval: Duration,
    pub registry_addr: String,
    pub provenance_addr: String,
    pub triage_addr: String,
    pub bus: BusConfig,
    pub judge: JudgeConfig,
    /// Tokens a tenant may spend on generations per calendar month when it has no budget row
    /// (`BATON_CLOSER_MONTHLY_TOKEN_BUDGET`, 2,000,000).
    pub default_monthly_tokens: i64,
    /// Retry schedule of refused and failed passes (`BATON_CLOSER_BACKOFF_BASE`, default
    /// 20 min; `BATON_CLOSER_BACKOFF_MAX`, default 4 h; the seed's CLOSER_BACKOFF_*).
    pub backoff: crate::outcome::Backoff,
    /// The abstention margin (`BATON_CLOSER_MIN_CONFIDENCE`, in [0, 1], default
    /// [`DEFAULT_MIN_CONFIDENCE`]): a finding the judge is less sure of stays open. The default
    /// is the lowest threshold at which the evidence judge's spurious rate on the development
    /// corpora (`eval/closer`, `eval/closer/real/dev`) is at most 1% (`make eval-closer` prints
    /// the curve).
    pub min_confidence: f64,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50054";

/// Default abstention margin (see [`CloserConfig::min_confidence`]).
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.5;

fn min_confidence(env: &Env) -> Result<f64, ConfigError> {
    const KEY: &str = "BATON_CLOSER_MIN_CONFIDENCE";
    let value: f64 = env.parse(KEY, DEFAULT_MIN_CONFIDENCE)?;
    if !(0.0..=1.0).contains(&value) {
        return Err(ConfigError::new(KEY, "must be between 0 and 1"));
    }
    Ok(value)
}

fn backoff(env: &Env) -> Result<crate::outcome::Backoff, ConfigError> {
    let base = env.bounded_duration(
        "BATON_CLOSER_BACKOFF_BASE",
        crate::outcome::BACKOFF_BASE,
        Duration::from_secs(1),
        Duration::from_secs(24 * 3600),
    )?;
    let max = env.bounded_duration(
        "BATON_CLOSER_BACKOFF_MAX",
        crate::outcome::BACKOFF_MAX,
        Duration::from_secs(1),
        Duration::from_secs(7 * 24 * 3600),
    )?;
    if max < base {
        return Err(ConfigError::new(
            "BATON_CLOSER_BACKOFF_MAX",
            "must not be shorter than BATON_CLOSER_BACKOFF_BASE",
        ));
    }
    Ok(crate::outcome::Backoff { base, max })
}

fn judge(env: &Env) -> Result<JudgeConfig, ConfigError> {
    match env.string("BATON_CLOSER_JUDGE", "evidence").as_str() {
        "evidence" => Ok(JudgeConfig::Evidence),
        "openai" => Ok(JudgeConfig::OpenAi {
            url: env
                .optional_string("BATON_CLOSER_JUDGE_URL")
                .ok_or_else(|| {
                    ConfigError::new("BATON_CLOSER_JUDGE_URL", "required for the openai judge")
                })?,
            model: env.string("BATON_CLOSER_JUDGE_MODEL", "gpt-4o-mini"),
            key: env.secret("BATON_CLOSER_JUDGE_KEY"),
            max_tokens: env.bounded_u64("BATON_CLOSER_JUDGE_MAX_TOKENS", 400, 16, 4096)? as u32,
            timeout: env.bounded_duration(
                "BATON_CLOSER_JUDGE_TIMEOUT",
                Duration::from_secs(30),
                Duration::from_millis(100),
                Duration::from_secs(300),
            )?,
        }),
        _ => Err(ConfigError::new(
            "BATON_CLOSER_JUDGE",
            "must be evidence or openai (lexical is an evaluation baseline only: its verdicts carry no evidence)",
        )),
    }
}

impl CloserConfig {
    pub fn from_env(env: &Env) -> Result<CloserConfig, ConfigError> {
        Ok(CloserConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_CLOSER__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_CLOSER__DATABASE_URL"),
            maintenance_database_url: env
                .optional_secret_url("BATON_CLOSER__MAINTENANCE_DATABASE_URL"),
            enabled: env.bool("BATON_CLOSER_ENABLED", false)?,
            sweep_interval: env.bounded_duration(
                "BATON_SWEEP_INTERVAL",
                Duration::from_secs(20 * 60),
                Duration::from_secs(1),
                Duration::from_secs(24 * 3600),
            )?,
            registry_addr: env.string("BATON_REGISTRY__ADDR", "127.0.0.1:50051"),
            provenance_addr: env.string("BATON_PROVENANCE__ADDR", "127.0.0.1:50052"),
            triage_addr: env.string("BATON_TRIAGE__ADDR", "127.0.0.1:50053"),
            bus: BusConfig::from_env(env)?,
            judge: judge(env)?,
            default_monthly_tokens: env.bounded_u64(
                "BATON_CLOSER_MONTHLY_TOKEN_BUDGET",
                2_000_000,
                0,
                1_000_000_000_000,
            )? as i64,
            backoff: backoff(env)?,
            min_confidence: min_confidence(env)?,
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
                Some(value) => Env::from_pairs([("BATON_CLOSER_MIN_CONFIDENCE", value)]),
                None => Env::from_pairs(Vec::<(String, String)>::new()),
            };
            assert_eq!(min_confidence(&env).ok(), expected, "{raw:?}");
        }
    }
}
