//! What every event handler shares: the environment, the state folder, the harness, the
//! server client and the event's deadline.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::{self, Env};
use crate::harness::Harness;
use crate::http::Client;
use crate::log;
use crate::payload::Event;
use crate::spool::{Entry, Spool};

/// One hook run.
pub struct Hook {
    pub env: Env,
    pub state_dir: PathBuf,
    /// The format the installed command named (`claude-code` for Claude Code settings).
    pub format: Harness,
    /// The client that really hosts the session: its name is the session's `agent`.
    pub harness: Harness,
    pub event: Event,
    /// The installed command asked for the Stop nudge (`--nudge`, Codex).
    pub nudge_argument: bool,
    pub client: Result<Client, &'static str>,
}

/// Each event's whole budget, inside what the harness allows (Claude Code shares 1.5 s across
/// all SessionEnd hooks, Codex allows 1 s; Baton's installed timeouts are 10 s for SessionStart
/// and Stop, 5 s for PreCompact).
pub fn budget(event: Event) -> Duration {
    match event {
        Event::SessionStart | Event::Stop => Duration::from_secs(8),
        Event::PreCompact => Duration::from_secs(4),
        Event::SessionEnd => Duration::from_millis(750),
        Event::UserPromptSubmit => Duration::from_millis(500),
    }
}

impl Hook {
    pub fn agent(&self) -> &'static str {
        self.harness.name()
    }

    /// One line in the local log: the event, the harness and a code, nothing else.
    pub fn log(&self, code: &str) {
        log::line(
            &self.state_dir,
            self.event.word(),
            self.harness.name(),
            code,
        );
    }

    pub fn key(&self, session_id: &str) -> Value {
        serde_json::json!({"agent": self.agent(), "sessionId": session_id})
    }

    /// Appends a call for the drain to deliver later; a refusal is one log line.
    pub fn spool(&self, path: &str, body: Value) {
        let entry = Entry::new(path, body);
        if let Err(error) = Spool::in_state(&self.state_dir).append(&entry) {
            self.log(error.code());
        }
    }

    pub fn client(&self) -> Option<&Client> {
        match &self.client {
            Ok(client) => Some(client),
            Err(code) => {
                self.log(code);
                None
            }
        }
    }
}

/// The server client, or the config error's code.
pub fn client(env: &Env, deadline: Instant) -> Result<Client, &'static str> {
    config::server(env)
        .map(|server| Client::new(server, deadline))
        .map_err(|error| error.code())
}
