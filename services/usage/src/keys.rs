//! The usage context's natural keys, named: a session, an agent of a session and a usage row.
//! Each orders as its fields in declaration order, which is the order of the table's primary
//! key after the tenant, so sorting keys sorts rows the way the store locks them.

/// A session's natural key: the harness that ran it and its own id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub agent: String,
    pub session_id: String,
}

impl SessionKey {
    pub fn new(agent: &str, session_id: &str) -> SessionKey {
        SessionKey {
            agent: agent.to_string(),
            session_id: session_id.to_string(),
        }
    }

    /// The keys as two `unnest` columns: agents and session ids.
    pub fn columns<'a>(keys: impl IntoIterator<Item = &'a SessionKey>) -> [Vec<String>; 2] {
        let mut columns: [Vec<String>; 2] = Default::default();
        for key in keys {
            columns[0].push(key.agent.clone());
            columns[1].push(key.session_id.clone());
        }
        columns
    }
}

/// An agent's key: its session's key and the agent id (`""` for the main agent).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentKey {
    pub agent: String,
    pub session_id: String,
    pub agent_id: String,
}

impl AgentKey {
    pub fn new(agent: &str, session_id: &str, agent_id: &str) -> AgentKey {
        AgentKey {
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            agent_id: agent_id.to_string(),
        }
    }

    /// The keys as three `unnest` columns: agents, session ids and agent ids.
    pub fn columns<'a>(keys: impl IntoIterator<Item = &'a AgentKey>) -> [Vec<String>; 3] {
        let mut columns: [Vec<String>; 3] = Default::default();
        for key in keys {
            columns[0].push(key.agent.clone());
            columns[1].push(key.session_id.clone());
            columns[2].push(key.agent_id.clone());
        }
        columns
    }
}

/// A usage row's key: the harness and the row's dedup key. One stored row per key, whichever
/// session or host reports it; the collision rule decides between copies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsageKey {
    pub agent: String,
    pub dedup_key: String,
}
