//! The snapshot of the environment settings are read from ([`Env`]: secrets from files,
//! database TLS applied to every database URL) and the [`ConfigError`] naming the variable.

use std::collections::HashMap;

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

    pub fn optional_string(&self, key: &str) -> Option<String> {
        self.raw(key).map(str::to_string)
    }

    /// Every variable that is set (an empty value counts as unset).
    pub(super) fn set(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars
            .iter()
            .filter(|(_, value)| !value.trim().is_empty())
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }

    pub(super) fn insert(&mut self, key: &str, value: String) {
        self.vars.insert(key.to_string(), value);
    }
}

/// Default base database URL (DESIGN section 7).
pub const DEFAULT_DATABASE_URL: &str = "postgres://127.0.0.1:5432/baton";
