//! Usage settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::{CommonConfig, ConfigError, Env, SecretUrl};

/// Everything the usage service needs to start.
#[derive(Debug, Clone)]
pub struct UsageConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_USAGE__LISTEN`).
    pub listen: SocketAddr,
    /// Full database URL for the usage role (`BATON_USAGE__DATABASE_URL`).
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role (`BATON_USAGE__MAINTENANCE_DATABASE_URL`).
    pub maintenance_database_url: Option<SecretUrl>,
    /// A non-terminal agent quiet for longer reads `unknown` (`BATON_WATCHDOG_WINDOW`, 10 min).
    pub watchdog_window: Duration,
    pub retention: RetentionConfig,
    /// The broker the outbox relay publishes `usage.budget.crossed` to (`BATON_BUS__…`).
    pub bus: BusConfig,
}

/// Hook-delivery retention (seed 002: 90 days by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Days a delivery is kept (`BATON_USAGE__RETENTION_DAYS`, 90; 0 = keep forever).
    pub days: u32,
    /// Rows deleted per statement (`BATON_USAGE__RETENTION_BATCH`, 5000).
    pub batch: u32,
    /// How often the service runs it (`BATON_USAGE__RETENTION_INTERVAL`, 1h).
    pub interval: Duration,
}

impl Default for RetentionConfig {
    fn default() -> RetentionConfig {
        RetentionConfig {
            days: 90,
            batch: 5000,
            interval: Duration::from_secs(3600),
        }
    }
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50055";

impl RetentionConfig {
    pub fn from_env(env: &Env) -> Result<RetentionConfig, ConfigError> {
        Ok(RetentionConfig {
            days: env.bounded_u64("BATON_USAGE__RETENTION_DAYS", 90, 0, 36_500)? as u32,
            batch: env.bounded_u64("BATON_USAGE__RETENTION_BATCH", 5000, 1, 1_000_000)? as u32,
            interval: env.bounded_duration(
                "BATON_USAGE__RETENTION_INTERVAL",
                Duration::from_secs(3600),
                Duration::from_secs(1),
                Duration::from_secs(7 * 24 * 3600),
            )?,
        })
    }
}

impl UsageConfig {
    pub fn from_env(env: &Env) -> Result<UsageConfig, ConfigError> {
        Ok(UsageConfig {
            common: CommonConfig::from_env(env)?,
            listen: env.socket_addr("BATON_USAGE__LISTEN", DEFAULT_LISTEN)?,
            database_url: env.optional_secret_url("BATON_USAGE__DATABASE_URL"),
            maintenance_database_url: env
                .optional_secret_url("BATON_USAGE__MAINTENANCE_DATABASE_URL"),
            watchdog_window: watchdog_window(env)?,
            retention: RetentionConfig::from_env(env)?,
            bus: BusConfig::from_env(env)?,
        })
    }
}

/// `BATON_WATCHDOG_WINDOW`: humantime (`10m`) or bare seconds (`600`), 1 s .. 7 days.
pub fn watchdog_window(env: &Env) -> Result<Duration, ConfigError> {
    const KEY: &str = "BATON_WATCHDOG_WINDOW";
    let (min, max) = (Duration::from_secs(1), Duration::from_secs(7 * 24 * 3600));
    let value = match env.raw(KEY).map(str::trim) {
        Some(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Duration::from_secs(
                text.parse()
                    .map_err(|_| ConfigError::new(KEY, "not a number of seconds"))?,
            )
        }
        _ => env.duration(KEY, Duration::from_secs(600))?,
    };
    if value < min || value > max {
        return Err(ConfigError::new(KEY, "must be between 1s and 7days"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_window_takes_humantime_or_seconds_within_bounds() {
        let base = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let table = [
            (None, Some(600)),
            (Some("10m"), Some(600)),
            (Some("90"), Some(90)),
            (Some("1h 30m"), Some(5400)),
            (Some("0"), None),
            (Some("8days"), None),
            (Some("soon"), None),
        ];
        for (text, expected) in table {
            let env = match text {
                Some(text) => base.clone().with("BATON_WATCHDOG_WINDOW", text),
                None => base.clone(),
            };
            let got = UsageConfig::from_env(&env)
                .ok()
                .map(|config| config.watchdog_window.as_secs());
            assert_eq!(got, expected, "{text:?}");
        }
    }

    #[test]
    fn retention_defaults_to_ninety_days_in_windows_of_5000() {
        let env = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let config = UsageConfig::from_env(&env).expect("defaults");
        assert_eq!(config.retention, RetentionConfig::default());
        let keep = env.clone().with("BATON_USAGE__RETENTION_DAYS", "0");
        assert_eq!(UsageConfig::from_env(&keep).expect("0").retention.days, 0);
        let bad = env.with("BATON_USAGE__RETENTION_BATCH", "0");
        assert!(UsageConfig::from_env(&bad).is_err());
    }
}
