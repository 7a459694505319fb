//! From a read corpus to each session's upload facts (pure).
//!
//! Rules:
//! - one [`SessionFacts`] per corpus session: its session fact, one agent fact per tree node,
//!   one edge per non-main agent (with the join path that proved it) and one usage fact per
//!   deduplicated record of the session;
//! - identifiers and counts only: the spawn `description`, message text, tool inputs and
//!   outputs are never read here, and the only place name is the project slug;
//! - an agent's model is its latest request's model, its activity the span of its requests;
//!   its end is the tree's ended evidence, dated by the result line (else its last activity);
//! - a fact the server would refuse (an id, model or slug outside the contract's bounds or
//!   holding control characters) is left out and counted in [`Built::invalid`], with the usage
//!   rows that name it: one bad row never costs the rest of the upload;
//! - instants must lie between 2000-01-01 and a day after `now` (the server's window): a usage
//!   row outside it is left out and counted, an activity or end instant outside it is omitted
//!   (an end without its instant is omitted with it); a row with a count above 10^12 tokens
//!   (reasoning included) or 10^6 calls of one server tool is left out;
//! - reasoning and server-tool counts travel as the record states them (omitted when zero).

use std::collections::{BTreeMap, BTreeSet};

use baton_transcripts::tree::{Agent, AgentKind};
use baton_transcripts::{Corpus, Harness, Session, UsageRecord};

use super::wire::{AgentFact, EdgeFact, SessionFact, UsageFact, timestamp};

/// At most this many client versions per session (the contract's bound).
pub const MAX_VERSIONS: usize = 32;

/// The facts of one session, ready to be compared with the ledger and split into batches.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFacts {
    /// `<agent>/<sessionId>`: the ledger's key.
    pub key: String,
    pub session: SessionFact,
    pub agents: Vec<AgentFact>,
    pub edges: Vec<EdgeFact>,
    /// By dedup key.
    pub usage: BTreeMap<String, UsageFact>,
}

/// Every session's facts and what had to be left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Built {
    pub sessions: Vec<SessionFacts>,
    /// Facts (sessions, agents, usage rows) outside the contract's bounds, left out.
    pub invalid: u64,
}

/// The key a session is known by in the ledger and in reports.
pub fn session_key(agent: &str, session_id: &str) -> String {
    format!("{agent}/{session_id}")
}

/// The earliest instant the server takes (2000-01-01T00:00:00Z), in milliseconds.
pub const EARLIEST_MS: i64 = 946_684_800_000;
/// How far past `now` an instant may lie (clock skew between machines).
pub const SKEW_MS: i64 = 86_400_000;
/// The largest token count of one kind the server takes.
pub const MAX_TOKENS: u64 = 1_000_000_000_000;
/// The most calls of one server tool the server takes on one request.
pub const MAX_SERVER_TOOL_CALLS: u64 = 1_000_000;

/// An instant the server takes, as RFC 3339; `None` outside the window.
fn instant(ms: i64, now_ms: i64) -> Option<String> {
    (EARLIEST_MS..=now_ms.saturating_add(SKEW_MS))
        .contains(&ms)
        .then(|| timestamp(ms))
        .flatten()
}

/// Builds the facts of every session of `corpus`, with `now_ms` bounding its instants.
pub fn build(corpus: &Corpus, now_ms: i64) -> Built {
    let mut records: BTreeMap<(Harness, &str), Vec<&UsageRecord>> = BTreeMap::new();
    for record in &corpus.records {
        records
            .entry((record.harness, record.session_id.as_str()))
            .or_default()
            .push(record);
    }
    let mut built = Built::default();
    for session in &corpus.sessions {
        let own = records
            .remove(&(session.harness, session.session_id.as_str()))
            .unwrap_or_default();
        match session_facts(session, &own, now_ms) {
            Some((facts, invalid)) => {
                built.invalid += invalid;
                built.sessions.push(facts);
            }
            None => built.invalid += 1 + own.len() as u64,
        }
    }
    // Records whose session the corpus could not assemble have nothing to hang from.
    built.invalid += records.values().map(|rows| rows.len() as u64).sum::<u64>();
    built
}

/// One session's facts, and how many of its facts were left out; `None` when the session
/// itself is outside the bounds.
pub fn session_facts(
    session: &Session,
    records: &[&UsageRecord],
    now_ms: i64,
) -> Option<(SessionFacts, u64)> {
    let instant = |ms: i64| instant(ms, now_ms);
    let agent = session.harness.as_str().to_string();
    if !text_ok(&session.session_id, 256) || !text_ok(&session.project_slug, 256) {
        return None;
    }
    let mut invalid = 0;
    let session_fact = SessionFact {
        agent: agent.clone(),
        session_id: session.session_id.clone(),
        project_slug: session.project_slug.clone(),
        client_versions: session
            .versions
            .iter()
            .filter(|version| text_ok(version, 64))
            .take(MAX_VERSIONS)
            .cloned()
            .collect(),
        output_under_reported: session.output_under_reported,
        first_activity_at: session.first_ms.and_then(instant),
        last_activity_at: session.last_ms.and_then(instant),
    };
    let mut spans: BTreeMap<Option<&str>, Span<'_>> = BTreeMap::new();
    for record in records {
        spans
            .entry(record.agent_id.as_deref())
            .or_default()
            .saw(record);
    }
    let mut agents = Vec::new();
    let mut edges = Vec::new();
    let mut known: BTreeSet<Option<String>> = BTreeSet::new();
    for node in &session.agents {
        if !agent_ok(node) {
            invalid += 1;
            continue;
        }
        known.insert(node.agent_id.clone());
        let span = spans.get(&node.agent_id.as_deref());
        agents.push(agent_fact(&agent, &session.session_id, node, span, now_ms));
        if let (Some(child), Some(path)) = (&node.agent_id, node.join_path) {
            edges.push(EdgeFact {
                agent: agent.clone(),
                session_id: session.session_id.clone(),
                parent_agent_id: node.parent_agent_id.clone(),
                child_agent_id: child.clone(),
                join_path: path.as_str(),
            });
        }
    }
    // An edge whose parent was left out would name an agent the server never saw.
    edges.retain(|edge| known.contains(&edge.parent_agent_id));
    let mut usage = BTreeMap::new();
    for record in records {
        let key = record.dedup_key();
        let model_ok = record.model.as_deref().is_none_or(|m| text_ok(m, 128));
        let counts_ok = [
            record.tokens.input,
            record.tokens.output,
            record.tokens.cache_read,
            record.tokens.cache_write_5m,
            record.tokens.cache_write_1h,
            record.tokens.reasoning,
        ]
        .iter()
        .all(|count| *count <= MAX_TOKENS)
            && [
                record.server_tools.web_search,
                record.server_tools.web_fetch,
            ]
            .iter()
            .all(|count| *count <= MAX_SERVER_TOOL_CALLS);
        let Some(at) = instant(record.timestamp_ms).filter(|_| counts_ok) else {
            invalid += 1;
            continue;
        };
        if !known.contains(&record.agent_id) || !text_ok(&key, 256) || !model_ok {
            invalid += 1;
            continue;
        }
        usage.insert(key.clone(), usage_fact(&agent, record, key, at));
    }
    let facts = SessionFacts {
        key: session_key(&agent, &session.session_id),
        session: session_fact,
        agents,
        edges,
        usage,
    };
    Some((facts, invalid))
}

fn agent_fact(
    agent: &str,
    session_id: &str,
    node: &Agent,
    span: Option<&Span<'_>>,
    now_ms: i64,
) -> AgentFact {
    let instant = |ms: i64| instant(ms, now_ms);
    let last_ms = span.map(|span| span.last_ms);
    let ended = node.ended.and_then(|ended| {
        let at = ended.at_ms.or(last_ms).and_then(instant)?;
        Some((ended.status.as_str(), at))
    });
    AgentFact {
        agent: agent.to_string(),
        session_id: session_id.to_string(),
        agent_id: node.agent_id.clone(),
        kind: match node.kind {
            AgentKind::Main => "main",
            AgentKind::Subagent => "subagent",
            AgentKind::Compaction => "compaction",
        },
        parent_agent_id: node.parent_agent_id.clone(),
        subagent_type: node.subagent_type.clone().filter(|kind| text_ok(kind, 128)),
        spawn_tool: node.spawn_tool.clone().filter(|tool| text_ok(tool, 64)),
        model: span
            .and_then(|span| span.model)
            .filter(|model| text_ok(model, 128))
            .map(str::to_string),
        first_activity_at: span.and_then(|span| instant(span.first_ms)),
        last_activity_at: last_ms.and_then(instant),
        ended: ended.as_ref().map(|(status, _)| *status),
        ended_at: ended.map(|(_, at)| at),
    }
}

fn usage_fact(agent: &str, record: &UsageRecord, dedup_key: String, at: String) -> UsageFact {
    UsageFact {
        agent: agent.to_string(),
        session_id: record.session_id.clone(),
        agent_id: record.agent_id.clone(),
        dedup_key,
        model: record.model.clone(),
        at,
        input: record.tokens.input,
        output: record.tokens.output,
        cache_read: record.tokens.cache_read,
        cache_write_5m: record.tokens.cache_write_5m,
        cache_write_1h: record.tokens.cache_write_1h,
        service_tier: bounded(record.modifiers.service_tier.as_deref()),
        speed: bounded(record.modifiers.speed.as_deref()),
        inference_geo: bounded(record.modifiers.inference_geo.as_deref()),
        sidechain: record.sidechain,
        reasoning: record.tokens.reasoning,
        web_search_requests: record.server_tools.web_search,
        web_fetch_requests: record.server_tools.web_fetch,
    }
}

/// An agent's requests: first and last time, and the latest request's model.
#[derive(Default)]
struct Span<'a> {
    first_ms: i64,
    last_ms: i64,
    model: Option<&'a str>,
    seen: bool,
}

impl<'a> Span<'a> {
    fn saw(&mut self, record: &'a UsageRecord) {
        let ms = record.timestamp_ms;
        if !self.seen || ms < self.first_ms {
            self.first_ms = ms;
        }
        if !self.seen || ms >= self.last_ms {
            self.last_ms = ms;
            self.model = record.model.as_deref();
        }
        self.seen = true;
    }
}

/// Whether an agent's identifiers are inside the contract: ids of 1..128 `[A-Za-z0-9._:-]`.
fn agent_ok(node: &Agent) -> bool {
    node.agent_id.as_deref().is_none_or(id_ok) && node.parent_agent_id.as_deref().is_none_or(id_ok)
}

/// 1..128 of `[A-Za-z0-9._:-]` (agent ids, host ids).
pub fn id_ok(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// 1..`max` characters, none of them a control character.
pub fn text_ok(text: &str, max: usize) -> bool {
    !text.is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control)
}

fn bounded(value: Option<&str>) -> Option<String> {
    value.filter(|v| text_ok(v, 64)).map(str::to_string)
}
