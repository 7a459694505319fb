//! The session list's opaque cursor: the last scanned row's keyset position
//! (`opened_at`, `id`), written `<opened_at micros>.<id simple>` so it survives a URL query
//! string untouched. A caller never builds one; it hands back the one a page returned.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::error::ApiError;

/// Longest cursor accepted: 19 digits, a dot, 32 hex digits.
const MAX_CURSOR_LENGTH: usize = 52;
/// 10000-01-01T00:00:00Z in Unix seconds: a cursor past it names no row (and could fall out of
/// the database's range).
const END_SECONDS: i64 = 253_402_300_800;

/// A keyset position: the next page starts strictly after (older than) this row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub opened_at: DateTime<Utc>,
    pub id: Uuid,
}

impl Cursor {
    /// The text a page hands out.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.opened_at.timestamp_micros(), self.id.simple())
    }

    /// Reads back a cursor a page handed out; anything else is the caller's error.
    pub fn parse(text: &str) -> Result<Cursor, ApiError> {
        let refused = || ApiError::invalid_input("cursor is not one a previous page returned");
        if text.len() > MAX_CURSOR_LENGTH {
            return Err(refused());
        }
        let (micros, id) = text.split_once('.').ok_or_else(refused)?;
        let well_formed_micros = !micros.is_empty() && micros.chars().all(|c| c.is_ascii_digit());
        let well_formed_id = id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit());
        if !well_formed_micros || !well_formed_id {
            return Err(refused());
        }
        let opened_at = micros
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .filter(|instant| instant.timestamp() < END_SECONDS)
            .ok_or_else(refused)?;
        let id = Uuid::try_parse(id).map_err(|_| refused())?;
        Ok(Cursor { opened_at, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips() {
        let cursor = Cursor {
            opened_at: DateTime::from_timestamp_micros(1_772_352_000_123_000).expect("valid"),
            id: Uuid::parse_str("0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a").expect("uuid"),
        };
        let text = cursor.encode();
        assert_eq!(text, "1772352000123000.0190b3a47d2e7c419a3b2f1e4d5c6b7a");
        assert_eq!(Cursor::parse(&text).expect("parses"), cursor);
    }

    #[test]
    fn malformed_cursors_are_refused() {
        let table = [
            "",
            ".",
            "123",
            "123.",
            ".0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "abc.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "+123.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "-123.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "253402300800000000.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "12 3.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
            "123.0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a",
            "123.0190b3a47d2e7c419a3b2f1e4d5c6b7",
            "123.0190b3a47d2e7c419a3b2f1e4d5c6b7z",
            "123.0190b3a47d2e7c419a3b2f1e4d5c6b7a.1",
            "99999999999999999999.0190b3a47d2e7c419a3b2f1e4d5c6b7a",
        ];
        for text in table {
            assert!(Cursor::parse(text).is_err(), "{text:?}");
        }
    }
}
