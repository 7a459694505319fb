//! `baton-closer` (work in progress).
pub mod config;
pub mod eval;
pub mod judge;
pub mod outcome;
