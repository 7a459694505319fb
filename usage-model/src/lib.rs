//! `baton-usage-model`: what the machine that reads transcripts and the service that stores
//! their usage must agree on, and nothing else (seed 002; HOOKS.md section 5).
//!
//! - [`record`]: one request's usage record (harness, model, tokens, modifiers);
//! - [`dedup`]: which of two copies of one request is kept;
//! - [`pricing`]: the dated price table ([`pricing::BUNDLED`], `pricing/prices.json`) and the
//!   pure step that prices records, never a confident $0;
//! - [`join_path`]: the names of the ways an agent-tree edge is proved.
//!
//! The client (`clients/transcripts`, linked by the hook) adds the file walker, the parsers and
//! the checkpoint cache; the usage service links only this crate, so it compiles none of them.

pub mod dedup;
pub mod join_path;
pub mod pricing;
pub mod record;

pub use join_path::JoinPath;
pub use pricing::{Money, PriceTable, Priced};
pub use record::{Harness, ServerTools, Tokens, UsageRecord};
