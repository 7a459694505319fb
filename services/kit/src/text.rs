//! Field rules shared by every context (CONTRACT Part 1 section 0, "Shared field types").
//!
//! Lengths count UTF-16 code units, as the reference implementation's JavaScript does; trimmed
//! fields are trimmed before they are measured, and the trimmed value is what is stored.

use uuid::Uuid;

use crate::error::ApiError;

/// Length in UTF-16 code units (JavaScript's `String.length`).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Trims `text` and checks `1..=max` UTF-16 units; returns the trimmed value.
pub fn trimmed(field: &str, text: &str, max: usize) -> Result<String, ApiError> {
    let value = text.trim();
    bounded(field, value, max)?;
    Ok(value.to_string())
}

/// Checks `1..=max` UTF-16 units without trimming.
pub fn bounded(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    let length = utf16_len(text);
    if length == 0 || length > max {
        return Err(ApiError::invalid_input(format!(
            "{field} must be 1 to {max} characters"
        )));
    }
    Ok(())
}

/// `^[a-z0-9][a-z0-9-]*$`: the slug form of `agent` and `scope`.
pub fn is_slug(text: &str) -> bool {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) if first.is_ascii_lowercase() || first.is_ascii_digit() => {}
        _ => return false,
    }
    characters.all(|character| {
        character.is_ascii_lowercase() || character.is_ascii_digit() || character == '-'
    })
}

/// `agent`: trimmed, 1..64, slug.
pub fn agent(text: &str) -> Result<String, ApiError> {
    let value = trimmed("agent", text, 64)?;
    if !is_slug(&value) {
        return Err(ApiError::invalid_input(
            "agent must match ^[a-z0-9][a-z0-9-]*$",
        ));
    }
    Ok(value)
}

/// `sessionId`: trimmed, 1..256.
pub fn session_id(text: &str) -> Result<String, ApiError> {
    trimmed("sessionId", text, 256)
}

/// `project`: trimmed, 1..256.
pub fn project(text: &str) -> Result<String, ApiError> {
    trimmed("project", text, 256)
}

/// `scope`: 1..64, slug, not trimmed (a padded scope is simply invalid).
pub fn scope(text: &str) -> Result<String, ApiError> {
    bounded("scope", text, 64)?;
    if !is_slug(text) {
        return Err(ApiError::invalid_input(
            "scope must match ^[a-z0-9][a-z0-9-]*$",
        ));
    }
    Ok(text.to_string())
}

/// Parses a uuid the way the contract's `z.uuid()` does: hyphenated, hex in either case, version
/// nibble 1..8 and variant 8/9/a/b, or the nil or max uuid.
pub fn contract_uuid(text: &str) -> Option<Uuid> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    for (index, byte) in bytes.iter().enumerate() {
        let hyphen = matches!(index, 8 | 13 | 18 | 23);
        if hyphen != (*byte == b'-') || (!hyphen && !byte.is_ascii_hexdigit()) {
            return None;
        }
    }
    let uuid = Uuid::parse_str(text).ok()?;
    if uuid.is_nil() || uuid.is_max() {
        return Some(uuid);
    }
    let version_ok = matches!(bytes[14], b'1'..=b'8');
    let variant_ok = matches!(bytes[19].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b');
    (version_ok && variant_ok).then_some(uuid)
}

/// A run id as the contract canonicalises it: validated, then lower-cased.
pub fn session_run_id(field: &str, text: &str) -> Result<Uuid, ApiError> {
    contract_uuid(text).ok_or_else(|| ApiError::invalid_input(format!("{field} must be a uuid")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_utf16_units() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        let four_thousand = "😀".repeat(2000);
        assert!(bounded("x", &four_thousand, 4000).is_ok());
        assert!(bounded("x", &format!("{four_thousand}a"), 4000).is_err());
    }

    #[test]
    fn trimmed_fields_are_trimmed_before_measuring() {
        assert_eq!(trimmed("topic", "  a  ", 1), Ok("a".to_string()));
        assert!(trimmed("topic", "   ", 10).is_err());
    }

    #[test]
    fn slugs() {
        for good in ["claude-code", "codex", "a", "0-x"] {
            assert!(is_slug(good), "{good}");
        }
        for bad in ["", "-a", "Claude", "a_b", "a b", "é"] {
            assert!(!is_slug(bad), "{bad}");
        }
        assert_eq!(agent("  codex "), Ok("codex".to_string()));
        assert!(scope(" work").is_err());
    }

    #[test]
    fn uuids_follow_the_contract_rule() {
        let table = [
            ("0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", true),
            ("0190B3A4-7D2E-7C41-9A3B-2F1E4D5C6B7A", true),
            ("00000000-0000-0000-0000-000000000000", true),
            ("ffffffff-ffff-ffff-ffff-ffffffffffff", true),
            ("0190b3a4-7d2e-0c41-9a3b-2f1e4d5c6b7a", false),
            ("0190b3a4-7d2e-9c41-9a3b-2f1e4d5c6b7a", false),
            ("0190b3a4-7d2e-7c41-ca3b-2f1e4d5c6b7a", false),
            ("0190b3a47d2e7c419a3b2f1e4d5c6b7a", false),
            ("{0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a}", false),
            ("nope", false),
        ];
        for (text, valid) in table {
            assert_eq!(contract_uuid(text).is_some(), valid, "{text}");
        }
    }
}
