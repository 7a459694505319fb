//! Codex threads joined into sessions and trees across rollouts.
//!
//! Every Codex thread has a rollout of its own. A subagent thread belongs to the session of the
//! thread that started it, and to that session's tree, by one of two proofs:
//!
//! - [`JoinPath::CodexSource`]: its `session_meta.source.subagent.thread_spawn` names its
//!   `parent_thread_id` (spawned agents, at any depth);
//! - [`JoinPath::CodexReviewEcho`]: a review thread (`source.subagent = "review"`) names no
//!   parent, but the parent echoes the review's usage events, with the same cumulative totals,
//!   between `entered_review_mode` and `exited_review_mode`. The echo whose totals share the
//!   most with a review rollout's is that review's: the edge is proven, and the echo is
//!   dropped in favour of the review's own records (which state its model). An echo no rollout
//!   matches stays as the parent's review agent.
//!
//! A thread with neither (a main thread, a fork a person started, a guardian or compaction
//! thread whose parent is not stated) is a session of its own. The session id of a subagent
//! is its root's thread id, following parents as far as they are known: a parent whose rollout
//! is gone still names the session.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::facts::{FileFacts, JoinPath};
use crate::tree::{Agent, AgentKind};

use super::{ECHO_PREFIX, key_total};

/// What the join knows of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The session the thread's usage belongs to (its root thread).
    pub session: String,
    /// The parent thread and the proof, for a subagent.
    pub parent: Option<(String, JoinPath)>,
}

/// The join of every Codex rollout of a corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Join {
    /// Thread id → its session and parent.
    pub threads: HashMap<String, Joined>,
    /// Echo agents (`<parent>:review:<n>`) whose review rollout is here: their echoed records
    /// are dropped.
    pub replaced_echoes: HashSet<String>,
}

impl Join {
    /// The session of a thread (itself when the join does not know it).
    pub fn session_of(&self, thread: &str) -> String {
        self.threads
            .get(thread)
            .map_or_else(|| thread.to_string(), |joined| joined.session.clone())
    }
}

/// Joins every Codex rollout's thread to its session and parent.
pub fn join<'a>(files: impl IntoIterator<Item = &'a FileFacts>) -> Join {
    let files: Vec<&FileFacts> = files.into_iter().collect();
    let mut parents: HashMap<String, (String, JoinPath)> = HashMap::new();
    // Each echo: its agent → the thread that echoed it and the totals it echoed.
    let mut echoes: BTreeMap<&str, (&str, HashSet<u64>)> = BTreeMap::new();
    for facts in &files {
        let Some(own) = facts.codex.session_id.as_deref() else {
            continue;
        };
        for record in facts
            .records
            .iter()
            .filter(|r| r.sidechain && r.message_id.starts_with(ECHO_PREFIX))
        {
            if let (Some(agent), Some(total)) =
                (record.agent_id.as_deref(), key_total(&record.message_id))
            {
                echoes
                    .entry(agent)
                    .or_insert((own, HashSet::new()))
                    .1
                    .insert(total);
            }
        }
    }
    let mut replaced_echoes = HashSet::new();
    for facts in &files {
        let Some(own) = facts.codex.session_id.as_deref() else {
            continue;
        };
        let origin = &facts.codex.origin;
        if let Some(parent) = origin.parent_thread_id.as_deref().filter(|p| *p != own) {
            parents.insert(own.to_string(), (parent.to_string(), JoinPath::CodexSource));
        } else if origin.subagent.as_deref() == Some("review") {
            let totals: HashSet<u64> = facts
                .records
                .iter()
                .filter(|r| !r.sidechain)
                .filter_map(|r| key_total(&r.message_id))
                .collect();
            let best = echoes
                .iter()
                .filter(|(_, (parent, _))| *parent != own)
                .map(|(agent, (parent, echoed))| {
                    (echoed.intersection(&totals).count(), agent, parent)
                })
                .filter(|(shared, _, _)| *shared > 0)
                .max_by_key(|(shared, agent, _)| (*shared, std::cmp::Reverse(**agent)));
            if let Some((_, agent, parent)) = best {
                parents.insert(
                    own.to_string(),
                    (parent.to_string(), JoinPath::CodexReviewEcho),
                );
                replaced_echoes.insert(agent.to_string());
            }
        }
    }
    let mut joined = HashMap::new();
    for facts in &files {
        let Some(own) = facts.codex.session_id.as_deref() else {
            continue;
        };
        joined.insert(
            own.to_string(),
            Joined {
                session: root(&parents, own),
                parent: parents.get(own).cloned(),
            },
        );
    }
    Join {
        threads: joined,
        replaced_echoes,
    }
}

/// The root of `thread`: its parents followed as far as they are known (a cycle stops at the
/// thread where it closes).
fn root(parents: &HashMap<String, (String, JoinPath)>, thread: &str) -> String {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut current = thread;
    while let Some((parent, _)) = parents.get(current) {
        if !seen.insert(current) {
            break;
        }
        current = parent;
    }
    current.to_string()
}

/// The tree of one Codex session from its members' facts: the main thread, then each
/// subagent thread by id.
pub fn tree(session: &str, members: &[&FileFacts], join: &Join) -> Vec<Agent> {
    let mut tree =
        vec![Agent::main(members.iter().any(|facts| {
            facts.codex.session_id.as_deref() == Some(session)
        }))];
    let mut children: BTreeMap<&str, Agent> = BTreeMap::new();
    for facts in members {
        let Some(own) = facts.codex.session_id.as_deref() else {
            continue;
        };
        if own == session {
            continue;
        }
        let origin = &facts.codex.origin;
        let parent = join.threads.get(own).and_then(|j| j.parent.clone());
        children.insert(
            own,
            Agent {
                agent_id: Some(own.to_string()),
                kind: AgentKind::Subagent,
                parent_agent_id: parent
                    .as_ref()
                    .map(|(p, _)| p.clone())
                    .filter(|p| p != session),
                subagent_type: origin.role.clone().or_else(|| origin.subagent.clone()),
                description: None,
                spawn_tool: None,
                spawn_tool_use_id: None,
                join_path: parent.map(|(_, path)| path),
                has_file: true,
                ended: None,
            },
        );
    }
    tree.extend(children.into_values());
    tree
}

/// Adds a parent's review agent (`<parent>:review:<n>`) that holds a review's echoed usage
/// when the review's own rollout is not there.
pub fn add_echo_agent(tree: &mut Vec<Agent>, session: &str, agent: &str) {
    if !tree
        .iter()
        .any(|known| known.agent_id.as_deref() == Some(agent))
    {
        let parent = agent.split(":review:").next().filter(|p| *p != session);
        tree.push(Agent {
            agent_id: Some(agent.to_string()),
            kind: AgentKind::Subagent,
            parent_agent_id: parent.map(str::to_string),
            subagent_type: Some("review".to_string()),
            description: None,
            spawn_tool: None,
            spawn_tool_use_id: None,
            join_path: Some(JoinPath::CodexReviewEcho),
            has_file: false,
            ended: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::meta::Origin;
    use crate::record::{Harness, UsageRecord};

    fn thread(id: &str, origin: Origin, keys: &[(&str, Option<&str>)]) -> FileFacts {
        let mut facts = FileFacts::default();
        facts.codex.session_id = Some(id.to_string());
        facts.codex.origin = origin;
        facts.records = keys
            .iter()
            .map(|(key, echo)| UsageRecord {
                message_id: key.to_string(),
                request_id: None,
                harness: Harness::Codex,
                session_id: id.to_string(),
                agent_id: echo.map(str::to_string),
                model: None,
                timestamp_ms: 0,
                tokens: Default::default(),
                server_tools: Default::default(),
                modifiers: Default::default(),
                sidechain: echo.is_some(),
            })
            .collect();
        facts
    }

    fn spawned(parent: &str) -> Origin {
        Origin {
            subagent: Some("thread_spawn".into()),
            parent_thread_id: Some(parent.into()),
            ..Origin::default()
        }
    }

    fn review() -> Origin {
        Origin {
            subagent: Some("review".into()),
            ..Origin::default()
        }
    }

    #[test]
    fn joins() {
        let main = thread(
            "m",
            Origin::default(),
            &[
                ("count:1:10", None),
                ("review-echo:m:1:7", Some("m:review:1")),
                ("review-echo:m:1:19", Some("m:review:1")),
                ("review-echo:m:2:7", Some("m:review:2")),
            ],
        );
        let child = thread("c", spawned("m"), &[("count:2:20", None)]);
        let grandchild = thread("g", spawned("c"), &[]);
        let orphan = thread("o", spawned("gone"), &[]);
        // Shares two totals with the first echo, one with the second (a millisecond off).
        let proven_review = thread("r", review(), &[("count:5:7", None), ("count:6:19", None)]);
        let lone_review = thread("l", review(), &[("count:9:9", None)]);
        let looped_a = thread("a", spawned("b"), &[]);
        let looped_b = thread("b", spawned("a"), &[]);
        let files = [
            &main,
            &child,
            &grandchild,
            &orphan,
            &proven_review,
            &lone_review,
            &looped_a,
            &looped_b,
        ];
        let joined = join(files);
        let get = |id: &str| {
            let found = &joined.threads[id];
            (
                found.session.as_str(),
                found.parent.as_ref().map(|(p, path)| (p.as_str(), *path)),
            )
        };
        assert_eq!(get("m"), ("m", None));
        assert_eq!(get("c"), ("m", Some(("m", JoinPath::CodexSource))));
        assert_eq!(get("g"), ("m", Some(("c", JoinPath::CodexSource))));
        assert_eq!(
            get("o"),
            ("gone", Some(("gone", JoinPath::CodexSource))),
            "a gone parent still names the session"
        );
        assert_eq!(get("r"), ("m", Some(("m", JoinPath::CodexReviewEcho))));
        assert_eq!(get("l"), ("l", None), "no echo, no edge");
        assert!(["a", "b"].contains(&get("a").0), "a cycle ends");
        assert_eq!(
            joined.replaced_echoes,
            HashSet::from(["m:review:1".to_string()]),
            "the echo with most totals in common is the review's"
        );

        let members = [&main, &child, &grandchild, &proven_review];
        let agents = tree("m", &members, &joined);
        let edges: Vec<(Option<&str>, Option<&str>, Option<JoinPath>)> = agents
            .iter()
            .map(|a| {
                (
                    a.agent_id.as_deref(),
                    a.parent_agent_id.as_deref(),
                    a.join_path,
                )
            })
            .collect();
        assert_eq!(
            edges,
            vec![
                (None, None, None),
                (Some("c"), None, Some(JoinPath::CodexSource)),
                (Some("g"), Some("c"), Some(JoinPath::CodexSource)),
                (Some("r"), None, Some(JoinPath::CodexReviewEcho)),
            ]
        );
        let mut with_echo = tree("m", &[&main], &joined);
        add_echo_agent(&mut with_echo, "m", "m:review:2");
        add_echo_agent(&mut with_echo, "m", "m:review:2");
        let echo: Vec<_> = with_echo
            .iter()
            .filter(|a| a.agent_id.as_deref() == Some("m:review:2"))
            .collect();
        assert_eq!(echo.len(), 1, "added once");
        assert_eq!(
            echo[0].parent_agent_id, None,
            "the session's main thread echoed it"
        );
    }
}
