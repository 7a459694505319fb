//! Reading settings from the environment: [`Env`] (defaults, bounds, durations, strict
//! booleans, secrets from files, database TLS) and the [`ConfigError`] naming the variable.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use super::secret::{Secret, SecretUrl};

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

/// Default base database URL (DESIGN section 7).
pub const DEFAULT_DATABASE_URL: &str = "postgres://127.0.0.1:5432/baton";
