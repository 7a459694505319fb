//! Field rules of the registry's inputs (CONTRACT sections 1–4). Whatever transport a request
//! arrives on, it passes through here before any decision.

use chrono::{DateTime, Utc};

use baton_kit::clock::from_timestamp;
use baton_kit::error::ApiError;
use baton_kit::text;

use crate::session::BriefedMemory;

/// Most briefed rows one open may stamp (MAX_BRIEFED_MEMORIES).
pub const MAX_BRIEFED_MEMORIES: usize = 100;
/// Longest heartbeat excerpt in UTF-16 units (MAX_SESSION_EXCERPT_LENGTH).
pub const MAX_EXCERPT_LENGTH: usize = 4000;

/// The natural key, trimmed and checked.
pub fn natural_key(agent: &str, session_id: &str) -> Result<(String, String), ApiError> {
    Ok((text::agent(agent)?, text::session_id(session_id)?))
}

/// An optional project facet (trimmed 1..256).
pub fn optional_project(project: Option<&str>) -> Result<Option<String>, ApiError> {
    project.map(text::project).transpose()
}

/// An optional scope facet (slug 1..64, not trimmed).
pub fn optional_scope(scope: Option<&str>) -> Result<Option<String>, ApiError> {
    scope.map(text::scope).transpose()
}

/// One briefed row: uuid id (lower-cased), topic trimmed 1..256, status trimmed 1..64.
pub fn briefed_memory(id: &str, topic: &str, status: &str) -> Result<BriefedMemory, ApiError> {
    Ok(BriefedMemory {
        id: text::session_run_id("briefedMemories[].id", id)?,
        topic: text::trimmed("briefedMemories[].topic", topic, 256)?,
        status: text::trimmed("briefedMemories[].status", status, 64)?,
    })
}

/// At most [`MAX_BRIEFED_MEMORIES`] rows.
pub fn briefed_count(count: usize) -> Result<(), ApiError> {
    if count > MAX_BRIEFED_MEMORIES {
        return Err(ApiError::invalid_input(format!(
            "briefedMemories holds at most {MAX_BRIEFED_MEMORIES} rows"
        )));
    }
    Ok(())
}

/// The excerpt: 1..4000 UTF-16 units, stored as sent (not trimmed).
pub fn excerpt(text_value: &str) -> Result<(), ApiError> {
    text::prose_bounded("lastMessageExcerpt", text_value, MAX_EXCERPT_LENGTH)
}

/// `followsSessionId`: a session id (1..256 trimmed) other than the session's own.
pub fn follows(follows: Option<&str>, session_id: &str) -> Result<Option<String>, ApiError> {
    let Some(follows) = follows else {
        return Ok(None);
    };
    let follows = text::trimmed("followsSessionId", follows, 256)?;
    if follows == session_id {
        return Err(ApiError::invalid_input(
            "followsSessionId must name another session",
        ));
    }
    Ok(Some(follows))
}

/// An optional observation time of a replayed call.
pub fn observed_at(
    timestamp: Option<&baton_proto::Timestamp>,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    timestamp
        .map(|timestamp| {
            from_timestamp(timestamp)
                .ok_or_else(|| ApiError::invalid_input("observedAt is out of range"))
        })
        .transpose()
}

/// A token naming a client (`claude-code`, `codex`, `cursor`, ...): slug 1..64.
pub fn client_name(field: &str, value: &str) -> Result<String, ApiError> {
    let value = text::trimmed(field, value, 64)?;
    if !text::is_slug(&value) {
        return Err(ApiError::invalid_input(format!(
            "{field} must match ^[a-z0-9][a-z0-9-]*$"
        )));
    }
    Ok(value)
}

/// A client version or host id: 1..`max` characters of `[A-Za-z0-9._:+-]`.
pub fn token(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = text::trimmed(field, value, max)?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_:+".contains(c);
    if !value.chars().all(allowed) {
        return Err(ApiError::invalid_input(format!(
            "{field} may hold only letters, digits and . - _ : +"
        )));
    }
    Ok(value)
}

/// Longest machine label in UTF-16 units (the column's CHECK is the floor).
pub const MAX_HOST_LABEL_LENGTH: usize = 255;

/// A machine's display label: a one-line label, trimmed 1..255, no control or formatting
/// characters (the identifier rule every label follows).
pub fn host_label(value: &str) -> Result<String, ApiError> {
    text::trimmed("hostLabel", value, MAX_HOST_LABEL_LENGTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_bounds_count_utf16_units() {
        assert!(excerpt(&"a".repeat(4000)).is_ok());
        assert!(excerpt(&"a".repeat(4001)).is_err());
        assert!(excerpt("").is_err());
        assert!(excerpt("   ").is_ok(), "not trimmed");
        assert!(excerpt(&"😀".repeat(2000)).is_ok());
        assert!(excerpt(&format!("{}a", "😀".repeat(2000))).is_err());
    }

    #[test]
    fn briefed_rows_are_trimmed_and_lower_cased() {
        let row = briefed_memory(
            "0190B3A4-7D2E-7C41-9A3B-2F1E4D5C6B7A",
            "  ship it ",
            " open ",
        )
        .expect("valid");
        assert_eq!(row.id.to_string(), "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a");
        assert_eq!(row.topic, "ship it");
        assert_eq!(row.status, "open");
        assert!(briefed_memory("nope", "t", "s").is_err());
        assert!(briefed_memory("0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", " ", "s").is_err());
        assert!(briefed_count(100).is_ok());
        assert!(briefed_count(101).is_err());
    }

    #[test]
    fn pulse_tokens() {
        assert_eq!(client_name("client", " codex ").expect("valid"), "codex");
        assert!(client_name("client", "Codex").is_err());
        assert!(token("clientVersion", "2.1.296", 64).is_ok());
        assert!(token("clientVersion", "0.162.0-alpha.17.2", 64).is_ok());
        assert!(token("clientVersion", "2.1 (Claude Code)", 64).is_err());
        assert!(token("hostId", &"a".repeat(129), 128).is_err());
        assert!(follows(Some("s"), "s").is_err());
        assert_eq!(
            follows(Some(" p "), "s").expect("valid").as_deref(),
            Some("p")
        );
        assert_eq!(follows(None, "s").expect("valid"), None);
    }

    #[test]
    fn host_labels() {
        let table: [(&str, Option<&str>); 8] = [
            ("  Ana's laptop ", Some("Ana's laptop")),
            ("büro-mac (2)", Some("büro-mac (2)")),
            ("", None),
            ("   ", None),
            ("desk\u{0007}top", None),
            ("line\nbreak", None),
            ("tab\there", None),
            ("rtl\u{202E}lol", None),
        ];
        for (input, expected) in table {
            assert_eq!(host_label(input).ok().as_deref(), expected, "{input:?}");
        }
        assert!(host_label(&"a".repeat(255)).is_ok());
        assert!(host_label(&"a".repeat(256)).is_err());
    }
}
