//! Judges decide which briefed commitments a finished session completed. Whatever a judge
//! answers, the pass keeps only ids from the briefed set (see `outcome::candidates`).
//!
//! Inputs never reach a log line: they carry memory content and the session's last message.

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
}

/// A memory the session wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenMemory {
    pub memory_type: String,
    pub topic: String,
    pub content: String,
}

/// Everything a judge may look at (all bounded; none of it a transcript).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JudgeInput {
    pub briefed: Vec<BriefedCommitment>,
    pub excerpt: Option<String>,
    pub written: Vec<WrittenMemory>,
}

/// A judge's answer: the ids it says were completed (raw, to be filtered), and the tokens the
/// generation used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    pub completed: Vec<String>,
    pub tokens_used: i64,
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
        JudgeConfig::Lexical => Arc::new(lexical::LexicalJudge),
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
