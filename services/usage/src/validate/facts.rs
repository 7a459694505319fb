//! The checked facts of an upload, as [`super::batch`] hands them on: sessions, agents, edges,
//! usage rows and deliveries, and the sessions and agents they name without carrying.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_usage_model::UsageRecord;
use baton_usage_model::record::{Harness, Modifiers, ServerTools, Tokens};

use crate::keys::{AgentKey, SessionKey, UsageKey};

/// An agent's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Main,
    Subagent,
    Compaction,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Main => "main",
            Kind::Subagent => "subagent",
            Kind::Compaction => "compaction",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "main" => Some(Kind::Main),
            "subagent" => Some(Kind::Subagent),
            "compaction" => Some(Kind::Compaction),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    pub client_versions: Vec<String>,
    pub output_under_reported: bool,
    pub first_activity_at: Option<DateTime<Utc>>,
    pub last_activity_at: Option<DateTime<Utc>>,
}

impl Session {
    pub fn key(&self) -> SessionKey {
        SessionKey::new(&self.agent, &self.session_id)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub agent: String,
    pub session_id: String,
    /// `""` for the main agent.
    pub agent_id: String,
    pub kind: Kind,
    pub parent_agent_id: Option<String>,
    pub subagent_type: Option<String>,
    pub spawn_tool: Option<String>,
    pub model: Option<String>,
    pub first_activity_at: Option<DateTime<Utc>>,
    pub last_activity_at: Option<DateTime<Utc>>,
    pub ended: Option<(String, DateTime<Utc>)>,
}

impl Agent {
    pub fn key(&self) -> AgentKey {
        AgentKey::new(&self.agent, &self.session_id, &self.agent_id)
    }

    pub fn session_key(&self) -> SessionKey {
        SessionKey::new(&self.agent, &self.session_id)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub agent: String,
    pub session_id: String,
    /// `""` for the main agent.
    pub parent_agent_id: String,
    pub child_agent_id: String,
    pub join_path: String,
}

impl Edge {
    pub fn session_key(&self) -> SessionKey {
        SessionKey::new(&self.agent, &self.session_id)
    }

    /// The agents the edge joins: its parent (`""`, the main agent, included) and its child.
    pub fn agent_keys(&self) -> [AgentKey; 2] {
        [&self.parent_agent_id, &self.child_agent_id]
            .map(|agent_id| AgentKey::new(&self.agent, &self.session_id, agent_id))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub agent: String,
    pub session_id: String,
    /// `""` for the main agent.
    pub agent_id: String,
    pub dedup_key: String,
    pub model: Option<String>,
    pub at: DateTime<Utc>,
    pub tokens: Tokens,
    pub server_tools: ServerTools,
    pub modifiers: Modifiers,
    pub sidechain: bool,
}

impl Usage {
    pub fn key(&self) -> UsageKey {
        UsageKey {
            agent: self.agent.clone(),
            dedup_key: self.dedup_key.clone(),
        }
    }

    pub fn session_key(&self) -> SessionKey {
        SessionKey::new(&self.agent, &self.session_id)
    }

    pub fn agent_key(&self) -> AgentKey {
        AgentKey::new(&self.agent, &self.session_id, &self.agent_id)
    }

    /// The record the transcripts crate's collision rule and pricing read.
    pub fn record(&self) -> UsageRecord {
        UsageRecord {
            message_id: self.dedup_key.clone(),
            request_id: None,
            harness: Harness::of_agent(&self.agent),
            session_id: self.session_id.clone(),
            agent_id: (!self.agent_id.is_empty()).then(|| self.agent_id.clone()),
            model: self.model.clone(),
            timestamp_ms: self.at.timestamp_millis(),
            tokens: self.tokens,
            server_tools: self.server_tools,
            modifiers: self.modifiers.clone(),
            sidechain: self.sidechain,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub delivery_id: Uuid,
    pub agent: String,
    pub session_id: String,
    pub event: String,
    pub observed_at: DateTime<Utc>,
}

impl Delivery {
    pub fn session_key(&self) -> SessionKey {
        SessionKey::new(&self.agent, &self.session_id)
    }
}

/// One host's facts, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub host_id: String,
    /// The member the uploading key speaks for, `""` when it has none (unattributed). It comes
    /// with the call (checked by [`baton_kit::member::member_of`]), not in the body.
    pub member: String,
    pub sessions: Vec<Session>,
    pub agents: Vec<Agent>,
    pub edges: Vec<Edge>,
    pub usage: Vec<Usage>,
    pub deliveries: Vec<Delivery>,
}

impl Batch {
    /// Sessions the agents, edges and usage rows name that the batch does not carry. Deliveries
    /// are not among them: a hook delivery is recorded whether or not the session's transcript
    /// has been uploaded yet (SessionStart comes first), see [`crate::upload`].
    pub fn referenced_sessions(&self) -> Vec<SessionKey> {
        let carried: HashSet<SessionKey> = self.sessions.iter().map(Session::key).collect();
        let named = self
            .agents
            .iter()
            .map(Agent::session_key)
            .chain(self.edges.iter().map(Edge::session_key))
            .chain(self.usage.iter().map(Usage::session_key));
        let mut missing: Vec<SessionKey> = named.filter(|key| !carried.contains(key)).collect();
        missing.sort();
        missing.dedup();
        missing
    }

    /// Non-main agents the edges and usage rows name that the batch does not carry.
    pub fn referenced_agents(&self) -> Vec<AgentKey> {
        let carried: HashSet<AgentKey> = self.agents.iter().map(Agent::key).collect();
        let named = self
            .edges
            .iter()
            .flat_map(Edge::agent_keys)
            .chain(self.usage.iter().map(Usage::agent_key));
        let mut missing: Vec<AgentKey> = named
            .filter(|key| !key.agent_id.is_empty() && !carried.contains(key))
            .collect();
        missing.sort();
        missing.dedup();
        missing
    }
}
