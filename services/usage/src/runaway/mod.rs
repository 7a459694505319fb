//! Runaway sessions: spend over a sliding window past the tenant's limit, or a main agent that
//! keeps working with no user prompt past a limit, flagged once per episode as usage lands
//! ([`check`]) and shown on every session summary.

pub mod check;
pub mod rules;
pub mod service;
pub mod store;
