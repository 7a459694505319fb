//! TLS to the database for every pool of the process: two process-wide settings written into
//! each database URL of the snapshot before any component reads its own.

use serde::{Deserialize, Serialize};

use super::env::{ConfigError, DEFAULT_DATABASE_URL, Env};
use super::load::load;
use super::settings::Settings;

/// `BATON_DATABASE_SSL*`, applied by [`Env::with_database_tls`] to every `..._DATABASE_URL`
/// that does not set its own.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct DatabaseTlsSettings {
    /// libpq's `sslmode` for every database URL; unset leaves the URLs as they are.
    pub database_sslmode: Option<SslMode>,
    /// A CA file (`sslrootcert`) for every database URL; it must exist.
    pub database_sslrootcert: Option<CaFile>,
}

impl Settings for DatabaseTlsSettings {
    const SECTION: &'static str = "";
}

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SslMode(&'static str);

const MODES: [&str; 6] = [
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

impl<'de> Deserialize<'de> for SslMode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SslMode, D::Error> {
        let text = String::deserialize(deserializer)?;
        MODES
            .iter()
            .find(|mode| **mode == text)
            .map(|mode| SslMode(mode))
            .ok_or_else(|| serde::de::Error::custom(format!("must be one of {}", MODES.join(", "))))
    }
}

impl Serialize for SslMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

/// A path to a file that exists when the process starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct CaFile(String);

impl<'de> Deserialize<'de> for CaFile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CaFile, D::Error> {
        let path = String::deserialize(deserializer)?;
        if !std::path::Path::new(&path).is_file() {
            return Err(serde::de::Error::custom(format!("no such file: {path}")));
        }
        Ok(CaFile(path))
    }
}

/// Writes the settings into each database URL of `env` that lacks them; the default base URL
/// is written out first so that it gets them too.
pub(super) fn apply(mut env: Env) -> Result<Env, ConfigError> {
    let settings: DatabaseTlsSettings = load(&env)?;
    let mode = settings.database_sslmode.map(|mode| mode.0);
    let root = settings.database_sslrootcert.map(|file| file.0);
    if mode.is_none() && root.is_none() {
        return Ok(env);
    }
    if env.raw("BATON_DATABASE_URL").is_none() {
        env.insert("BATON_DATABASE_URL", DEFAULT_DATABASE_URL.into());
    }
    let urls: Vec<(String, String)> = env
        .set()
        .filter(|(key, _)| key.starts_with("BATON_") && key.ends_with("DATABASE_URL"))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    for (key, value) in urls {
        let mut url = url::Url::parse(&value)
            .map_err(|error| ConfigError::new(&key, format!("not a URL: {error}")))?;
        let present: Vec<String> = url
            .query_pairs()
            .map(|(name, _)| name.into_owned())
            .collect();
        {
            let mut query = url.query_pairs_mut();
            if let Some(mode) = mode.filter(|_| !present.iter().any(|n| n == "sslmode")) {
                query.append_pair("sslmode", mode);
            }
            if let Some(root) = root
                .as_deref()
                .filter(|_| !present.iter().any(|n| n == "sslrootcert"))
            {
                query.append_pair("sslrootcert", root);
            }
        }
        env.insert(&key, url.to_string());
    }
    Ok(env)
}

// The method lives here, beside the rule it applies, so `env` need not know this module.
impl Env {
    /// Applies `BATON_DATABASE_SSLMODE` (`disable`, `allow`, `prefer`, `require`, `verify-ca`,
    /// `verify-full`) and `BATON_DATABASE_SSLROOTCERT` (a CA file) to every database URL the
    /// process reads (`BATON_DATABASE_URL`, `BATON_MIGRATE_DATABASE_URL` and each context's
    /// `..._DATABASE_URL`), unless a URL sets its own `sslmode` / `sslrootcert`.
    pub fn with_database_tls(self) -> Result<Env, ConfigError> {
        apply(self)
    }
}
