//! Sessions out of the files read: each file's usage put in its session, the duplicate-session
//! rule, each session's project, versions, span and client figures, and its agent tree.

use std::collections::{BTreeMap, BTreeSet};

use super::Session;
use crate::codex;
use crate::facts::FileFacts;
use crate::read::{AgentMeta, FileRead};
use crate::record::{Harness, UsageRecord};
use crate::tree::{self, FileOrigin, SessionInput};
use crate::walk::{FileEntry, Role, SkipReason, Skips};

/// The first Claude Code version whose transcripts carry final output counts.
const FIXED_OUTPUT_VERSION: (u64, u64, u64) = (2, 1, 97);

/// The session a file's usage belongs to: for a Codex rollout, its thread's root.
pub(super) fn facts_session(
    entry: &FileEntry,
    facts: &FileFacts,
    joined: &codex::threads::Join,
) -> String {
    match entry.role {
        Role::ClaudeLegacySibling { .. } => facts.line_session_id.clone(),
        Role::CodexRollout => facts
            .codex
            .session_id
            .as_deref()
            .map(|own| joined.session_of(own))
            .or_else(|| entry.session_id.clone()),
        // A main chat names its session in its metadata; several files can share one.
        Role::GeminiMain { .. } => facts.gemini_id.clone().or_else(|| entry.session_id.clone()),
        _ => entry.session_id.clone(),
    }
    .unwrap_or_default()
}

/// A Codex review echoed by its parent whose own rollout is not here keeps its usage under
/// the parent's review agent: that agent joins the session's tree.
pub(super) fn add_review_echo_agents(sessions: &mut [Session], records: &[UsageRecord]) {
    let echoed: BTreeSet<(&str, &str)> = records
        .iter()
        .filter(|r| {
            r.harness == Harness::Codex
                && r.sidechain
                && r.message_id.starts_with(codex::ECHO_PREFIX)
        })
        .filter_map(|r| Some((r.session_id.as_str(), r.agent_id.as_deref()?)))
        .collect();
    for session in sessions.iter_mut().filter(|s| s.harness == Harness::Codex) {
        for (_, agent) in echoed
            .range((session.session_id.as_str(), "")..)
            .take_while(|(s, _)| *s == session.session_id)
        {
            codex::threads::add_echo_agent(&mut session.agents, &session.session_id, agent);
        }
    }
}

/// Groups files into sessions, applies the duplicate-session rule and builds each tree.
pub(super) fn assemble(
    files: &[(&FileEntry, FileRead)],
    metas: &BTreeMap<(String, String), AgentMeta>,
    joined: &codex::threads::Join,
    skips: &mut Skips,
) -> Vec<Session> {
    let mut grouped: BTreeMap<(Harness, String), Vec<(&FileEntry, &FileFacts)>> = BTreeMap::new();
    for (entry, read) in files {
        let session = facts_session(entry, &read.facts, joined);
        if session.is_empty() {
            continue;
        }
        grouped
            .entry((entry.harness, session))
            .or_default()
            .push((entry, &read.facts));
    }
    let mut sessions = Vec::new();
    for ((harness, session_id), members) in grouped {
        let slugs: BTreeSet<String> = members
            .iter()
            .map(|(entry, facts)| project_of(entry, facts))
            .collect();
        let main_slugs: BTreeSet<String> = members
            .iter()
            .filter(|(entry, _)| entry.role == Role::ClaudeMain)
            .filter_map(|(entry, _)| entry.project_slug.clone())
            .collect();
        for _ in main_slugs.iter().skip(1) {
            skips.add(SkipReason::DuplicateSession);
        }
        // A Codex session's project is its root thread's folder (spawned threads may work in
        // a worktree of their own).
        let root_slug = members
            .iter()
            .find(|(entry, facts)| {
                entry.role == Role::CodexRollout
                    && facts.codex.session_id.as_deref() == Some(session_id.as_str())
            })
            .map(|(entry, facts)| project_of(entry, facts));
        let project_slug = main_slugs
            .iter()
            .next()
            .cloned()
            .or(root_slug)
            .or(slugs.iter().next().cloned())
            .unwrap_or_default();
        let mut versions = BTreeSet::new();
        let (mut first_ms, mut last_ms, mut client_cost_usd) = (None, None, None);
        let mut client_tokens = BTreeMap::new();
        for (_, facts) in &members {
            versions.extend(facts.versions.iter().cloned());
            first_ms = min_opt(first_ms, facts.first_ms);
            last_ms = max_opt(last_ms, facts.last_ms);
            if facts.client_cost_usd.is_some() {
                client_cost_usd = facts.client_cost_usd;
                client_tokens = facts.client_tokens.clone();
            }
        }
        let input = SessionInput {
            files: members
                .iter()
                .map(|(entry, facts)| {
                    let (owner, origin) = match &entry.role {
                        Role::ClaudeSubagent { agent_id } => {
                            (Some(agent_id.as_str()), FileOrigin::Sidecar)
                        }
                        Role::ClaudeLegacySibling { agent_id } => {
                            (Some(agent_id.as_str()), FileOrigin::LegacySibling)
                        }
                        Role::GeminiSubagent { agent_id } => {
                            (Some(agent_id.as_str()), FileOrigin::Sidecar)
                        }
                        _ => (None, FileOrigin::Main),
                    };
                    (owner, *facts, origin)
                })
                .collect(),
            metas: metas
                .iter()
                .filter(|((session, _), _)| *session == session_id)
                .map(|((_, agent), meta)| (agent.clone(), meta.clone()))
                .collect(),
        };
        let output_under_reported = harness == Harness::ClaudeCode
            && versions
                .iter()
                .any(|version| parse_version(version).is_some_and(|v| v < FIXED_OUTPUT_VERSION));
        let agents = match harness {
            Harness::Codex => {
                let facts: Vec<&FileFacts> = members.iter().map(|(_, f)| *f).collect();
                codex::threads::tree(&session_id, &facts, joined)
            }
            Harness::ClaudeCode | Harness::Gemini | Harness::Copilot => tree::build(&input),
        };
        sessions.push(Session {
            harness,
            session_id,
            project_slug,
            versions,
            output_under_reported,
            first_ms,
            last_ms,
            client_cost_usd,
            client_tokens,
            agents,
        });
    }
    sessions
}

fn project_of(entry: &FileEntry, facts: &FileFacts) -> String {
    match (&entry.project_slug, &facts.cwd) {
        (Some(slug), _) => slug.clone(),
        (None, Some(cwd)) => slug_of(cwd),
        (None, None) => String::new(),
    }
}

/// Claude Code's project folder name for a working folder: every non-alphanumeric character
/// replaced by `-` (HOOKS.md 4.1).
pub fn slug_of(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// `major.minor.patch` of a version string (pre-release and build suffixes ignored).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let core = text.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}
