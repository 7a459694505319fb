//! `baton-transcripts` over real files: the shared fixtures with totals worked out by hand, and
//! built corpora for every rule (dedup, containment, skips, checkpoints, tail reads, pricing),
//! for Claude Code, Codex, Gemini CLI and Copilot CLI.

mod built;
mod codex_review;
mod conformance;
mod copilot;
mod corpus;
mod ended;
mod final_line;
mod fixtures;
mod gemini;
mod notifications;
mod pricing;
