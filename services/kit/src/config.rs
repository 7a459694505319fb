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

    /// Reads secrets from files: each `BATON_<NAME>_FILE=path` sets `BATON_<NAME>` to the
    /// file's contents (trailing newline trimmed), the way Kubernetes and Docker mount secrets.
    /// Setting both `BATON_<NAME>` and `BATON_<NAME>_FILE` is refused as ambiguous, and a file
    /// that cannot be read stops the process naming the variable.
    pub fn with_files(mut self) -> Result<Env, ConfigError> {
        let files: Vec<(String, String)> = self
            .vars
            .iter()
            .filter(|(key, value)| {
                key.starts_with("BATON_") && key.ends_with("_FILE") && !value.trim().is_empty()
            })
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        for (file_key, path) in files {
            let key = file_key.trim_end_matches("_FILE").to_string();
            if self.raw(&key).is_some() {
                return Err(ConfigError::new(
                    &file_key,
                    format!("set either {key} or {file_key}, not both"),
                ));
            }
            let text = std::fs::read_to_string(path.trim()).map_err(|error| {
                ConfigError::new(&file_key, format!("cannot read {}: {error}", path.trim()))
            })?;
            self.vars
                .insert(key, text.trim_end_matches(['\n', '\r']).to_string());
        }
        Ok(self)
    }

    /// Applies `BATON_DATABASE_SSLMODE` (`disable`, `allow`, `prefer`, `require`, `verify-ca`,
    /// `verify-full`) and `BATON_DATABASE_SSLROOTCERT` (a CA file) to every database URL the
    /// process reads (`BATON_DATABASE_URL`, `BATON_MIGRATE_DATABASE_URL` and each context's
    /// `..._DATABASE_URL`), unless a URL sets its own `sslmode` / `sslrootcert`.
    pub fn with_database_tls(mut self) -> Result<Env, ConfigError> {
        const MODES: [&str; 6] = [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ];
        let mode = self.optional_string("BATON_DATABASE_SSLMODE");
        let root = self.optional_string("BATON_DATABASE_SSLROOTCERT");
        if let Some(mode) = &mode
            && !MODES.contains(&mode.as_str())
        {
            return Err(ConfigError::new(
                "BATON_DATABASE_SSLMODE",
                format!("must be one of {}", MODES.join(", ")),
            ));
        }
        if let Some(root) = &root
            && !std::path::Path::new(root).is_file()
        {
            return Err(ConfigError::new(
                "BATON_DATABASE_SSLROOTCERT",
                format!("no such file: {root}"),
            ));
        }
        if mode.is_none() && root.is_none() {
            return Ok(self);
        }
        if self.raw("BATON_DATABASE_URL").is_none() {
            self.vars
                .insert("BATON_DATABASE_URL".into(), DEFAULT_DATABASE_URL.into());
        }
        let keys: Vec<String> = self
            .vars
            .keys()
            .filter(|key| key.starts_with("BATON_") && key.ends_with("DATABASE_URL"))
            .cloned()
            .collect();
        for key in keys {
            let Some(value) = self.raw(&key).map(str::to_string) else {
                continue;
            };
            let mut url = url::Url::parse(&value)
                .map_err(|error| ConfigError::new(&key, format!("not a URL: {error}")))?;
            let present: Vec<String> = url
                .query_pairs()
                .map(|(name, _)| name.into_owned())
                .collect();
            {
                let mut query = url.query_pairs_mut();
                if let Some(mode) = mode
                    .as_deref()
                    .filter(|_| !present.iter().any(|n| n == "sslmode"))
                {
                    query.append_pair("sslmode", mode);
                }
                if let Some(root) = root
                    .as_deref()
                    .filter(|_| !present.iter().any(|n| n == "sslrootcert"))
                {
                    query.append_pair("sslrootcert", root);
                }
            }
            self.vars.insert(key, url.to_string());
        }
        Ok(self)
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

/// The variable naming the deployment environment (`dev`, `prod`, ...), reported as the
/// `deployment.environment.name` resource attribute of every component
/// (`telemetry::resource`). Read before any service's config, by telemetry's start; the k8s
/// overlays set it in their ConfigMap.
pub const DEPLOYMENT_ENVIRONMENT_KEY: &str = "BATON_DEPLOYMENT_ENVIRONMENT";

/// Settings every service process shares.
#[derive(Debug, Clone)]
pub struct CommonConfig {
    /// Base database URL; each context connects as its own role on this host and database.
    pub database_url: SecretUrl,
    /// The bearer token internal gRPC calls send, and the set they accept (rotatable).
    pub service_token: crate::service_tokens::ServiceTokens,
    /// TLS with client certificates on the internal gRPC hops, when configured.
    pub grpc_tls: Option<crate::grpc_tls::GrpcTls>,
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
        let service_token = crate::service_tokens::ServiceTokens::from_env(env)?;
        Ok(CommonConfig {
            database_url: env.secret_url("BATON_DATABASE_URL", DEFAULT_DATABASE_URL),
            service_token,
            grpc_tls: crate::grpc_tls::GrpcTls::from_env(env)?,
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
#[path = "config_tests.rs"]
mod tests;
