//! The service token, as a set that can be rotated without a failed call.
//!
//! Every internal gRPC call carries `authorization: Bearer <token>`. A process **sends** one
//! token and **accepts** a set: the sent one plus any listed as also accepted. Rotation across a
//! fleet is then three steps, each rolled out before the next, none of which fails a call:
//!
//! 1. every server also accepts the new token (`BATON_SERVICE_TOKENS_ACCEPTED=new`);
//! 2. every caller sends the new token (`BATON_SERVICE_TOKEN=new`, old still accepted);
//! 3. the old token is dropped from the accepted set.
//!
//! Each value may come from the environment or from a file (`BATON_SERVICE_TOKEN_FILE`,
//! `BATON_SERVICE_TOKENS_ACCEPTED_FILE`: a mounted Kubernetes Secret). Files are read again
//! every `BATON_SERVICE_TOKEN_RELOAD` (default 10 s), so a rotation needs no restart: a Secret
//! volume is swapped atomically by the kubelet. A file that cannot be read, or holds a token
//! shorter than [`MIN_SERVICE_TOKEN_LEN`], keeps the tokens last loaded (logged once per
//! reload) rather than locking every caller out.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::config::Settings;
use crate::config::env::{ConfigError, Env};
use crate::config::secret::Secret;
use crate::config::values::{Span, hours, millis, secs};
use crate::internal_clients::{self, ClientEntry, Decision};

/// Shortest service token accepted: anything shorter is guessable.
pub const MIN_SERVICE_TOKEN_LEN: usize = 16;

/// The tokens in force at one moment.
#[derive(Clone, PartialEq, Eq)]
struct TokenSet {
    send: Secret,
    also_accepted: Vec<Secret>,
    /// Internal clients' credentials (`BATON_GRPC_CLIENTS_FILE`).
    clients: Vec<ClientEntry>,
}

/// Where the tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Fixed,
    Files {
        send: Option<PathBuf>,
        accepted: Option<PathBuf>,
        clients: Option<PathBuf>,
        every: Duration,
    },
}

struct State {
    tokens: TokenSet,
    loaded_at: Instant,
}

/// The process's service tokens (cheap to clone; clones share one set).
#[derive(Clone)]
pub struct ServiceTokens {
    state: Arc<Mutex<State>>,
    source: Arc<Source>,
    /// From the environment when no file overrides them.
    env_send: Option<Secret>,
    env_accepted: Vec<Secret>,
}

impl std::fmt::Debug for ServiceTokens {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ServiceTokens(<redacted>)")
    }
}

/// Splits an accepted list: commas or newlines, blanks ignored.
fn parse_list(text: &str) -> Vec<Secret> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .map(|token| Secret::new(token.to_string()))
        .collect()
}

fn check_length(key: &str, tokens: &[Secret]) -> Result<(), ConfigError> {
    if tokens
        .iter()
        .any(|token| token.expose().len() < MIN_SERVICE_TOKEN_LEN)
    {
        return Err(ConfigError::new(
            key,
            format!("every token must be at least {MIN_SERVICE_TOKEN_LEN} characters"),
        ));
    }
    Ok(())
}

/// The service token settings, process-wide (`BATON_SERVICE_TOKEN...`, `BATON_GRPC_CLIENTS_FILE`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TokenSettings {
    /// The token this process sends, and accepts; required (at least 16 characters).
    pub service_token: Option<Secret>,
    /// Further tokens accepted during a rotation, separated by commas or newlines.
    pub service_tokens_accepted: Option<Secret>,
    /// A file holding the sent token, read again every `service_token_reload`.
    pub service_token_file: Option<PathBuf>,
    /// A file holding the accepted list, read again every `service_token_reload`.
    pub service_tokens_accepted_file: Option<PathBuf>,
    /// Internal clients' credentials (JSON lines), read again with the token files.
    pub grpc_clients_file: Option<PathBuf>,
    /// How often the files are read again.
    pub service_token_reload: Span<{ secs(10) }, { millis(100) }, { hours(1) }>,
}

impl Settings for TokenSettings {
    const SECTION: &'static str = "";
}

fn read_file(path: &PathBuf) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))
}

impl ServiceTokens {
    /// One fixed token, sent and accepted (tests, embedded use).
    pub fn fixed(token: Secret) -> ServiceTokens {
        ServiceTokens {
            state: Arc::new(Mutex::new(State {
                tokens: TokenSet {
                    send: token.clone(),
                    also_accepted: Vec::new(),
                    clients: Vec::new(),
                },
                loaded_at: Instant::now(),
            })),
            source: Arc::new(Source::Fixed),
            env_send: Some(token),
            env_accepted: Vec::new(),
        }
    }

    /// From `BATON_SERVICE_TOKEN[_FILE]` and `BATON_SERVICE_TOKENS_ACCEPTED[_FILE]`.
    pub fn from_env(env: &Env) -> Result<ServiceTokens, ConfigError> {
        let settings: TokenSettings = crate::config::load(env)?;
        let send_file = settings.service_token_file;
        let accepted_file = settings.service_tokens_accepted_file;
        let clients_file = settings.grpc_clients_file;
        let every = settings.service_token_reload.get();
        let env_send = settings.service_token;
        let env_accepted = settings
            .service_tokens_accepted
            .map(|list| parse_list(list.expose()))
            .unwrap_or_default();
        check_length("BATON_SERVICE_TOKENS_ACCEPTED", &env_accepted)?;
        let source = if send_file.is_some() || accepted_file.is_some() || clients_file.is_some() {
            Source::Files {
                send: send_file,
                accepted: accepted_file,
                clients: clients_file,
                every,
            }
        } else {
            Source::Fixed
        };
        let tokens = ServiceTokens {
            state: Arc::new(Mutex::new(State {
                tokens: TokenSet {
                    send: Secret::new(String::new()),
                    also_accepted: Vec::new(),
                    clients: Vec::new(),
                },
                loaded_at: Instant::now(),
            })),
            source: Arc::new(source),
            env_send,
            env_accepted,
        };
        let loaded = tokens.load().map_err(|message| {
            let key = if matches!(*tokens.source, Source::Files { .. }) {
                "BATON_SERVICE_TOKEN_FILE"
            } else {
                "BATON_SERVICE_TOKEN"
            };
            ConfigError::new(key, message)
        })?;
        tokens.state.lock().expect("token state").tokens = loaded;
        Ok(tokens)
    }

    /// Reads the sources once.
    fn load(&self) -> Result<TokenSet, String> {
        let (send, accepted, clients) = match &*self.source {
            Source::Fixed => (self.env_send.clone(), self.env_accepted.clone(), Vec::new()),
            Source::Files {
                send,
                accepted,
                clients,
                ..
            } => {
                let send = match send {
                    Some(path) => Some(Secret::new(read_file(path)?.trim().to_string())),
                    None => self.env_send.clone(),
                };
                let accepted = match accepted {
                    Some(path) => parse_list(&read_file(path)?),
                    None => self.env_accepted.clone(),
                };
                let clients = match clients {
                    Some(path) => internal_clients::parse(&read_file(path)?)
                        .map_err(|error| format!("{}: {error}", path.display()))?,
                    None => Vec::new(),
                };
                (send, accepted, clients)
            }
        };
        let send = send
            .filter(|token| !token.expose().is_empty())
            .ok_or("required (shared secret for internal gRPC)")?;
        if send.expose().len() < MIN_SERVICE_TOKEN_LEN
            || accepted
                .iter()
                .any(|token| token.expose().len() < MIN_SERVICE_TOKEN_LEN)
        {
            return Err(format!(
                "every token must be at least {MIN_SERVICE_TOKEN_LEN} characters"
            ));
        }
        Ok(TokenSet {
            send,
            also_accepted: accepted,
            clients,
        })
    }

    /// The tokens now, reloading the files when they are due.
    fn current(&self) -> TokenSet {
        let mut state = self.state.lock().expect("token state");
        if let Source::Files { every, .. } = &*self.source
            && state.loaded_at.elapsed() >= *every
        {
            state.loaded_at = Instant::now();
            match self.load() {
                Ok(tokens) => state.tokens = tokens,
                Err(message) => tracing::warn!(
                    error = message.as_str(),
                    "service token files unusable; keeping the tokens last loaded"
                ),
            }
        }
        state.tokens.clone()
    }

    /// The `authorization` value this process sends.
    pub fn authorization(&self) -> String {
        format!("Bearer {}", self.current().send.expose())
    }

    /// Whether `presented` (the whole `authorization` value) names an accepted token; each
    /// comparison takes the same time whatever the bytes.
    pub fn accepts(&self, presented: &[u8]) -> bool {
        let tokens = self.current();
        let mut matched = subtle::Choice::from(0);
        for token in std::iter::once(&tokens.send).chain(tokens.also_accepted.iter()) {
            let expected = format!("Bearer {}", token.expose());
            matched |= presented.ct_eq(expected.as_bytes());
        }
        bool::from(matched)
    }
}

/// Who a call's bearer token says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A Baton service (the service token).
    Service,
    /// An internal client allowed this call.
    Client(String),
    /// An internal client whose scope does not cover this call.
    Denied {
        client: String,
        reason: &'static str,
    },
    /// Neither a service token nor a known, unrevoked client.
    Unknown,
}

impl ServiceTokens {
    /// Decides a call to gRPC `path` carrying `presented` (the whole `authorization` value).
    pub fn caller(&self, presented: &[u8], path: &str) -> Caller {
        if self.accepts(presented) {
            return Caller::Service;
        }
        let Some(token) = std::str::from_utf8(presented)
            .ok()
            .and_then(|text| text.strip_prefix("Bearer "))
        else {
            return Caller::Unknown;
        };
        let tokens = self.current();
        match internal_clients::decide(&tokens.clients, token, path) {
            Decision::Allowed { client } => Caller::Client(client),
            Decision::Denied { client, reason } => Caller::Denied { client, reason },
            Decision::Unknown => Caller::Unknown,
        }
    }
}

impl From<Secret> for ServiceTokens {
    fn from(token: Secret) -> ServiceTokens {
        ServiceTokens::fixed(token)
    }
}

impl From<&Secret> for ServiceTokens {
    fn from(token: &Secret) -> ServiceTokens {
        ServiceTokens::fixed(token.clone())
    }
}

impl From<&ServiceTokens> for ServiceTokens {
    fn from(tokens: &ServiceTokens) -> ServiceTokens {
        tokens.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "old-token-0123456789";
    const NEW: &str = "new-token-9876543210";

    fn bearer(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    #[test]
    fn the_sent_token_and_the_also_accepted_ones_are_accepted_and_nothing_else() {
        let env = Env::from_pairs([
            ("BATON_SERVICE_TOKEN", NEW),
            ("BATON_SERVICE_TOKENS_ACCEPTED", &format!(" {OLD} ,")),
        ]);
        let tokens = ServiceTokens::from_env(&env).expect("valid");
        assert_eq!(tokens.authorization(), format!("Bearer {NEW}"));
        assert!(tokens.accepts(&bearer(NEW)));
        assert!(tokens.accepts(&bearer(OLD)));
        assert!(!tokens.accepts(&bearer("another-token-000000")));
        assert!(!tokens.accepts(b""));
        assert!(!format!("{tokens:?}").contains(NEW));
    }

    #[test]
    fn short_or_missing_tokens_are_refused_at_start() {
        let cases = [
            vec![],
            vec![("BATON_SERVICE_TOKEN", "short")],
            vec![
                ("BATON_SERVICE_TOKEN", NEW),
                ("BATON_SERVICE_TOKENS_ACCEPTED", "short"),
            ],
        ];
        for pairs in cases {
            let env = Env::from_pairs(pairs.clone());
            assert!(ServiceTokens::from_env(&env).is_err(), "{pairs:?}");
        }
    }

    #[test]
    fn files_are_read_again_and_a_broken_file_keeps_the_last_tokens() {
        let dir = std::env::temp_dir().join(format!("baton-tokens-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let send = dir.join("send");
        let accepted = dir.join("accepted");
        std::fs::write(&send, format!("{OLD}\n")).expect("write");
        std::fs::write(&accepted, "").expect("write");
        let env = Env::from_pairs([
            ("BATON_SERVICE_TOKEN_FILE", send.to_str().expect("path")),
            (
                "BATON_SERVICE_TOKENS_ACCEPTED_FILE",
                accepted.to_str().expect("path"),
            ),
            ("BATON_SERVICE_TOKEN_RELOAD", "100ms"),
        ]);
        let tokens = ServiceTokens::from_env(&env).expect("valid");
        assert!(tokens.accepts(&bearer(OLD)) && !tokens.accepts(&bearer(NEW)));
        std::fs::write(&accepted, NEW).expect("write");
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            tokens.accepts(&bearer(NEW)),
            "step 1: the new one is also accepted"
        );
        assert_eq!(tokens.authorization(), format!("Bearer {OLD}"));
        std::fs::write(&send, NEW).expect("write");
        std::fs::write(&accepted, "").expect("write");
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(tokens.authorization(), format!("Bearer {NEW}"));
        assert!(!tokens.accepts(&bearer(OLD)), "step 3: the old one is gone");
        std::fs::write(&send, "short").expect("write");
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(
            tokens.authorization(),
            format!("Bearer {NEW}"),
            "a bad file keeps the last good tokens"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
