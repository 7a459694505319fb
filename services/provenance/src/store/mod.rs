//! Persistence of the provenance schema. Every function takes the caller's connection or
//! transaction; one span per query.

pub mod briefing;
pub mod events;
pub mod memories;
