//! The `/api/v1` routes, one module per resource.

pub mod briefing;
pub mod budgets;
pub mod closer;
pub mod events;
pub mod liveness;
pub mod memories;
pub mod memory_reads;
pub mod runaway;
pub mod sessions;
pub mod triage;
pub mod usage;
pub mod usage_answers;
pub mod usage_body;
pub mod usage_upload;
pub mod webhooks;

use chrono::{DateTime, Utc};

use baton_kit::clock::{from_timestamp, iso, parse_instant, to_timestamp};
use baton_kit::error::ErrorCode;
use baton_proto::Timestamp;

use crate::response::HttpError;

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

/// An instant a request names (`field`, for the error), as a protobuf timestamp.
fn instant(field: &str, text: &str) -> Result<Timestamp, HttpError> {
    parse_instant(text).map(to_timestamp).ok_or_else(|| {
        HttpError::new(
            ErrorCode::InvalidInput,
            format!("{field} must be an RFC 3339 instant"),
        )
    })
}

/// An optional instant a request names.
fn optional_instant(field: &str, text: Option<&str>) -> Result<Option<Timestamp>, HttpError> {
    text.map(|text| instant(field, text)).transpose()
}
