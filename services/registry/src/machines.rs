//! ListMachines' decisions (the console's fleet): how the tenant's recent pulses group into
//! machines, and how each machine's clients and sessions are picked and ordered.
//!
//! A machine is a `host_id`. Its sessions are the ones with an episode on it in the window,
//! each in the state derived from ALL its episodes (a session resumed on another machine reads
//! the same everywhere); closed sessions are left out of the lists and the counts.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::liveness::State;

/// Machines an answer holds when the caller asks for 0.
pub const DEFAULT_LIMIT: u32 = 100;
/// Most machines an answer holds.
pub const MAX_LIMIT: u32 = 200;
/// Most episodes one read groups; past it the answer says `truncated`.
pub const MAX_EPISODES: usize = 5000;
/// Most sessions listed per machine.
pub const MAX_SESSIONS_PER_MACHINE: usize = 50;
/// The window when the caller gives no `since`.
pub const DEFAULT_WINDOW_DAYS: i64 = 7;

/// The machine count: 0 means [`DEFAULT_LIMIT`], above [`MAX_LIMIT`] is refused.
pub fn limit(requested: u32) -> Result<u32, ApiError> {
    match requested {
        0 => Ok(DEFAULT_LIMIT),
        1..=MAX_LIMIT => Ok(requested),
        _ => Err(ApiError::invalid_input(format!(
            "limit must be 0 to {MAX_LIMIT} (0 means {DEFAULT_LIMIT})"
        ))),
    }
}

/// The window's start: absent is [`DEFAULT_WINDOW_DAYS`] before `now`; a given one must lie in
/// `[2000-01-01, now]` (the test clock's range starts there; a future one can match nothing).
pub fn since(given: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Result<DateTime<Utc>, ApiError> {
    let Some(since) = given else {
        return Ok(now - Duration::days(DEFAULT_WINDOW_DAYS));
    };
    let earliest = DateTime::from_timestamp(baton_kit::clock::TEST_NOW_EARLIEST_SECONDS, 0)
        .unwrap_or(DateTime::UNIX_EPOCH);
    if since < earliest || since > now {
        return Err(ApiError::invalid_input(
            "since must be an instant between 2000-01-01 and now",
        ));
    }
    Ok(since)
}

/// One episode pulsed in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPulse {
    pub episode_id: Uuid,
    pub session_run_id: Uuid,
    pub host_id: String,
    pub host_label: Option<String>,
    pub client: String,
    pub client_version: Option<String>,
    pub host_client: Option<String>,
    pub pid: i64,
    pub last_pulse_at: DateTime<Utc>,
}

/// What a machine's session list shows of a session, and its derived state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenSession {
    pub agent: String,
    pub session_id: String,
    pub project: Option<String>,
    pub opened_at: DateTime<Utc>,
    pub state: State,
}

/// One harness on a machine, as its newest episode reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineClient {
    pub client: String,
    pub client_version: Option<String>,
    pub host_client: Option<String>,
}

/// One open session on a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineSession {
    pub session_run_id: Uuid,
    pub agent: String,
    pub session_id: String,
    pub project: Option<String>,
    pub state: State,
    pub opened_at: DateTime<Utc>,
    /// The session's newest pulse on this machine, and that episode's process.
    pub last_pulse_at: DateTime<Utc>,
    pub pid: i64,
}

/// One machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub host_id: String,
    pub host_label: Option<String>,
    /// One per client name, in name order.
    pub clients: Vec<MachineClient>,
    pub last_pulse_at: DateTime<Utc>,
    pub live: u32,
    pub idle: u32,
    pub disconnected: u32,
    /// Not closed; live first, then by last pulse, newest first; at most
    /// [`MAX_SESSIONS_PER_MACHINE`].
    pub sessions: Vec<MachineSession>,
}

/// A machine being gathered from its pulses, newest first.
struct Gathering {
    host_label: Option<String>,
    last_pulse_at: DateTime<Utc>,
    clients: BTreeMap<String, MachineClient>,
    sessions: HashMap<Uuid, (DateTime<Utc>, i64)>,
}

/// Groups `pulses` (any order) per host: the newest label that was set, one client per name
/// from its newest episode, and the sessions `seen` knows, counted by state. Machines come
/// most recently pulsed first (ties by host id), at most `limit`.
pub fn machines(
    pulses: &[HostPulse],
    seen: &HashMap<Uuid, SeenSession>,
    limit: usize,
) -> Vec<Machine> {
    let mut newest_first: Vec<&HostPulse> = pulses.iter().collect();
    newest_first.sort_by_key(|pulse| std::cmp::Reverse((pulse.last_pulse_at, pulse.episode_id)));
    let mut hosts: HashMap<&str, Gathering> = HashMap::new();
    for pulse in newest_first {
        let host = hosts
            .entry(pulse.host_id.as_str())
            .or_insert_with(|| Gathering {
                host_label: None,
                last_pulse_at: pulse.last_pulse_at,
                clients: BTreeMap::new(),
                sessions: HashMap::new(),
            });
        if host.host_label.is_none() {
            host.host_label.clone_from(&pulse.host_label);
        }
        host.clients
            .entry(pulse.client.clone())
            .or_insert_with(|| MachineClient {
                client: pulse.client.clone(),
                client_version: pulse.client_version.clone(),
                host_client: pulse.host_client.clone(),
            });
        host.sessions
            .entry(pulse.session_run_id)
            .or_insert((pulse.last_pulse_at, pulse.pid));
    }
    let mut machines: Vec<Machine> = hosts
        .into_iter()
        .map(|(host_id, gathering)| finish(host_id, gathering, seen))
        .collect();
    machines.sort_by(|a, b| {
        b.last_pulse_at
            .cmp(&a.last_pulse_at)
            .then_with(|| a.host_id.cmp(&b.host_id))
    });
    machines.truncate(limit);
    machines
}

fn finish(host_id: &str, gathering: Gathering, seen: &HashMap<Uuid, SeenSession>) -> Machine {
    let mut sessions: Vec<MachineSession> = gathering
        .sessions
        .into_iter()
        .filter_map(|(run_id, (last_pulse_at, pid))| {
            let session = seen.get(&run_id)?;
            (session.state != State::Closed).then(|| MachineSession {
                session_run_id: run_id,
                agent: session.agent.clone(),
                session_id: session.session_id.clone(),
                project: session.project.clone(),
                state: session.state,
                opened_at: session.opened_at,
                last_pulse_at,
                pid,
            })
        })
        .collect();
    let count = |state: State| {
        let matching = sessions.iter().filter(|session| session.state == state);
        u32::try_from(matching.count()).unwrap_or(u32::MAX)
    };
    let (live, idle, disconnected) = (
        count(State::Live),
        count(State::Idle),
        count(State::Disconnected),
    );
    sessions.sort_by(|a, b| {
        (b.state == State::Live)
            .cmp(&(a.state == State::Live))
            .then_with(|| b.last_pulse_at.cmp(&a.last_pulse_at))
            .then_with(|| a.session_run_id.cmp(&b.session_run_id))
    });
    sessions.truncate(MAX_SESSIONS_PER_MACHINE);
    Machine {
        host_id: host_id.to_string(),
        host_label: gathering.host_label,
        clients: gathering.clients.into_values().collect(),
        last_pulse_at: gathering.last_pulse_at,
        live,
        idle,
        disconnected,
        sessions,
    }
}

#[cfg(test)]
#[path = "machines_tests.rs"]
mod tests;
