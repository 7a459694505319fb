//! The console's pages, one module each.

pub mod fleet;
pub mod session;
pub mod sessions;
pub mod undo;
pub mod usage;
