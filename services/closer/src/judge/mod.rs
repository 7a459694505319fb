//! Judges decide which briefed commitments a finished session completed, and say why: every
//! finding carries its evidence (verbatim quotes and the source each came from: the last
//! message, or which written memory). Whatever a judge answers, the pass keeps only ids from
//! the briefed set (see `outcome::candidates`).
//!
//! Judges: [`evidence`] (the default, deterministic) and [`openai`] (any chat-completions
//! endpoint; a verdict whose quote is not in the input is dropped and counted). [`lexical`], the
//! earlier word-matching judge, is kept only as the evaluation and benchmark baseline: its
//! verdicts carry no evidence, so a pass cannot use it.
//!
//! Inputs never reach a log line: they carry memory content and the session's last message.

pub mod evidence;
mod http_trace;
pub mod lexical;
pub mod openai;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use uuid::Uuid;

use crate::config::JudgeConfig;

/// A commitment the session was briefed on, with its live content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefedCommitment {
    pub id: Uuid,
    pub topic: String,
    pub status: String,
    pub content: String,
    /// The commitment's project, when it has one.
    pub project: Option<String>,
}

/// A memory the session wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenMemory {
    pub id: Uuid,
    pub memory_type: String,
    pub topic: String,
    pub content: String,
    pub project: Option<String>,
}

/// Everything a judge may look at (all bounded; none of it a transcript).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JudgeInput {
    pub briefed: Vec<BriefedCommitment>,
    pub excerpt: Option<String>,
    pub written: Vec<WrittenMemory>,
    /// The project the session ran in, when known.
    pub session_project: Option<String>,
}

/// Where a quote came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceSource {
    /// The session's last message.
    Excerpt,
    /// A memory the run wrote.
    Memory(Uuid),
}

/// One quoted statement and its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Verbatim from the source.
    pub quote: String,
    pub source: EvidenceSource,
}

/// A judge's finding on one commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The commitment's id as the judge gave it (raw, to be filtered).
    pub id: String,
    /// Whether the judge says it was completed.
    pub done: bool,
    /// `completed`, or why not (`no-claim`, `negation`, `deferral`, `plan`, `other-entity`, ...).
    pub reason: String,
    /// The supporting quotes when done; the vetoing statement when one withdrew it.
    pub evidence: Vec<Evidence>,
}

impl Finding {
    /// A finding that leaves the commitment open.
    pub fn open(id: Uuid, reason: &str, evidence: Vec<Evidence>) -> Finding {
        Finding {
            id: id.to_string(),
            done: false,
            reason: reason.to_string(),
            evidence,
        }
    }
}

/// A judge's answer: its findings, the tokens the generation used, and how many verdicts it
/// dropped because their quote was not in the input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    pub tokens_used: i64,
    pub dropped: usize,
}

impl Verdict {
    /// The ids found completed (raw).
    pub fn completed(&self) -> Vec<String> {
        self.findings
            .iter()
            .filter(|finding| finding.done)
            .map(|finding| finding.id.clone())
            .collect()
    }
}

/// Why a judge gave no verdict (transient: the pass is retried after backoff).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error("judge request failed: {0}")]
    Transport(String),
    #[error("judge answered something that is not a verdict: {0}")]
    Malformed(String),
}

/// The boxed future a judge returns.
pub type JudgeFuture<'a> = Pin<Box<dyn Future<Output = Result<Verdict, JudgeError>> + Send + 'a>>;

/// One interface for every judge.
pub trait Judge: Send + Sync + std::fmt::Debug {
    /// The judge's name, for metrics.
    fn name(&self) -> &'static str;
    /// Tokens to reserve against the tenant's budget before judging (0: not a generation).
    fn reservation(&self, input: &JudgeInput) -> i64;
    /// Decides.
    fn judge<'a>(&'a self, input: &'a JudgeInput) -> JudgeFuture<'a>;
}

/// The configured judge, or why it cannot be built.
pub fn from_config(config: &JudgeConfig) -> Result<Arc<dyn Judge>, JudgeError> {
    Ok(match config {
        JudgeConfig::Evidence => Arc::new(evidence::EvidenceJudge),
        JudgeConfig::OpenAi {
            url,
            model,
            key,
            max_tokens,
            timeout,
        } => Arc::new(openai::OpenAiJudge::new(
            url.clone(),
            model.clone(),
            key.clone(),
            *max_tokens,
            *timeout,
        )?),
    })
}
