//! Why a JSON body did not fit the route's shape, said without the caller's values.
//!
//! serde's messages quote what was submitted (`invalid type: string "my secret", expected u32`,
//! `unknown variant `x``), and a field's own parser (a uuid, an instant) may quote it too. The
//! `detail` of a 400 names the field (its path in the body) and the rule broken, never the value
//! (the gateway's 400s and provenance's import), so each message is rebuilt from the parts serde takes from
//! the route's types: the path, the expected type, the kind (not the content) of what came,
//! the allowed variants and keys. Key names are structure, not values, and are kept.
//! Anything else falls back to a fixed sentence with the path.

use serde::de::DeserializeOwned;

/// The longest `detail` the OpenAPI document allows.
pub const MAX_DETAIL_CHARS: usize = 500;

/// `detail` for a document that failed its shape: `path: rule`, or `root: rule` when the
/// rule is about the document itself (`root` names it: "body", "import document").
pub fn shape_detail(root: &str, path: &str, message: &str) -> String {
    let rule = rule_of(strip_position(message));
    let detail = if path.is_empty() || path == "." {
        format!("{root}: {rule}")
    } else {
        format!("{path}: {rule}")
    };
    bounded(&detail)
}

/// `value` read as `T`; a refusal is the detail of [`shape_detail`], naming the field.
pub fn from_value<T: DeserializeOwned>(root: &str, value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value)
        .map_err(|error| shape_detail(root, &error.path().to_string(), &error.inner().to_string()))
}

/// Why `text` does not read as `T`, naming the field: for a document already refused by a
/// faster parse without path tracking (tracking it on every upload would tax the common case).
pub fn refusal<T: DeserializeOwned>(root: &str, text: &[u8]) -> String {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Err(error) => shape_detail(root, &error.path().to_string(), &error.inner().to_string()),
        // The same bytes and type cannot parse now; said plainly rather than panicking.
        Ok(_) => format!("{root}: does not match the route's schema"),
    }
}

/// `text` cut to [`MAX_DETAIL_CHARS`] characters.
pub fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((end, _)) => text[..end].to_string(),
        None => text.to_string(),
    }
}

/// serde_json appends ` at line L column C`; the position says nothing the path does not.
fn strip_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(start) if message[start..].contains(" column ") => &message[..start],
        _ => message,
    }
}

/// The rule a serde message states, without the submitted value.
fn rule_of(message: &str) -> String {
    // Messages made only of the type's own words: field names, lengths, fixed phrases.
    const AS_IS: [&str; 5] = [
        "missing field `",
        "duplicate field `",
        "unknown field `",
        "invalid length ",
        "data did not match any variant",
    ];
    if AS_IS.iter().any(|prefix| message.starts_with(prefix)) {
        return message.to_string();
    }
    // `invalid type: <what came>, expected <type>`: the kind of what came, not its content. The
    // expected part is written by the route's types, so the last `, expected ` is the split.
    for (prefix, said) in [
        ("invalid type: ", "wrong type"),
        ("invalid value: ", "invalid value"),
    ] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some(split) = rest.rfind(", expected ")
        {
            let came = kind_of(&rest[..split]);
            let expected = &rest[split + ", expected ".len()..];
            return format!("{said}: expected {expected}, got {came}");
        }
    }
    if message.starts_with("unknown variant `")
        && let Some(split) = message.rfind(", expected ")
    {
        return format!(
            "unknown variant, expected {}",
            &message[split + ", expected ".len()..]
        );
    }
    if message == "number out of range" || message == "recursion limit exceeded" {
        return message.to_string();
    }
    // A field's own parser (uuid, instant, …) may quote what it read.
    "does not match the route's schema".to_string()
}

/// serde's `Unexpected` is displayed as its kind, then (for scalars) the value: `string "…"`,
/// `integer `5``, `boolean `true``. Only the kind is kept.
fn kind_of(unexpected: &str) -> &'static str {
    const KINDS: [(&str, &str); 13] = [
        ("string", "a string"),
        ("integer", "an integer"),
        ("floating point", "a number with a fraction"),
        ("boolean", "a boolean"),
        ("character", "a character"),
        ("null", "null"),
        ("unit", "null"),
        ("map", "an object"),
        ("sequence", "an array"),
        ("byte array", "bytes"),
        ("Option value", "an optional value"),
        ("newtype struct", "a value"),
        ("enum", "an enum"),
    ];
    KINDS
        .iter()
        .find(|(prefix, _)| unexpected.starts_with(prefix))
        .map(|(_, kind)| *kind)
        .unwrap_or("another value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_keeps_its_rule_and_drops_the_value() {
        let table = [
            (
                "entries[0].inputTokens",
                "invalid type: string \"my secret\", expected u64 at line 1 column 40",
                "entries[0].inputTokens: wrong type: expected u64, got a string",
            ),
            (
                "turnCount",
                "invalid type: floating point `1.5`, expected u32",
                "turnCount: wrong type: expected u32, got a number with a fraction",
            ),
            (
                "turnCount",
                "invalid value: integer `-4`, expected u32",
                "turnCount: invalid value: expected u32, got an integer",
            ),
            (
                "name",
                "invalid type: string \"a, expected b\", expected u32",
                "name: wrong type: expected u32, got a string",
            ),
            (
                "status",
                "unknown variant `hunter2`, expected one of `open`, `closed`",
                "status: unknown variant, expected one of `open`, `closed`",
            ),
            (
                ".",
                "missing field `sessionId` at line 1 column 2",
                "body: missing field `sessionId`",
            ),
            (
                "",
                "unknown field `sesionId`, expected `sessionId` or `turnCount`",
                "body: unknown field `sesionId`, expected `sessionId` or `turnCount`",
            ),
            (
                "facts",
                "invalid length 3, expected a tuple of size 2",
                "facts: invalid length 3, expected a tuple of size 2",
            ),
            (
                "runId",
                "UUID parsing failed: invalid character: expected an optional prefix of \
                 `urn:uuid:` followed by [0-9a-fA-F-], found `q` at 1",
                "runId: does not match the route's schema",
            ),
            (
                "sessionId",
                "invalid type: null, expected a string",
                "sessionId: wrong type: expected a string, got null",
            ),
        ];
        for (path, message, expected) in table {
            assert_eq!(shape_detail("body", path, message), expected, "{message}");
        }
    }

    #[test]
    fn a_detail_is_bounded_on_a_character_boundary() {
        let long = "é".repeat(MAX_DETAIL_CHARS + 10);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), MAX_DETAIL_CHARS);
        assert_eq!(bounded("short"), "short");
    }
}
