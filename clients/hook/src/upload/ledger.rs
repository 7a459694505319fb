//! What was sent: per session, what the server has acknowledged, so a run sends only what is
//! new or changed.
//!
//! Rules:
//! - per session (`<agent>/<sessionId>`), the hash of its session, agent and edge facts as last
//!   acknowledged, and per usage row (by dedup key) the hash of the row as last acknowledged;
//! - a session whose facts hash is unchanged sends none of them (the server has them); a usage
//!   row whose hash is unchanged is not sent; a session with neither is "unchanged";
//! - the ledger records only what a 2xx answered; it is written after the uploads, so a crash
//!   between an upload and the write only re-sends (every upload is idempotent on the server);
//! - a facts hash is recorded only when every batch that carried a part of those facts was
//!   acknowledged;
//! - a batch refused with 404 (the server lacks what the ledger says it has) makes the
//!   ledger forget the sessions it carried, so the next run sends them whole;
//! - the file (`usage/ledger.json` in the state folder) is private (0600) and replaced
//!   atomically; an unreadable or foreign file counts as empty (everything is sent again, which
//!   the server absorbs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::facts::SessionFacts;
use super::plan::{Delta, Planned};
use super::wire::UsageFact;

/// Bump when what a hash covers changes.
pub const LEDGER_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub version: u32,
    pub sessions: BTreeMap<String, SessionLedger>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLedger {
    /// Hash of the session, agent and edge facts last acknowledged.
    #[serde(default)]
    pub facts: Option<String>,
    /// Dedup key → hash of the usage row last acknowledged.
    #[serde(default)]
    pub usage: BTreeMap<String, String>,
}

impl Ledger {
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("usage").join("ledger.json")
    }

    pub fn load(path: &Path) -> Ledger {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Ledger>(&bytes).ok())
            .filter(|ledger| ledger.version == LEDGER_VERSION)
            .unwrap_or_else(|| Ledger {
                version: LEDGER_VERSION,
                sessions: BTreeMap::new(),
            })
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            crate::fsutil::private_dir(dir)?;
        }
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        crate::fsutil::replace_atomically(path, &bytes)
    }

    /// What of `facts` the server has not acknowledged; `None` when nothing.
    pub fn delta(&self, facts: &SessionFacts) -> Option<Delta> {
        let known = self.sessions.get(&facts.key);
        let facts_hash = facts_hash(facts);
        let changed_facts = known.and_then(|k| k.facts.as_deref()) != Some(facts_hash.as_str());
        let usage: Vec<(String, UsageFact)> = facts
            .usage
            .iter()
            .filter_map(|(key, row)| {
                let hash = hash_of(row);
                let sent = known.and_then(|k| k.usage.get(key)) == Some(&hash);
                (!sent).then(|| (hash, row.clone()))
            })
            .collect();
        if !changed_facts && usage.is_empty() {
            return None;
        }
        Some(Delta {
            key: facts.key.clone(),
            facts: changed_facts.then(|| {
                (
                    facts_hash,
                    facts.session.clone(),
                    facts.agents.clone(),
                    facts.edges.clone(),
                )
            }),
            usage,
        })
    }

    /// Records what the acknowledged batches carried (`answered[i]` for `planned[i]`).
    pub fn acknowledge(&mut self, planned: &[Planned], answered: &[bool]) {
        let mut failed_facts: std::collections::BTreeSet<&str> = Default::default();
        for (plan, ok) in planned.iter().zip(answered) {
            for (key, done) in &plan.facts {
                if !ok {
                    failed_facts.insert(key);
                    continue;
                }
                if let Some(hash) = done
                    && !failed_facts.contains(key.as_str())
                {
                    self.sessions.entry(key.clone()).or_default().facts = Some(hash.clone());
                }
            }
            if !ok {
                continue;
            }
            for (key, dedup_key, hash) in &plan.usage {
                self.sessions
                    .entry(key.clone())
                    .or_default()
                    .usage
                    .insert(dedup_key.clone(), hash.clone());
            }
        }
    }
}

/// The hash of a session's session, agent and edge facts.
pub fn facts_hash(facts: &SessionFacts) -> String {
    hash_of(&(&facts.session, &facts.agents, &facts.edges))
}

/// 64 bits of SHA-256 over the value's JSON, as hex.
pub fn hash_of(value: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    hex::encode(&Sha256::digest(&bytes)[..8])
}
