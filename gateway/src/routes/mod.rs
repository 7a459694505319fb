//! The `/api/v1` routes, one module per resource.

pub mod briefing;
pub mod budgets;
pub mod closer;
pub mod events;
pub mod liveness;
pub mod memories;
pub mod runaway;
pub mod sessions;
pub mod triage;
pub mod usage;
pub mod usage_body;
pub mod usage_upload;
pub mod webhooks;

use chrono::{DateTime, Utc};

use baton_kit::clock::{from_timestamp, iso};
use baton_proto::Timestamp;

/// A required timestamp from an RPC answer, in `toISOString` form.
pub fn iso_of(timestamp: Option<&Timestamp>) -> String {
    timestamp
        .and_then(from_timestamp)
        .map_or_else(|| iso(DateTime::<Utc>::UNIX_EPOCH), iso)
}

/// An optional timestamp from an RPC answer.
pub fn optional_iso(timestamp: Option<&Timestamp>) -> Option<String> {
    timestamp.and_then(from_timestamp).map(iso)
}
