//! Field rules shared by every context (CONTRACT Part 1 section 0, "Shared field types").
//!
//! Lengths count UTF-16 code units, as the reference implementation's JavaScript does; trimmed
//! fields are trimmed before they are measured, and the trimmed value is what is stored.
//!
//! One character rule holds for every text field at every boundary (issue 9): no field ever
//! holds U+0000 or another C0/C1 control (Postgres refuses U+0000 in `text` and `jsonb`, and
//! controls have no business in a prompt's data block). Prose fields (a memory's content, a
//! heartbeat's excerpt) may hold tab and newline; identifiers and labels (agent, sessionId,
//! project, scope, topic, tags, status, client tokens) hold neither, nor a bidirectional
//! formatting character or a line/paragraph separator, so an id can never render as another.
//! A refusal is the contract's `invalid_input`.

use uuid::Uuid;

use crate::error::ApiError;

/// Which character rule a field follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Names, ids and one-line labels: no control, no bidi formatting, no line separator.
    Identifier,
    /// Free text: no control except tab and newline.
    Prose,
}

/// Whether `character` is refused in a field of `kind`.
pub fn forbidden(character: char, kind: TextKind) -> bool {
    if character.is_control() {
        // Cc: C0 (U+0000..U+001F), DEL and C1 (U+0080..U+009F).
        return !(kind == TextKind::Prose && matches!(character, '\t' | '\n'));
    }
    kind == TextKind::Identifier && is_bidi_or_separator(character)
}

/// Bidirectional formatting characters (marks, embeddings, overrides, isolates) and the
/// Unicode line and paragraph separators.
fn is_bidi_or_separator(character: char) -> bool {
    matches!(
        character,
        '\u{061C}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Refuses a text holding a character its kind forbids.
pub fn characters(field: &str, text: &str, kind: TextKind) -> Result<(), ApiError> {
    if text.chars().any(|character| forbidden(character, kind)) {
        return Err(ApiError::invalid_input(format!(
            "{field} holds a control or formatting character"
        )));
    }
    Ok(())
}

/// Refuses a JSON document any of whose keys or strings, at any depth, breaks the prose rule
/// (the floor every text meets, whatever field it lands in).
pub fn json_characters(field: &str, value: &serde_json::Value) -> Result<(), ApiError> {
    match value {
        serde_json::Value::String(text) => characters(field, text, TextKind::Prose),
        serde_json::Value::Array(items) => items
            .iter()
            .try_for_each(|item| json_characters(field, item)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, inner)| {
            characters(field, key, TextKind::Prose)?;
            json_characters(field, inner)
        }),
        _ => Ok(()),
    }
}

/// [`json_characters`] read from the document's bytes, without building a value: the same
/// answer for any valid JSON document, one pass and no allocation. In valid JSON a raw DEL or
/// C1 control (UTF-8 `C2 80`..`C2 9F`) can only sit inside a key or string (raw C0 controls
/// cannot sit inside one at all), and every backslash opens an escape, so the refused
/// characters are exactly: raw DEL, raw C1, and the escapes `\b`, `\f`, `\r` and `\uXXXX` of
/// a control other than tab and newline. Call it on a document the parser accepted.
pub fn json_text_characters(field: &str, bytes: &[u8]) -> Result<(), ApiError> {
    let refused =
        || ApiError::invalid_input(format!("{field} holds a control or formatting character"));
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            0x7F => return Err(refused()),
            0xC2 if matches!(bytes.get(at + 1), Some(0x80..=0x9F)) => return Err(refused()),
            b'\\' => {
                match bytes.get(at + 1) {
                    Some(b'b' | b'f' | b'r') => return Err(refused()),
                    Some(b'u') => {
                        let code = bytes
                            .get(at + 2..at + 6)
                            .and_then(|hex| std::str::from_utf8(hex).ok())
                            .and_then(|hex| u32::from_str_radix(hex, 16).ok());
                        if code
                            .and_then(char::from_u32)
                            .is_some_and(|character| forbidden(character, TextKind::Prose))
                        {
                            return Err(refused());
                        }
                        at += 6;
                        continue;
                    }
                    _ => {}
                }
                at += 2;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// Length in UTF-16 code units (JavaScript's `String.length`).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// An identifier or label: trims `text`, checks the identifier rule and `1..=max` UTF-16
/// units; returns the trimmed value.
pub fn trimmed(field: &str, text: &str, max: usize) -> Result<String, ApiError> {
    let value = text.trim();
    bounded(field, value, max)?;
    Ok(value.to_string())
}

/// An identifier or label, not trimmed: the identifier rule and `1..=max` UTF-16 units.
pub fn bounded(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    characters(field, text, TextKind::Identifier)?;
    length(field, text, max)
}

/// Prose, trimmed: the prose rule and `1..=max` UTF-16 units; returns the trimmed value.
pub fn prose_trimmed(field: &str, text: &str, max: usize) -> Result<String, ApiError> {
    let value = text.trim();
    prose_bounded(field, value, max)?;
    Ok(value.to_string())
}

/// Prose, not trimmed: the prose rule and `1..=max` UTF-16 units.
pub fn prose_bounded(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    characters(field, text, TextKind::Prose)?;
    length(field, text, max)
}

fn length(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
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
    fn character_rule_by_kind() {
        use TextKind::{Identifier, Prose};
        // (character, refused in identifiers, refused in prose)
        let table = [
            ('a', false, false),
            ('é', false, false),
            ('😀', false, false),
            ('\u{05D0}', false, false), // Hebrew letter: right-to-left text is fine
            (' ', false, false),
            ('\u{0000}', true, true),
            ('\u{0001}', true, true),
            ('\u{001B}', true, true),
            ('\r', true, true),
            ('\t', true, false),
            ('\n', true, false),
            ('\u{007F}', true, true),
            ('\u{0085}', true, true),
            ('\u{009F}', true, true),
            ('\u{00A0}', false, false),
            ('\u{202E}', true, false),
            ('\u{202A}', true, false),
            ('\u{2066}', true, false),
            ('\u{2069}', true, false),
            ('\u{200F}', true, false),
            ('\u{061C}', true, false),
            ('\u{2028}', true, false),
            ('\u{2029}', true, false),
            ('\u{200B}', false, false),
        ];
        for (character, identifier, prose) in table {
            assert_eq!(
                forbidden(character, Identifier),
                identifier,
                "{:04X}",
                character as u32
            );
            assert_eq!(
                forbidden(character, Prose),
                prose,
                "{:04X}",
                character as u32
            );
        }
        assert!(session_id("a\u{0000}b").is_err());
        assert!(project("a\u{202E}b").is_err());
        assert!(trimmed("topic", "line\nbreak", 64).is_err());
        assert_eq!(
            prose_trimmed("content", " two\nlines\t ", 64),
            Ok("two\nlines".to_string())
        );
        assert!(prose_bounded("excerpt", "nul\u{0000}", 64).is_err());
        let nested = serde_json::json!({"a": [{"b": "ok\n"}], "c": 1});
        assert!(json_characters("body", &nested).is_ok());
        let deep = serde_json::json!({"a": [{"b": "x\u{0000}"}]});
        assert!(json_characters("body", &deep).is_err());
        let key = serde_json::json!({"k\u{0007}": 1});
        assert!(json_characters("body", &key).is_err());
    }

    #[test]
    fn the_byte_scan_answers_as_the_value_walk_does() {
        // (document as sent, refused?) — escapes, raw UTF-8, keys, a literal backslash.
        let table: &[(&str, bool)] = &[
            (r#"{"a": "plain text", "b": [1, 2.5, true, null]}"#, false),
            (r#"{"a": "tab\t and newline\n are prose"}"#, false),
            (r#"{"a": "escaped \u0009 tab and \u000A newline"}"#, false),
            (r#"{"a": "carriage\r return"}"#, true),
            (r#"{"a": "back\bspace"}"#, true),
            (r#"{"a": "form\ffeed"}"#, true),
            (r#"{"a": "nul \u0000"}"#, true),
            (r#"{"a": "bell \u0007"}"#, true),
            (r#"{"a": "upper hex \u001F"}"#, true),
            (r#"{"a": "del \u007f"}"#, true),
            (r#"{"a": "c1 \u0085"}"#, true),
            (r#"{"a": "after c1 \u00a0 is fine"}"#, false),
            (r#"{"a": "a literal backslash then u: \\u0000"}"#, false),
            (r#"{"a": "two backslashes \\\\ then r"}"#, false),
            (r#"{"a": "quote \" and slash \/"}"#, false),
            (r#"{"k\u0007": 1}"#, true),
            (r#"{"a": "surrogates \ud83d\ude00"}"#, false),
            (r#"{"a": "bidi \u202e is prose-legal"}"#, false),
            ("{\"a\": \"raw del \u{7f}\"}", true),
            ("{\"a\": \"raw c1 \u{85}\"}", true),
            ("{\"a\": \"raw é and 漢字\"}", false),
            (r#"["deep", [{"x": ["\u0001"]}]]"#, true),
        ];
        for (document, refused) in table {
            let value: serde_json::Value = serde_json::from_str(document).expect(document);
            let walked = json_characters("body", &value).is_err();
            let scanned = json_text_characters("body", document.as_bytes()).is_err();
            assert_eq!(walked, *refused, "value walk on {document}");
            assert_eq!(scanned, *refused, "byte scan on {document}");
        }
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
