//! Usage settings.

use std::net::SocketAddr;
use std::time::Duration;

use baton_kit::bus::BusConfig;
use baton_kit::config::values::{Int, Listen, Span, SpanOrSeconds, days, hours, mins, secs};
use baton_kit::config::{
    CommonConfig, ConfigError, Env, OwnDatabase, Renamed, SecretUrl, Settings, load,
};
use serde::{Deserialize, Serialize};

/// The usage service's own settings, `BATON_USAGE__<FIELD>`; each type declares the default
/// and the bounds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct UsageSettings {
    /// gRPC listen address.
    pub listen: Listen<50055>,
    /// Full database URL for the usage role, instead of the base URL.
    pub database_url: Option<SecretUrl>,
    /// Full database URL for the maintenance role (retention, the outbox relay).
    pub maintenance_database_url: Option<SecretUrl>,
    /// A non-terminal agent quiet for longer reads `unknown` (seed 002's watchdog); a plain
    /// number is seconds.
    pub watchdog_window: SpanOrSeconds<{ mins(10) }, { secs(1) }, { days(7) }>,
    /// Days a hook delivery is kept (seed 002: 90); 0 keeps them forever.
    pub retention_days: Int<90, 0, 36_500>,
    /// Rows deleted per statement by retention.
    pub retention_batch: Int<5000, 1, 1_000_000>,
    /// How often the service runs retention.
    pub retention_interval: Span<{ hours(1) }, { secs(1) }, { days(7) }>,
}

impl Settings for UsageSettings {
    const SECTION: &'static str = "usage";
    const RENAMED: &'static [Renamed] = &[Renamed::new("BATON_WATCHDOG_WINDOW", "watchdog_window")];
}

/// Everything the usage service needs to start.
#[derive(Debug, Clone)]
pub struct UsageConfig {
    pub common: CommonConfig,
    /// gRPC listen address (`BATON_USAGE__LISTEN`).
    pub listen: SocketAddr,
    /// The URLs for this context's own roles, when set.
    pub database: OwnDatabase,
    /// A non-terminal agent quiet for longer reads `unknown` (`BATON_USAGE__WATCHDOG_WINDOW`,
    /// 10 min).
    pub watchdog_window: Duration,
    pub retention: RetentionConfig,
    /// The broker the outbox relay publishes `usage.budget.crossed` to (`BATON_AMQP_URL`, ...).
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
        RetentionConfig::from(&UsageSettings::default())
    }
}

impl From<&UsageSettings> for RetentionConfig {
    fn from(settings: &UsageSettings) -> RetentionConfig {
        RetentionConfig {
            days: settings.retention_days.get() as u32,
            batch: settings.retention_batch.get() as u32,
            interval: settings.retention_interval.get(),
        }
    }
}

impl RetentionConfig {
    pub fn from_env(env: &Env) -> Result<RetentionConfig, ConfigError> {
        load::<UsageSettings>(env).map(|settings| RetentionConfig::from(&settings))
    }
}

impl UsageConfig {
    pub fn from_env(env: &Env) -> Result<UsageConfig, ConfigError> {
        let common = CommonConfig::from_env(env)?;
        let settings: UsageSettings = load(env)?;
        let bus = BusConfig::from_env(env)?;
        Ok(UsageConfig {
            common,
            listen: settings.listen.get(),
            retention: RetentionConfig::from(&settings),
            database: OwnDatabase {
                url: settings.database_url,
                maintenance_url: settings.maintenance_database_url,
            },
            watchdog_window: settings.watchdog_window.get(),
            bus,
        })
    }
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
                Some(text) => base.clone().with("BATON_USAGE__WATCHDOG_WINDOW", text),
                None => base.clone(),
            };
            let got = UsageConfig::from_env(&env)
                .ok()
                .map(|config| config.watchdog_window.as_secs());
            assert_eq!(got, expected, "{text:?}");
        }
        let old = base.with("BATON_WATCHDOG_WINDOW", "90");
        let config = UsageConfig::from_env(&old).expect("the old name still works");
        assert_eq!(config.watchdog_window, Duration::from_secs(90));
    }

    #[test]
    fn retention_defaults_to_ninety_days_in_windows_of_5000() {
        let env = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let config = UsageConfig::from_env(&env).expect("defaults");
        assert_eq!(
            config.retention,
            RetentionConfig {
                days: 90,
                batch: 5000,
                interval: Duration::from_secs(3600),
            }
        );
        let keep = env.clone().with("BATON_USAGE__RETENTION_DAYS", "0");
        assert_eq!(UsageConfig::from_env(&keep).expect("0").retention.days, 0);
        let bad = env.with("BATON_USAGE__RETENTION_BATCH", "0");
        assert!(UsageConfig::from_env(&bad).is_err());
    }
}
