//! Splitting what is new into batches inside the contract's bounds (pure).
//!
//! Rules:
//! - at most [`Limits`] facts of each kind per batch (the proto's bounds: 500 sessions, 5000
//!   agents, 5000 edges, 10000 usage rows, 2000 deliveries) and at most `max_bytes` of facts;
//! - a session's facts go in order — session, agents, edges, usage rows — and batches are sent
//!   in order, so whatever a fact names is in its batch or in an earlier one (stored already);
//! - a delta with unchanged facts carries no session or agent facts: the ledger says the server
//!   has them;
//! - no batch is empty.

use super::wire::{AgentFact, Batch, DeliveryFact, EdgeFact, SessionFact, UsageFact};

/// The bounds of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub sessions: usize,
    pub agents: usize,
    pub edges: usize,
    pub usage: usize,
    pub deliveries: usize,
    /// The facts' JSON size, summed (the body is a little larger).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            sessions: 500,
            agents: 5000,
            edges: 5000,
            usage: 10_000,
            deliveries: 2000,
            max_bytes: 1024 * 1024,
        }
    }
}

/// What of one session is new or changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub key: String,
    /// The facts and their hash, when they changed.
    pub facts: Option<(String, SessionFact, Vec<AgentFact>, Vec<EdgeFact>)>,
    /// Changed or new usage rows with their hashes.
    pub usage: Vec<(String, UsageFact)>,
}

/// One batch and what its acknowledgement proves.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub batch: Batch,
    /// Sessions whose facts (some of them) this batch carries; the hash on the batch that
    /// carries the last of them.
    pub facts: Vec<(String, Option<String>)>,
    /// `(session key, dedup key, row hash)` of each usage row.
    pub usage: Vec<(String, String, String)>,
}

#[derive(Clone, Copy)]
enum Kind {
    Session,
    Agent,
    Edge,
    Usage,
    Delivery,
}

struct Planner {
    limits: Limits,
    template: Batch,
    current: Planned,
    bytes: usize,
    done: Vec<Planned>,
}

impl Planner {
    fn room(&mut self, kind: Kind, size: usize) {
        let batch = &self.current.batch;
        let (count, limit) = match kind {
            Kind::Session => (batch.sessions.len(), self.limits.sessions),
            Kind::Agent => (batch.agents.len(), self.limits.agents),
            Kind::Edge => (batch.edges.len(), self.limits.edges),
            Kind::Usage => (batch.usage.len(), self.limits.usage),
            Kind::Delivery => (batch.deliveries.len(), self.limits.deliveries),
        };
        let full = count >= limit || (self.bytes > 0 && self.bytes + size > self.limits.max_bytes);
        if full {
            self.flush();
        }
        self.bytes += size;
    }

    fn flush(&mut self) {
        if !self.current.batch.is_empty() {
            let next = self.empty();
            self.done.push(std::mem::replace(&mut self.current, next));
        }
        self.bytes = 0;
    }

    fn empty(&self) -> Planned {
        Planned {
            batch: self.template.clone(),
            facts: Vec::new(),
            usage: Vec::new(),
        }
    }

    /// Notes that the current batch carries part of `key`'s facts.
    fn carries_facts(&mut self, key: &str) {
        if self
            .current
            .facts
            .last()
            .is_none_or(|(last, _)| last != key)
        {
            self.current.facts.push((key.to_string(), None));
        }
    }
}

/// Splits `deltas` and `deliveries` into batches from `host_id`.
pub fn plan(
    host_id: &str,
    client_version: Option<&str>,
    deltas: Vec<Delta>,
    deliveries: Vec<DeliveryFact>,
    limits: Limits,
) -> Vec<Planned> {
    let template = Batch {
        host_id: host_id.to_string(),
        client_version: client_version.map(str::to_string),
        ..Batch::default()
    };
    let mut planner = Planner {
        limits,
        current: Planned {
            batch: template.clone(),
            facts: Vec::new(),
            usage: Vec::new(),
        },
        template,
        bytes: 0,
        done: Vec::new(),
    };
    for delta in deltas {
        if let Some((hash, session, agents, edges)) = delta.facts {
            planner.room(Kind::Session, size(&session));
            planner.carries_facts(&delta.key);
            planner.current.batch.sessions.push(session);
            for agent in agents {
                planner.room(Kind::Agent, size(&agent));
                planner.carries_facts(&delta.key);
                planner.current.batch.agents.push(agent);
            }
            for edge in edges {
                planner.room(Kind::Edge, size(&edge));
                planner.carries_facts(&delta.key);
                planner.current.batch.edges.push(edge);
            }
            if let Some(last) = planner.current.facts.last_mut() {
                last.1 = Some(hash);
            }
        }
        for (hash, row) in delta.usage {
            planner.room(Kind::Usage, size(&row));
            planner
                .current
                .usage
                .push((delta.key.clone(), row.dedup_key.clone(), hash));
            planner.current.batch.usage.push(row);
        }
    }
    for delivery in deliveries {
        planner.room(Kind::Delivery, size(&delivery));
        planner.current.batch.deliveries.push(delivery);
    }
    planner.flush();
    planner.done
}

fn size(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(0, |bytes| bytes.len() + 1)
}
