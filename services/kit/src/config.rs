//! Typed configuration from the environment.
//!
//! Every setting has a default that fits a local machine, is overridden by a `BATON_`-prefixed
//! variable (`__` separates nesting, e.g. `BATON_RATE_LIMIT__REQUESTS`), and is validated when the
//! service starts: a bad value stops the process with a message naming the variable. Secrets are
//! held in [`Secret`], whose `Debug` never prints the value.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// A configuration value that is missing or malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration {key}: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A snapshot of environment variables to read settings from.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Env {
        Env {
            vars: std::env::vars().collect(),
        }
    }

    /// An explicit set of variables (tests, embedded use).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        }
    }

    /// Returns a copy with one variable set.
    pub fn with(mut self, key: &str, value: &str) -> Env {
        self.vars.insert(key.to_string(), value.to_string());
        self
    }

    /// The raw value, treating an empty string as unset.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|value| !value.trim().is_empty())
    }

    pub fn string(&self, key: &str, default: &str) -> String {
        self.raw(key).unwrap_or(default).to_string()
    }

    pub fn optional_string(&self, key: &str) -> Option<String> {
        self.raw(key).map(str::to_string)
    }

    /// Any `FromStr` value.
    pub fn parse<T>(&self, key: &str, default: T) -> Result<T, ConfigError>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        match self.raw(key) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse()
                .map_err(|error: T::Err| ConfigError::new(key, error.to_string())),
        }
    }

    /// An integer within `[min, max]`.
    pub fn bounded_u64(
        &self,
        key: &str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, ConfigError> {
        let value = self.parse(key, default)?;
        if value < min || value > max {
            return Err(ConfigError::new(
                key,
                format!("must be between {min} and {max}, got {value}"),
            ));
        }
        Ok(value)
    }

    /// A duration written as `24h`, `90s`, `1h 30m` (humantime).
    pub fn duration(&self, key: &str, default: Duration) -> Result<Duration, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(text) => humantime::parse_duration(text.trim())
                .map_err(|error| ConfigError::new(key, format!("not a duration: {error}"))),
        }
    }

    /// A duration within `[min, max]`.
    pub fn bounded_duration(
        &self,
        key: &str,
        default: Duration,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, ConfigError> {
        let value = self.duration(key, default)?;
        if value < min || value > max {
            return Err(ConfigError::new(
                key,
                format!(
                    "must be between {} and {}",
                    humantime::format_duration(min),
                    humantime::format_duration(max)
                ),
            ));
        }
        Ok(value)
    }

    /// `1`, `true`, `yes`, `on` and their negatives.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.raw(key).map(|text| text.trim().to_ascii_lowercase()) {
            None => Ok(default),
            Some(text) => match text.as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(ConfigError::new(key, "must be true or false")),
            },
        }
    }

    pub fn socket_addr(&self, key: &str, default: &str) -> Result<SocketAddr, ConfigError> {
        let text = self.string(key, default);
        text.parse()
            .map_err(|_| ConfigError::new(key, format!("not a host:port address: {text}")))
    }

    /// A secret; `None` when unset.
    pub fn secret(&self, key: &str) -> Option<Secret> {
        self.raw(key).map(|text| Secret::new(text.to_string()))
    }

    /// A connection URL that may carry a password.
    pub fn secret_url(&self, key: &str, default: &str) -> SecretUrl {
        SecretUrl::new(self.string(key, default))
    }

    /// A connection URL that may carry a password; `None` when unset.
    pub fn optional_secret_url(&self, key: &str) -> Option<SecretUrl> {
        self.raw(key).map(|text| SecretUrl::new(text.to_string()))
    }
}

/// A value that must never be printed: its `Debug` and `Display` are redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one place that needs it (a header, a comparison).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("<redacted>")
    }
}

/// A connection URL (database, broker) whose password must never be printed.
///
/// `Debug` and `Display` show the URL with its password replaced by `***`, so a redacted URL
/// still says which host, port, user and database a process uses; a value that does not parse
/// as a URL prints as `<unparseable url>`, because whatever it holds could be a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    pub fn new(value: String) -> SecretUrl {
        SecretUrl(value)
    }

    /// The full URL, for the one place that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with any password replaced by `***`.
    pub fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(mut parsed) => {
                if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
                    return "<unparseable url>".to_string();
                }
                parsed.to_string()
            }
            Err(_) => "<unparseable url>".to_string(),
        }
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "SecretUrl({})", self.redacted())
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.redacted())
    }
}

/// Settings every service process shares.
#[derive(Debug, Clone)]
pub struct CommonConfig {
    /// Base database URL; each context connects as its own role on this host and database.
    pub database_url: SecretUrl,
    /// Bearer token every internal gRPC call must carry.
    pub service_token: Secret,
    /// Honour `X-Baton-Test-Now` / `x-baton-test-now` (never in production).
    pub test_clock: bool,
    /// Largest number of pooled database connections per context.
    pub database_max_connections: u32,
}

/// Shortest service token accepted: anything shorter is guessable.
pub const MIN_SERVICE_TOKEN_LEN: usize = 16;

/// Default base database URL (DESIGN section 7).
pub const DEFAULT_DATABASE_URL: &str = "postgres://127.0.0.1:5432/baton";

impl CommonConfig {
    pub fn from_env(env: &Env) -> Result<CommonConfig, ConfigError> {
        let service_token = env.secret("BATON_SERVICE_TOKEN").ok_or_else(|| {
            ConfigError::new(
                "BATON_SERVICE_TOKEN",
                "required (shared secret for internal gRPC)",
            )
        })?;
        if service_token.expose().len() < MIN_SERVICE_TOKEN_LEN {
            return Err(ConfigError::new(
                "BATON_SERVICE_TOKEN",
                format!("must be at least {MIN_SERVICE_TOKEN_LEN} characters"),
            ));
        }
        Ok(CommonConfig {
            database_url: env.secret_url("BATON_DATABASE_URL", DEFAULT_DATABASE_URL),
            service_token,
            test_clock: env.bool("BATON_TEST_CLOCK", false)?,
            database_max_connections: env.bounded_u64(
                "BATON_DATABASE_MAX_CONNECTIONS",
                16,
                1,
                1000,
            )? as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_human_forms_and_name_the_variable_on_error() {
        let env = Env::from_pairs([("A", "24h"), ("B", "90s"), ("C", "soon")]);
        assert_eq!(
            env.duration("A", Duration::ZERO),
            Ok(Duration::from_secs(86_400))
        );
        assert_eq!(
            env.duration("B", Duration::ZERO),
            Ok(Duration::from_secs(90))
        );
        assert_eq!(
            env.duration("D", Duration::from_secs(5)),
            Ok(Duration::from_secs(5))
        );
        let error = env.duration("C", Duration::ZERO).expect_err("malformed");
        assert_eq!(error.key, "C");
    }

    #[test]
    fn bounds_are_enforced() {
        let env = Env::from_pairs([("N", "601")]);
        assert!(env.bounded_u64("N", 30, 1, 600).is_err());
        assert_eq!(env.bounded_u64("M", 30, 1, 600), Ok(30));
    }

    #[test]
    fn service_token_is_required_long_and_never_printed() {
        assert!(CommonConfig::from_env(&Env::default()).is_err());
        let short = Env::from_pairs([("BATON_SERVICE_TOKEN", "short")]);
        assert!(CommonConfig::from_env(&short).is_err());
        let good = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
        let config = CommonConfig::from_env(&good).expect("valid");
        assert!(!format!("{config:?}").contains("a-long-enough-token"));
    }

    #[test]
    fn connection_urls_never_print_their_password() {
        let cases = [
            (
                "postgres://baton_registry:hunter2-pw@db.internal:5432/baton?sslmode=require",
                "postgres://baton_registry:***@db.internal:5432/baton?sslmode=require",
            ),
            (
                "amqp://guest:guest@127.0.0.1:5672/%2f",
                "amqp://guest:***@127.0.0.1:5672/%2f",
            ),
            (
                "postgres://127.0.0.1:5432/baton",
                "postgres://127.0.0.1:5432/baton",
            ),
            ("not a url but maybe a secret", "<unparseable url>"),
        ];
        for (raw, shown) in cases {
            let url = SecretUrl::new(raw.to_string());
            assert_eq!(url.to_string(), shown, "{raw}");
            assert_eq!(format!("{url:?}"), format!("SecretUrl({shown})"));
            assert_eq!(url.expose(), raw);
        }
        let env = Env::from_pairs([
            ("BATON_SERVICE_TOKEN", "a-long-enough-token"),
            ("BATON_DATABASE_URL", "postgres://u:hunter2-pw@h/baton"),
        ]);
        let config = CommonConfig::from_env(&env).expect("valid");
        let printed = format!("{config:?}");
        assert!(!printed.contains("hunter2-pw"), "{printed}");
        assert!(printed.contains("postgres://u:***@h/baton"), "{printed}");
    }

    #[test]
    fn booleans_are_strict() {
        let env = Env::from_pairs([("T", "1"), ("F", "off"), ("X", "maybe")]);
        assert_eq!(env.bool("T", false), Ok(true));
        assert_eq!(env.bool("F", true), Ok(false));
        assert!(env.bool("X", false).is_err());
    }
}
