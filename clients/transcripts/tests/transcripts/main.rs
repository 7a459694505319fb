//! `baton-transcripts` over real files: the shared fixtures with totals worked out by hand, and
//! built corpora for every rule (dedup, containment, skips, checkpoints, tail reads, pricing).

mod built;
mod corpus;
mod ended;
mod fixtures;
mod pricing;
