//! The upload boundary: a `UploadBatchRequest` checked whole into a [`Batch`], or refused.
//!
//! Rules (a violation is `invalid_input` and nothing of the batch is written):
//! - bounds: 500 sessions, 5000 agents, 5000 edges, 10000 usage rows, 2000 deliveries, at
//!   least one fact; every text within its length and free of control and formatting
//!   characters; host, agent and edge ids `[A-Za-z0-9._:-]`, 1..128;
//! - `agent` and `sessionId` follow the contract's rules; event names `[A-Za-z0-9_-]`, 1..64;
//!   delivery ids are uuids;
//! - a main agent has no `agentId` and no parent, a subagent or compaction has an `agentId`;
//!   `ended` is `completed` or `error`, only on a non-main agent, and needs `endedAt`;
//! - every instant lies in `[2000-01-01, now + 1 day]`, first activity not after last;
//! - each token count (reasoning included) is at most 10¹² (sums stay far inside `bigint`),
//!   each server-tool call count (web search, web fetch) at most 10⁶ per request;
//! - a session or agent appears at most once per batch; usage rows sharing a dedup key are
//!   folded by the collision rule before anything is stored.
//!
//! References (a session or agent named but neither in the batch nor stored) are checked
//! against the database by `upload`, as `not_found`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;
use baton_usage_model::dedup;
use baton_usage_model::record::{Modifiers, ServerTools, Tokens};

use crate::keys::{SessionKey, UsageKey};

mod facts;
mod fields;
pub use facts::{Agent, Batch, Delivery, Edge, Kind, Session, Usage};
use fields::{
    bounded_count, instant, invalid, label, modifier, optional_label, ordered, required_instant,
    tokens,
};
pub use fields::{id, key};

pub const MAX_SESSIONS: usize = 500;
pub const MAX_AGENTS: usize = 5000;
pub const MAX_EDGES: usize = 5000;
pub const MAX_USAGE: usize = 10_000;
pub const MAX_DELIVERIES: usize = 2000;
pub const MAX_TOKENS: u64 = 1_000_000_000_000;
/// Server-tool calls one request may report, per tool.
pub const MAX_SERVER_TOOL_CALLS: u64 = 1_000_000;
pub const MAX_CLIENT_VERSIONS: usize = 32;

/// The join paths an edge can be proved by (`baton_usage_model::JoinPath::as_str`).
pub const JOIN_PATHS: [&str; 11] = [
    "tool_result",
    "agent_progress",
    "meta_file",
    "task_notification",
    "queue_operation",
    "codex_source",
    "codex_review_echo",
    "compaction",
    "directory",
    "legacy_sibling",
    "inline_sidechain",
];

/// Checks a whole batch uploaded for `member` (the call's, already checked); `now` bounds its
/// instants.
pub fn batch(
    request: &proto::UploadBatchRequest,
    member: Option<String>,
    now: DateTime<Utc>,
) -> Result<Batch, ApiError> {
    let counts = [
        ("sessions", request.sessions.len(), MAX_SESSIONS),
        ("agents", request.agents.len(), MAX_AGENTS),
        ("edges", request.edges.len(), MAX_EDGES),
        ("usage", request.usage.len(), MAX_USAGE),
        ("deliveries", request.deliveries.len(), MAX_DELIVERIES),
    ];
    for (field, count, max) in counts {
        if count > max {
            return Err(invalid(format!("at most {max} {field} per batch")));
        }
    }
    if counts.iter().all(|(_, count, _)| *count == 0) {
        return Err(invalid("a batch carries at least one fact"));
    }
    let host_id = id("hostId", &request.host_id, 128)?;
    optional_label("hostname", request.hostname.as_ref(), 255)?;
    optional_label("clientVersion", request.client_version.as_ref(), 64)?;

    let mut sessions = Vec::with_capacity(request.sessions.len());
    let mut seen_sessions = std::collections::HashSet::new();
    for fact in &request.sessions {
        let SessionKey { agent, session_id } = key(&fact.agent, &fact.session_id)?;
        if !seen_sessions.insert(SessionKey::new(&agent, &session_id)) {
            return Err(invalid("a session appears twice in the batch"));
        }
        if fact.client_versions.len() > MAX_CLIENT_VERSIONS {
            return Err(invalid("at most 32 clientVersions per session"));
        }
        let client_versions = fact
            .client_versions
            .iter()
            .map(|version| label("clientVersions[]", version, 64))
            .collect::<Result<Vec<_>, _>>()?;
        let first = instant(
            "sessions[].firstActivityAt",
            fact.first_activity_at.as_ref(),
            now,
        )?;
        let last = instant(
            "sessions[].lastActivityAt",
            fact.last_activity_at.as_ref(),
            now,
        )?;
        ordered("sessions[]", first, last)?;
        sessions.push(Session {
            agent,
            session_id,
            project_slug: label("projectSlug", &fact.project_slug, 256)?,
            client_versions,
            output_under_reported: fact.output_under_reported,
            first_activity_at: first,
            last_activity_at: last,
        });
    }

    let mut agents = Vec::with_capacity(request.agents.len());
    let mut seen_agents = std::collections::HashSet::new();
    for fact in &request.agents {
        let checked = agent(fact, now)?;
        if !seen_agents.insert(checked.key()) {
            return Err(invalid("an agent appears twice in the batch"));
        }
        agents.push(checked);
    }

    let edges = request
        .edges
        .iter()
        .map(|fact| {
            let SessionKey { agent, session_id } = key(&fact.agent, &fact.session_id)?;
            if !JOIN_PATHS.contains(&fact.join_path.as_str()) {
                return Err(invalid("edges[].joinPath is not a known join path"));
            }
            let parent = match &fact.parent_agent_id {
                Some(parent) => id("edges[].parentAgentId", parent, 128)?,
                None => String::new(),
            };
            let child = id("edges[].childAgentId", &fact.child_agent_id, 128)?;
            if parent == child {
                return Err(invalid("an edge cannot join an agent to itself"));
            }
            Ok(Edge {
                agent,
                session_id,
                parent_agent_id: parent,
                child_agent_id: child,
                join_path: fact.join_path.clone(),
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;

    let mut usage: Vec<Usage> = Vec::with_capacity(request.usage.len());
    let mut by_key: std::collections::HashMap<UsageKey, usize> = std::collections::HashMap::new();
    for fact in &request.usage {
        let row = usage_row(fact, now)?;
        match by_key.entry(row.key()) {
            std::collections::hash_map::Entry::Occupied(slot) => {
                let current = &mut usage[*slot.get()];
                if dedup::replaces(&row.record(), &current.record()) {
                    *current = row;
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(usage.len());
                usage.push(row);
            }
        }
    }

    let deliveries = request
        .deliveries
        .iter()
        .map(|fact| {
            let SessionKey { agent, session_id } = key(&fact.agent, &fact.session_id)?;
            let delivery_id = Uuid::parse_str(&fact.delivery_id)
                .map_err(|_| invalid("deliveries[].deliveryId must be a uuid"))?;
            let event_ok = !fact.event.is_empty()
                && fact.event.len() <= 64
                && fact
                    .event
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
            if !event_ok {
                return Err(invalid("deliveries[].event must be 1..64 of [A-Za-z0-9_-]"));
            }
            Ok(Delivery {
                delivery_id,
                agent,
                session_id,
                event: fact.event.clone(),
                observed_at: required_instant(
                    "deliveries[].observedAt",
                    fact.observed_at.as_ref(),
                    now,
                )?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;

    Ok(Batch {
        host_id,
        member: member.unwrap_or_default(),
        sessions,
        agents,
        edges,
        usage,
        deliveries,
    })
}

fn agent(fact: &proto::AgentFact, now: DateTime<Utc>) -> Result<Agent, ApiError> {
    let SessionKey { agent, session_id } = key(&fact.agent, &fact.session_id)?;
    let kind = Kind::parse(&fact.kind)
        .ok_or_else(|| invalid("agents[].kind must be main, subagent or compaction"))?;
    let agent_id = match (&fact.agent_id, kind) {
        (None, Kind::Main) => String::new(),
        (Some(_), Kind::Main) => return Err(invalid("the main agent has no agentId")),
        (None, _) => return Err(invalid("a subagent or compaction needs an agentId")),
        (Some(value), _) => id("agents[].agentId", value, 128)?,
    };
    let parent_agent_id = fact
        .parent_agent_id
        .as_deref()
        .map(|parent| id("agents[].parentAgentId", parent, 128))
        .transpose()?;
    if kind == Kind::Main && parent_agent_id.is_some() {
        return Err(invalid("the main agent has no parent"));
    }
    if parent_agent_id.as_deref() == Some(agent_id.as_str()) {
        return Err(invalid("an agent cannot be its own parent"));
    }
    let first = instant(
        "agents[].firstActivityAt",
        fact.first_activity_at.as_ref(),
        now,
    )?;
    let last = instant(
        "agents[].lastActivityAt",
        fact.last_activity_at.as_ref(),
        now,
    )?;
    ordered("agents[]", first, last)?;
    let ended_at = instant("agents[].endedAt", fact.ended_at.as_ref(), now)?;
    let ended = match (fact.ended.as_deref(), ended_at) {
        (None, None) => None,
        (Some(_), _) if kind == Kind::Main => {
            return Err(invalid(
                "the main agent's end is its Stop delivery, not `ended`",
            ));
        }
        (Some(word @ ("completed" | "error")), Some(at)) => Some((word.to_string(), at)),
        (Some("completed" | "error"), None) => {
            return Err(invalid("agents[].ended needs endedAt"));
        }
        (Some(_), _) => return Err(invalid("agents[].ended must be completed or error")),
        (None, Some(_)) => return Err(invalid("agents[].endedAt needs ended")),
    };
    Ok(Agent {
        agent,
        session_id,
        agent_id,
        kind,
        parent_agent_id,
        subagent_type: optional_label("agents[].subagentType", fact.subagent_type.as_ref(), 128)?,
        spawn_tool: optional_label("agents[].spawnTool", fact.spawn_tool.as_ref(), 64)?,
        model: optional_label("agents[].model", fact.model.as_ref(), 128)?,
        first_activity_at: first,
        last_activity_at: last,
        ended,
    })
}

fn usage_row(fact: &proto::UsageFact, now: DateTime<Utc>) -> Result<Usage, ApiError> {
    let SessionKey { agent, session_id } = key(&fact.agent, &fact.session_id)?;
    let agent_id = match &fact.agent_id {
        Some(value) => id("usage[].agentId", value, 128)?,
        None => String::new(),
    };
    Ok(Usage {
        agent,
        session_id,
        agent_id,
        dedup_key: label("usage[].dedupKey", &fact.dedup_key, 256)?,
        model: optional_label("usage[].model", fact.model.as_ref(), 128)?,
        at: required_instant("usage[].at", fact.at.as_ref(), now)?,
        tokens: Tokens {
            input: tokens(fact.input, "usage[].input")?,
            output: tokens(fact.output, "usage[].output")?,
            cache_read: tokens(fact.cache_read, "usage[].cacheRead")?,
            cache_write_5m: tokens(fact.cache_write_5m, "usage[].cacheWrite5m")?,
            cache_write_1h: tokens(fact.cache_write_1h, "usage[].cacheWrite1h")?,
            reasoning: tokens(fact.reasoning, "usage[].reasoning")?,
        },
        server_tools: ServerTools {
            web_search: bounded_count(
                fact.web_search_requests,
                "usage[].webSearchRequests",
                MAX_SERVER_TOOL_CALLS,
            )?,
            web_fetch: bounded_count(
                fact.web_fetch_requests,
                "usage[].webFetchRequests",
                MAX_SERVER_TOOL_CALLS,
            )?,
        },
        modifiers: Modifiers {
            service_tier: modifier("usage[].serviceTier", fact.service_tier.as_ref())?,
            speed: modifier("usage[].speed", fact.speed.as_ref())?,
            inference_geo: modifier("usage[].inferenceGeo", fact.inference_geo.as_ref())?,
        },
        sidechain: fact.sidechain,
    })
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
