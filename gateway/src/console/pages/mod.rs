//! The console's pages, one module each.

pub mod alerts;
pub mod fleet;
pub mod keys;
pub mod session;
pub mod session_list;
pub mod session_sources;
pub mod sessions;
pub mod transcript_session;
pub mod undo;
pub mod usage;
