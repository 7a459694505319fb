//! A session's agent tree from its files' facts (HOOKS.md 4.5; seed 002, "orchestration edge").
//!
//! Each subagent's parent is the agent whose file holds the spawn call (`Task` / `Agent`
//! tool use) that a proof ties to it. Proofs, strongest first: the spawn's tool result naming
//! the agent (`toolUseResult.agentId`), a parent progress line (`agent_progress` with
//! `parentToolUseID`), the agent's `meta.json` (`toolUseId`). Without a proof the file's
//! place decides: `agent-acompact-*` is a compaction call of the main agent; a legacy sibling
//! file or a sidecar in the session's folder hangs from the main agent with the weaker join
//! path recorded, so a consumer can tell inferred edges from proven ones. A proof that would
//! make an agent its own ancestor is ignored.
//!
//! An agent has ended when its spawn call's tool result is in the parent's transcript
//! ([`crate::facts::SpawnResult`]): `completed`, or `error` when the result records a failure
//! or an early termination. Nothing else ends an agent here (no SubagentStop).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::facts::{FileFacts, JoinPath, Spawn, SpawnResult};
use crate::read::AgentMeta;

/// What an agent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AgentKind {
    Main,
    Subagent,
    Compaction,
}

/// One agent of a session's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    /// `None` for the main agent.
    pub agent_id: Option<String>,
    pub kind: AgentKind,
    /// The parent's id; `None` for the main agent and for the main agent's children.
    pub parent_agent_id: Option<String>,
    pub subagent_type: Option<String>,
    pub description: Option<String>,
    /// `Task` or `Agent`, when the spawn call was found.
    pub spawn_tool: Option<String>,
    pub spawn_tool_use_id: Option<String>,
    /// How the edge to the parent was established; `None` for the main agent.
    pub join_path: Option<JoinPath>,
    /// The agent has a transcript file of its own (a spawned agent's file may be gone).
    pub has_file: bool,
    /// The transcript's evidence that the agent ended, when there is some.
    pub ended: Option<Ended>,
}

impl Agent {
    /// The session's main agent; `has_file` when its transcript is there.
    pub fn main(has_file: bool) -> Agent {
        Agent {
            agent_id: None,
            kind: AgentKind::Main,
            parent_agent_id: None,
            subagent_type: None,
            description: None,
            spawn_tool: None,
            spawn_tool_use_id: None,
            join_path: None,
            has_file,
            ended: None,
        }
    }
}

/// How an agent ended, from its spawn call's tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    pub status: EndStatus,
    /// When the result was written (milliseconds since the epoch), when the line says.
    pub at_ms: Option<i64>,
}

/// `completed` or `error` (seed 002's words for an observed end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EndStatus {
    Completed,
    Error,
}

impl EndStatus {
    /// The word on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EndStatus::Completed => "completed",
            EndStatus::Error => "error",
        }
    }
}

/// The inputs: each file's agent (`None` = main) and facts, plus meta files by agent id.
pub struct SessionInput<'a> {
    pub files: Vec<(Option<&'a str>, &'a FileFacts, FileOrigin)>,
    pub metas: BTreeMap<String, AgentMeta>,
}

/// Where a file sat, for the fallback join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOrigin {
    Main,
    Sidecar,
    LegacySibling,
}

/// Builds the tree: the main agent first, then the others sorted by id.
pub fn build(input: &SessionInput<'_>) -> Vec<Agent> {
    let mut spawns: HashMap<&str, (Option<&str>, &Spawn)> = HashMap::new();
    let mut proofs: Vec<(&str, &str, JoinPath)> = Vec::new();
    let mut results: HashMap<&str, &SpawnResult> = HashMap::new();
    let mut agents: BTreeMap<String, FileOrigin> = BTreeMap::new();
    let mut has_main = false;
    for (owner, facts, origin) in &input.files {
        match owner {
            Some(agent) => {
                agents.entry((*agent).to_string()).or_insert(*origin);
            }
            None => has_main = true,
        }
        for spawn in &facts.spawns {
            let caller = spawn.caller.as_deref().or(*owner);
            spawns
                .entry(spawn.tool_use_id.as_str())
                .or_insert((caller, spawn));
        }
        for result in &facts.results {
            results.entry(result.tool_use_id.as_str()).or_insert(result);
        }
        for link in &facts.links {
            proofs.push((link.agent_id.as_str(), link.tool_use_id.as_str(), link.path));
        }
        for record in &facts.records {
            if let (None, Some(agent)) = (owner, record.agent_id.as_deref()) {
                agents.entry(agent.to_string()).or_insert(FileOrigin::Main);
            }
        }
    }
    for (agent, meta) in &input.metas {
        if let Some(tool_use_id) = meta.tool_use_id.as_deref() {
            proofs.push((agent.as_str(), tool_use_id, JoinPath::MetaFile));
        }
    }
    // Agents a proof names but whose file is gone are still part of the tree.
    for (agent, tool_use_id, _) in &proofs {
        if spawns.contains_key(tool_use_id) && !agents.contains_key(*agent) {
            agents.insert((*agent).to_string(), FileOrigin::Sidecar);
        }
    }
    proofs.sort_by_key(|(agent, tool, path)| (*path, *agent, *tool));

    let mut tree: Vec<Agent> = Vec::new();
    if has_main || !agents.is_empty() {
        tree.push(Agent::main(has_main));
    }
    let with_files: std::collections::BTreeSet<&str> = input
        .files
        .iter()
        .filter_map(|(owner, _, _)| *owner)
        .collect();
    let mut parents: HashMap<String, Option<String>> = HashMap::new();
    for (agent_id, origin) in &agents {
        let meta = input.metas.get(agent_id);
        let proof = proofs.iter().find(|(agent, tool, _)| {
            agent == agent_id
                && spawns.get(tool).is_some_and(|(owner, _)| {
                    owner.is_none_or(|owner| {
                        !is_ancestor(&parents, agent_id, owner) && owner != agent_id
                    })
                })
        });
        let mut node = Agent {
            agent_id: Some(agent_id.clone()),
            kind: AgentKind::Subagent,
            parent_agent_id: None,
            subagent_type: meta.and_then(|m| m.agent_type.clone()),
            description: meta.and_then(|m| m.description.clone()),
            spawn_tool: None,
            spawn_tool_use_id: None,
            join_path: None,
            has_file: with_files.contains(agent_id.as_str()),
            ended: None,
        };
        if let Some((_, tool_use_id, path)) = proof {
            let (owner, spawn) = spawns[tool_use_id];
            node.parent_agent_id = owner.map(str::to_string);
            node.subagent_type = spawn.subagent_type.clone().or(node.subagent_type);
            node.description = spawn.description.clone().or(node.description);
            node.spawn_tool = Some(spawn.tool_name.clone());
            node.spawn_tool_use_id = Some(spawn.tool_use_id.clone());
            node.join_path = Some(*path);
            node.ended = results.get(tool_use_id).map(|result| Ended {
                status: if result.is_error {
                    EndStatus::Error
                } else {
                    EndStatus::Completed
                },
                at_ms: result.timestamp_ms,
            });
        } else if agent_id.starts_with("acompact") {
            node.kind = AgentKind::Compaction;
            node.join_path = Some(JoinPath::Compaction);
        } else {
            node.join_path = Some(match origin {
                FileOrigin::LegacySibling => JoinPath::LegacySibling,
                FileOrigin::Main => JoinPath::InlineSidechain,
                FileOrigin::Sidecar => JoinPath::Directory,
            });
        }
        parents.insert(agent_id.clone(), node.parent_agent_id.clone());
        tree.push(node);
    }
    tree
}

/// Whether `candidate` has `agent` among its ancestors (so `agent` cannot be its child).
fn is_ancestor(parents: &HashMap<String, Option<String>>, agent: &str, candidate: &str) -> bool {
    let mut current = Some(candidate.to_string());
    let mut steps = 0;
    while let Some(node) = current {
        if node == agent {
            return true;
        }
        steps += 1;
        if steps > parents.len() + 1 {
            return true;
        }
        current = parents.get(&node).cloned().flatten();
    }
    false
}
