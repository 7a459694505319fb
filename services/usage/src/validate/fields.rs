//! The field rules every part of an upload is held to: ids, labels, modifiers, instants, keys
//! and counts, each refusing with `invalid_input` and a detail that names the field and the rule.

use chrono::{DateTime, Duration, Utc};

use baton_kit::clock::from_timestamp;
use baton_kit::error::ApiError;
use baton_kit::text;
use baton_proto::Timestamp;

use super::MAX_TOKENS;
use crate::keys::SessionKey;

pub fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::invalid_input(detail)
}

/// `[A-Za-z0-9._:-]`, 1..`max`.
pub fn id(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if !ok {
        return Err(invalid(format!(
            "{field} must be 1..{max} of [A-Za-z0-9._:-]"
        )));
    }
    Ok(value.to_string())
}

pub fn label(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    text::bounded(field, value, max)?;
    Ok(value.to_string())
}

pub fn optional_label(
    field: &str,
    value: Option<&String>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    value.map(|value| label(field, value, max)).transpose()
}

/// A request modifier: an empty value means none (as the transcripts write it).
pub fn modifier(field: &str, value: Option<&String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(value) if value.is_empty() => Ok(None),
        other => optional_label(field, other, 64),
    }
}

/// Instants a batch may carry: `[2000-01-01, now + 1 day]`.
pub fn instant(
    field: &str,
    value: Option<&Timestamp>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let earliest = DateTime::from_timestamp(baton_kit::clock::TEST_NOW_EARLIEST_SECONDS, 0)
        .unwrap_or(DateTime::UNIX_EPOCH);
    match from_timestamp(value) {
        Some(at) if at >= earliest && at <= now + Duration::days(1) => Ok(Some(at)),
        _ => Err(invalid(format!(
            "{field} must be an instant between 2000-01-01 and tomorrow"
        ))),
    }
}

pub fn required_instant(
    field: &str,
    value: Option<&Timestamp>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, ApiError> {
    instant(field, value, now)?.ok_or_else(|| invalid(format!("{field} is required")))
}

pub fn ordered(
    field: &str,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
) -> Result<(), ApiError> {
    if let (Some(first), Some(last)) = (first, last)
        && first > last
    {
        return Err(invalid(format!(
            "{field}: firstActivityAt is after lastActivityAt"
        )));
    }
    Ok(())
}

/// A session's natural key as every fact names it (and `SessionFigures` takes it).
pub fn key(agent: &str, session_id: &str) -> Result<SessionKey, ApiError> {
    Ok(SessionKey {
        agent: text::agent(agent)?,
        session_id: text::session_id(session_id)?,
    })
}

pub fn tokens(count: u64, field: &str) -> Result<u64, ApiError> {
    bounded_count(count, field, MAX_TOKENS)
}

pub fn bounded_count(count: u64, field: &str, max: u64) -> Result<u64, ApiError> {
    if count > max {
        return Err(invalid(format!("{field} is above {max}")));
    }
    Ok(count)
}
