//! Where the hook finds its server, its key and its state.
//!
//! `BATON_URL` and `BATON_API_KEY` win; otherwise the config file (`BATON_HOOK_CONFIG`, default
//! `~/.config/baton/hook.json`, `{"url": "...", "apiKey": "..."}`) is read, and only when no one
//! but its owner can read it: a key in a group- or world-readable file is refused, not used.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The process environment, captured once.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    pub fn capture() -> Env {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                })
                .collect(),
        }
    }

    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Env {
        Env {
            vars: pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.is_empty())
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("1" | "true" | "yes"))
    }

    pub fn number(&self, name: &str, default: u64, min: u64, max: u64) -> u64 {
        self.get(name)
            .and_then(|text| text.trim().parse::<u64>().ok())
            .map_or(default, |value| value.clamp(min, max))
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The user's home directory.
    pub fn home(&self) -> PathBuf {
        self.get("HOME")
            .map_or_else(|| PathBuf::from("/"), PathBuf::from)
    }

    /// Baton's private state folder (`BATON_HOOK_HOME`, default `~/.baton`).
    pub fn state_dir(&self) -> PathBuf {
        self.get("BATON_HOOK_HOME")
            .map_or_else(|| self.home().join(".baton"), PathBuf::from)
    }
}

/// The server the hook talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Base URL without a trailing slash.
    pub url: String,
    pub api_key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileConfig {
    url: String,
    api_key: String,
}

/// Why no server could be configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    Missing,
    Unreadable,
    ReadableByOthers,
    Invalid,
}

impl ConfigError {
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::Missing => "config_missing",
            ConfigError::Unreadable => "config_unreadable",
            ConfigError::ReadableByOthers => "config_readable_by_others",
            ConfigError::Invalid => "config_invalid",
        }
    }
}

fn trimmed_url(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let known = url.starts_with("http://") || url.starts_with("https://");
    known.then(|| url.to_string())
}

/// The server from the environment, else from the user-only config file.
pub fn server(env: &Env) -> Result<Server, ConfigError> {
    if let (Some(url), Some(api_key)) = (env.get("BATON_URL"), env.get("BATON_API_KEY")) {
        let url = trimmed_url(url).ok_or(ConfigError::Invalid)?;
        return Ok(Server {
            url,
            api_key: api_key.trim().to_string(),
        });
    }
    let path = env
        .get("BATON_HOOK_CONFIG")
        .map_or_else(|| env.home().join(".config/baton/hook.json"), PathBuf::from);
    from_file(&path)
}

fn from_file(path: &Path) -> Result<Server, ConfigError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::Missing);
        }
        Err(_) => return Err(ConfigError::Unreadable),
    };
    if metadata.permissions().mode() & 0o077 != 0 {
        return Err(ConfigError::ReadableByOthers);
    }
    let text = std::fs::read_to_string(path).map_err(|_| ConfigError::Unreadable)?;
    let file: FileConfig = serde_json::from_str(&text).map_err(|_| ConfigError::Invalid)?;
    Ok(Server {
        url: trimmed_url(&file.url).ok_or(ConfigError::Invalid)?,
        api_key: file.api_key.trim().to_string(),
    })
}

/// The liveness pulse interval (`BATON_HOOK_PULSE_INTERVAL_MS`, default 30 s).
pub fn pulse_interval(env: &Env) -> Duration {
    Duration::from_millis(env.number("BATON_HOOK_PULSE_INTERVAL_MS", 30_000, 50, 300_000))
}

/// The briefing budget in characters: `BATON_BRIEFING_MAX_TOKENS` (default 2000) × 4.
pub fn briefing_max_chars(env: &Env) -> usize {
    env.number("BATON_BRIEFING_MAX_TOKENS", 2000, 50, 100_000) as usize * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn environment_wins_and_trailing_slashes_go() {
        let env = Env::from_pairs(&[("BATON_URL", "http://x:1/"), ("BATON_API_KEY", " k ")]);
        let server = server(&env).expect("configured");
        assert_eq!(server.url, "http://x:1");
        assert_eq!(server.api_key, "k");
        let bad = Env::from_pairs(&[("BATON_URL", "ftp://x"), ("BATON_API_KEY", "k")]);
        assert_eq!(super::server(&bad), Err(ConfigError::Invalid));
    }

    #[test]
    fn the_file_must_be_private() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("hook.json");
        let mut file = std::fs::File::create(&path).expect("file");
        file.write_all(br#"{"url":"https://baton.example","apiKey":"k"}"#)
            .expect("write");
        let env = Env::from_pairs(&[("BATON_HOOK_CONFIG", path.to_str().expect("utf-8"))]);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(server(&env), Err(ConfigError::ReadableByOthers));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(
            server(&env).expect("configured").url,
            "https://baton.example"
        );
        let missing = Env::from_pairs(&[("BATON_HOOK_CONFIG", "/nonexistent/hook.json")]);
        assert_eq!(server(&missing), Err(ConfigError::Missing));
    }

    #[test]
    fn bounded_numbers() {
        let env = Env::from_pairs(&[("BATON_BRIEFING_MAX_TOKENS", "10"), ("N", "x")]);
        assert_eq!(briefing_max_chars(&env), 200);
        assert_eq!(briefing_max_chars(&Env::default()), 8000);
        assert_eq!(env.number("N", 7, 1, 9), 7);
    }
}
