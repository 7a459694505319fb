//! `baton-transcripts` over real files: the shared fixtures with totals worked out by hand, and
//! built corpora for every rule (dedup, containment, skips, checkpoints, tail reads, pricing).

mod built;
mod codex_review;
mod conformance;
mod corpus;
mod ended;
mod final_line;
mod fixtures;
mod notifications;
mod pricing;
