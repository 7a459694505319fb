//! One run over a corpus: walk, read every file (in parallel, through the checkpoints), then
//! assemble sessions and their trees and dedup the records globally.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::checkpoint::{self, Checkpoints, Failures};
use crate::codex;
use crate::dedup::dedup;
use crate::facts::FileFacts;
use crate::read::{self, AgentMeta, ContainmentError, FileRead, ReadError, ReadKind};
use crate::record::{Harness, UsageRecord};
use crate::tree::Agent;
use crate::walk::{self, Discovery, FileEntry, Limits, Role, Roots, SkipReason, Skips};

mod assemble;

use assemble::{add_review_echo_agents, assemble, facts_session};
pub use assemble::{parse_version, slug_of};

/// How a run reads.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub limits: Limits,
    /// Where checkpoints live; `None` reads everything every time.
    pub checkpoint_dir: Option<PathBuf>,
}

/// Progress of the reading phase, in bytes of the files being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub done_bytes: u64,
    pub total_bytes: u64,
}

/// One session: identity, project, versions and its agent tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub harness: Harness,
    pub session_id: String,
    pub project_slug: String,
    pub versions: BTreeSet<String>,
    /// Claude Code before 2.1.97 wrote streaming placeholders for output tokens (HOOKS.md 4.4):
    /// the session's output count is a lower bound.
    pub output_under_reported: bool,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    /// The client's own cost figure (`cost-state`), when the transcript has one.
    pub client_cost_usd: Option<f64>,
    /// The client's own cumulative tokens per model from the same line (empty without one).
    pub client_tokens: BTreeMap<String, crate::record::Tokens>,
    pub agents: Vec<Agent>,
}

/// How many files were read which way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounts {
    pub cached: u64,
    pub tail: u64,
    pub full: u64,
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// One record per request, deduplicated across every file.
    pub records: Vec<UsageRecord>,
    pub sessions: Vec<Session>,
    pub skips: Skips,
    pub malformed_lines: u64,
    /// Session keys parked after repeated failures on an unchanged fingerprint.
    pub quarantined: Vec<String>,
    pub reads: ReadCounts,
}

/// Reads the corpus under `roots`. A containment violation stops the run.
pub fn scan(
    roots: &Roots,
    options: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Corpus, ContainmentError> {
    read_discovered(walk::discover(roots, options.limits), options, progress)
}

/// Reads what a walk found. The walk and the reads are apart: a file can change between
/// them, which is exactly what containment guards.
pub fn read_discovered(
    mut discovery: Discovery,
    options: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Corpus, ContainmentError> {
    let all_roots: Vec<PathBuf> = discovery
        .claude_roots
        .iter()
        .chain(discovery.codex_roots.iter())
        .chain(discovery.gemini_roots.iter())
        .chain(discovery.copilot_roots.iter())
        .cloned()
        .collect();
    let scope = checkpoint::scope(&all_roots);
    let mut checkpoints = match &options.checkpoint_dir {
        Some(dir) => checkpoint::load(dir, &scope),
        None => Checkpoints {
            scope: scope.clone(),
            ..Checkpoints::default()
        },
    };

    let fingerprints = session_fingerprints(&discovery.files);
    let mut quarantined: BTreeSet<String> = BTreeSet::new();
    for (key, fingerprint) in &fingerprints {
        if checkpoints
            .failures
            .get(key)
            .is_some_and(|failures| failures.quarantines(fingerprint))
        {
            quarantined.insert(key.clone());
        }
    }
    let readable: Vec<&FileEntry> = discovery
        .files
        .iter()
        .filter(|entry| !quarantined.contains(&session_key(entry)))
        .collect();

    let total_bytes = readable.iter().map(|entry| entry.size).sum();
    let done = AtomicU64::new(0);
    // Each cached read moves out of the checkpoints: what remains afterwards belongs to files
    // that are gone.
    let cached: Vec<Option<FileRead>> = readable
        .iter()
        .map(|entry| checkpoints.files.remove(&entry.path))
        .collect();
    let outcomes: Vec<Outcome> = readable
        .par_iter()
        .zip(cached.into_par_iter())
        .map(|(entry, cached)| {
            let root = discovery.root_of(entry);
            let outcome = match &entry.role {
                Role::ClaudeMeta { .. } => read::read_meta(root, entry).map(Outcome::Meta),
                _ => read::read_file(root, entry, cached)
                    .map(|(read, kind)| Outcome::File(read, kind)),
            };
            let done_bytes = done.fetch_add(entry.size, Ordering::Relaxed) + entry.size;
            progress(Progress {
                done_bytes,
                total_bytes,
            });
            outcome.unwrap_or_else(Outcome::Failed)
        })
        .collect();

    let mut reads = ReadCounts::default();
    let mut files: Vec<(&FileEntry, FileRead)> = Vec::new();
    let mut metas: BTreeMap<(String, String), AgentMeta> = BTreeMap::new();
    let mut failed: BTreeSet<String> = BTreeSet::new();
    for (entry, outcome) in readable.iter().zip(outcomes) {
        match outcome {
            Outcome::File(read, kind) => {
                match kind {
                    ReadKind::Cached => reads.cached += 1,
                    ReadKind::Tail => reads.tail += 1,
                    ReadKind::Full => reads.full += 1,
                }
                files.push((entry, read));
            }
            Outcome::Meta(meta) => {
                if let (Some(meta), Role::ClaudeMeta { agent_id }) = (meta, &entry.role) {
                    metas.insert(
                        (
                            entry.session_id.clone().unwrap_or_default(),
                            agent_id.clone(),
                        ),
                        meta,
                    );
                }
            }
            Outcome::Failed(ReadError::Containment(violation)) => return Err(violation),
            Outcome::Failed(ReadError::Unreadable(_)) => {
                discovery.skips.add(SkipReason::Unreadable);
                failed.insert(session_key(entry));
            }
        }
    }

    if let Some(dir) = &options.checkpoint_dir {
        let failures_before = checkpoints.failures.clone();
        for key in &failed {
            let fingerprint = fingerprints.get(key).cloned().unwrap_or_default();
            let count = match checkpoints.failures.get(key) {
                Some(previous) if previous.fingerprint == fingerprint => previous.count + 1,
                _ => 1,
            };
            checkpoints
                .failures
                .insert(key.clone(), Failures { fingerprint, count });
        }
        checkpoints
            .failures
            .retain(|key, _| failed.contains(key) || quarantined.contains(key));
        let unchanged = reads.tail == 0
            && reads.full == 0
            && checkpoints.files.is_empty()
            && failures_before == checkpoints.failures;
        if !unchanged {
            let view = checkpoint::View {
                revision: checkpoints.revision,
                scope: &checkpoints.scope,
                files: files
                    .iter()
                    .map(|(entry, read)| (entry.path.as_path(), read))
                    .collect(),
                failures: &checkpoints.failures,
            };
            // Checkpoints only save work; failing to write them changes no answer.
            let _ = checkpoint::save_view(dir, &view);
        }
    }

    // From here on each file is what it says now, its unterminated last line included when
    // that line is whole (the checkpoint above holds only newline-terminated lines).
    let files: Vec<(&FileEntry, FileRead)> = files
        .into_iter()
        .map(|(entry, mut read)| {
            if let Some(facts) = read.with_final_line.take() {
                read.facts = *facts;
            }
            (entry, read)
        })
        .collect();
    let malformed_lines = files
        .iter()
        .map(|(_, read)| read.facts.malformed_lines)
        .sum();
    let joined = codex::threads::join(
        files
            .iter()
            .filter(|(entry, _)| entry.role == Role::CodexRollout)
            .map(|(_, read)| &read.facts),
    );
    let mut sessions = assemble(&files, &metas, &joined, &mut discovery.skips);
    // The reads are done with: their records move into the dedup rather than being copied.
    let records = dedup(
        files
            .into_iter()
            .flat_map(|(entry, read)| file_records(entry, read.facts, &joined)),
    );
    add_review_echo_agents(&mut sessions, &records);
    Ok(Corpus {
        records,
        sessions,
        skips: discovery.skips,
        malformed_lines,
        quarantined: quarantined.into_iter().collect(),
        reads,
    })
}

enum Outcome {
    File(FileRead, ReadKind),
    Meta(Option<AgentMeta>),
    Failed(ReadError),
}

/// The key sessions are grouped and quarantined by.
fn session_key(entry: &FileEntry) -> String {
    format!(
        "{}:{}",
        entry.harness.as_str(),
        entry.session_id.as_deref().unwrap_or("-")
    )
}

fn session_fingerprints(files: &[FileEntry]) -> BTreeMap<String, String> {
    let mut grouped: BTreeMap<String, Vec<&FileEntry>> = BTreeMap::new();
    for entry in files {
        grouped.entry(session_key(entry)).or_default().push(entry);
    }
    grouped
        .into_iter()
        .map(|(key, entries)| {
            let fingerprint = checkpoint::fingerprint(
                entries
                    .iter()
                    .map(|e| (e.path.as_path(), e.size, e.mtime_ns)),
            );
            (key, fingerprint)
        })
        .collect()
}

/// A file's records, moved out of its facts, with the session its place or its lines name.
fn file_records(
    entry: &FileEntry,
    mut facts: FileFacts,
    joined: &codex::threads::Join,
) -> impl Iterator<Item = UsageRecord> {
    let fallback = facts_session(entry, &facts, joined);
    let responses_only = entry.role == Role::CodexRollout && facts.codex.has_response_records;
    // A Codex subagent thread's usage is its own agent's, in its root's session.
    let codex_agent = match (&entry.role, &facts.codex.session_id) {
        (Role::CodexRollout, Some(own)) if *own != fallback => Some(own.clone()),
        _ => None,
    };
    let codex_session = (entry.role == Role::CodexRollout).then(|| fallback.clone());
    let replaced_echoes = &joined.replaced_echoes;
    std::mem::take(&mut facts.records)
        .into_iter()
        .filter(move |record| {
            !responses_only || !record.message_id.starts_with(codex::COUNT_PREFIX)
        })
        // A review's echo in its parent gives way to the review's own rollout.
        .filter(move |record| {
            !(record.sidechain
                && record.harness == Harness::Codex
                && record
                    .agent_id
                    .as_ref()
                    .is_some_and(|agent| replaced_echoes.contains(agent)))
        })
        .map(move |mut record| {
            if let Some(session) = &codex_session {
                record.session_id = session.clone();
                if !record.sidechain && codex_agent.is_some() {
                    record.agent_id = codex_agent.clone();
                }
            } else if record.session_id.is_empty() {
                record.session_id = fallback.clone();
            }
            record
        })
}
