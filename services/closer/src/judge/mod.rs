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
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The commitment's id as the judge gave it (raw, to be filtered).
    pub id: String,
    /// Whether the judge says it was completed.
    pub done: bool,
    /// `completed`, or why not (`no-claim`, `negation`, `deferral`, `plan`, `other-entity`, ...).
    pub reason: String,
    /// The supporting quotes when done; the vetoing statement when one withdrew it.
    pub evidence: Vec<Evidence>,
    /// How sure the judge is that a `done` finding is right, in [0, 1] (0 for an open one).
    /// The closer resolves only at or above `BATON_CLOSER__MIN_CONFIDENCE` ([`abstain`]).
    pub confidence: f64,
}

impl Finding {
    /// A finding that leaves the commitment open.
    pub fn open(id: Uuid, reason: &str, evidence: Vec<Evidence>) -> Finding {
        Finding {
            id: id.to_string(),
            done: false,
            reason: reason.to_string(),
            evidence,
            confidence: 0.0,
        }
    }
}

/// Reason of a finding the judge called done but was not sure enough of.
pub const ABSTAINED: &str = "abstained";

/// The verdict with every done finding below `min_confidence` turned open (reason
/// [`ABSTAINED`], its quotes kept): a resolve nobody asked for costs the user more than a
/// miss, so below the margin the closer leaves the commitment to them.
pub fn abstain(mut verdict: Verdict, min_confidence: f64) -> Verdict {
    for finding in &mut verdict.findings {
        if finding.done && finding.confidence < min_confidence {
            finding.done = false;
            finding.reason = ABSTAINED.to_string();
        }
    }
    verdict
}

/// A judge's answer: its findings, the tokens the generation used, and how many verdicts it
/// dropped because their quote was not in the input.
#[derive(Debug, Clone, PartialEq, Default)]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn done(id: u128, confidence: f64) -> Finding {
        Finding {
            id: Uuid::from_u128(id).to_string(),
            done: true,
            reason: "completed".to_string(),
            evidence: Vec::new(),
            confidence,
        }
    }

    #[test]
    fn findings_below_the_margin_are_left_open_and_say_so() {
        let verdict = Verdict {
            findings: vec![
                done(1, 0.9),
                done(2, 0.5),
                Finding::open(Uuid::from_u128(3), "negation", Vec::new()),
            ],
            tokens_used: 0,
            dropped: 0,
        };
        let table = [
            (0.0, vec![true, true, false]),
            (0.5, vec![true, true, false]),
            (0.6, vec![true, false, false]),
            (0.95, vec![false, false, false]),
        ];
        for (margin, expected) in table {
            let kept = abstain(verdict.clone(), margin);
            let found: Vec<bool> = kept.findings.iter().map(|f| f.done).collect();
            assert_eq!(found, expected, "margin {margin}");
        }
        assert_eq!(abstain(verdict, 0.6).findings[1].reason, ABSTAINED);
    }
}
