//! `baton-transcripts`: Claude Code and Codex transcripts, Gemini CLI chats and Copilot CLI
//! session logs read into exact token usage, cost and agent trees (seed 002; HOOKS.md
//! sections 4 and 5).
//!
//! The transcript on disk is the ground truth for tokens. This crate reads it without an async
//! runtime and without the network:
//!
//! - [`walk`] finds the files under the roots, with containment and counted skip reasons;
//! - [`claude`], [`codex`], [`gemini`] and [`copilot`] are pure parsers from complete lines (or, for
//!   Gemini's older single-object files, whole documents) to [`facts::FileFacts`];
//! - [`read`] opens a file inside its root and reads it whole or from where it stopped;
//! - [`checkpoint`] persists what a run read, so the next reads only what changed;
//! - [`dedup`] keeps one record per request across every file;
//! - [`tree`] builds each session's agent tree, every edge with the join path that proved it;
//! - [`pricing`] prices records from the dated table, never a confident $0;
//! - [`corpus::scan`] runs all of it.

pub mod checkpoint;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod corpus;
mod discovery;
pub mod facts;
pub mod gemini;
pub mod lines;
pub mod read;
pub mod tree;
pub mod walk;

// The records, dedup and pricing the usage service shares (crate `baton-usage-model`), under
// the paths this crate has always given them.
pub use baton_usage_model::{dedup, pricing, record};

pub use corpus::{Corpus, Options, Progress, Session, read_discovered, scan};
pub use pricing::{Money, PriceTable, Priced};
pub use record::{Harness, ServerTools, Tokens, UsageRecord};
pub use walk::{Limits, Roots, SkipReason};
