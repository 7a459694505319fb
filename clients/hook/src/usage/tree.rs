//! A session's agent tree with each agent's own tokens and cost and its subtree's total.

use std::collections::BTreeMap;

use baton_transcripts::Session;
use baton_transcripts::tree::Agent;

use super::aggregate::{Selection, Sum, model_label};

/// One agent in depth-first order.
#[derive(Debug, Clone)]
pub struct TreeNode {
    pub agent: Agent,
    /// `main` or the parent's id (`None` only for the main agent itself).
    pub parent_label: Option<String>,
    pub depth: usize,
    /// The model most of the agent's requests used.
    pub model: Option<String>,
    pub own: Sum,
    pub rolled_up: Sum,
}

/// The tree of `session` with sums over the selected records.
pub fn nodes(session: &Session, selection: &Selection<'_>) -> Vec<TreeNode> {
    let mut own: BTreeMap<Option<String>, Sum> = BTreeMap::new();
    let mut model_counts: BTreeMap<Option<String>, BTreeMap<String, u64>> = BTreeMap::new();
    for (record, priced, _) in &selection.priced {
        if record.session_id != session.session_id || record.harness != session.harness {
            continue;
        }
        own.entry(record.agent_id.clone())
            .or_default()
            .add(record, *priced);
        if !record.is_synthetic() {
            *model_counts
                .entry(record.agent_id.clone())
                .or_default()
                .entry(model_label(record))
                .or_insert(0) += 1;
        }
    }
    let children = |parent: Option<&str>| -> Vec<&Agent> {
        session
            .agents
            .iter()
            .filter(|a| a.agent_id.is_some() && a.parent_agent_id.as_deref() == parent)
            .collect()
    };
    let mut ordered: Vec<TreeNode> = Vec::new();
    let Some(main) = session.agents.iter().find(|a| a.agent_id.is_none()) else {
        return ordered;
    };
    let mut stack: Vec<(&Agent, usize)> = vec![(main, 0)];
    let mut seen = std::collections::BTreeSet::new();
    while let Some((agent, depth)) = stack.pop() {
        if !seen.insert(agent.agent_id.clone()) {
            continue;
        }
        let key = agent.agent_id.clone();
        let model = model_counts
            .get(&key)
            .and_then(|counts| {
                counts
                    .iter()
                    .max_by_key(|(name, n)| (**n, std::cmp::Reverse((*name).clone())))
            })
            .map(|(name, _)| name.clone());
        ordered.push(TreeNode {
            parent_label: agent.agent_id.as_ref().map(|_| {
                agent
                    .parent_agent_id
                    .clone()
                    .unwrap_or_else(|| "main".to_string())
            }),
            depth,
            model,
            own: own.get(&key).copied().unwrap_or_default(),
            rolled_up: Sum::default(),
            agent: agent.clone(),
        });
        let mut kids = children(agent.agent_id.as_deref());
        kids.reverse();
        stack.extend(kids.into_iter().map(|kid| (kid, depth + 1)));
    }
    // Agents whose parent chain never reaches the main agent hang from it rather than vanish.
    for agent in &session.agents {
        if !seen.contains(&agent.agent_id) {
            ordered.push(TreeNode {
                parent_label: Some("main".to_string()),
                depth: 1,
                model: None,
                own: own.get(&agent.agent_id).copied().unwrap_or_default(),
                rolled_up: Sum::default(),
                agent: agent.clone(),
            });
        }
    }
    // Roll up from the leaves: a node's subtree is it and the nodes after it at greater depth.
    for index in (0..ordered.len()).rev() {
        let mut total = ordered[index].own;
        let depth = ordered[index].depth;
        for later in ordered.iter().skip(index + 1) {
            if later.depth <= depth {
                break;
            }
            total.merge(&later.own);
        }
        ordered[index].rolled_up = total;
    }
    ordered
}

/// Finds a session by id (any harness); a unique prefix of at least 8 characters is enough.
pub fn find<'a>(sessions: &'a [Session], id: &str) -> Result<&'a Session, String> {
    if let Some(exact) = sessions.iter().find(|s| s.session_id == id) {
        return Ok(exact);
    }
    let matches: Vec<&Session> = sessions
        .iter()
        .filter(|s| id.len() >= 8 && s.session_id.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no session {id:?} in the transcripts read")),
        _ => Err(format!(
            "{id:?} matches {} sessions; give more of the id",
            matches.len()
        )),
    }
}
