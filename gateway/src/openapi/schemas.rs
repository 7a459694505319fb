//! The document's field types and component schemas, each stating what the server enforces.
//!
//! Bounds: JSON Schema counts code points, the contract counts UTF-16 units (a character
//! outside the BMP is two); `maxLength` is the contract's number and `x-maxLengthUtf16` says
//! how it is counted, so astral text reaches the bound sooner than `maxLength` suggests.
//! Patterns of trimmed fields describe the value after trimming.

use serde_json::{Value, json};

/// Characters no identifier holds: C0, DEL, C1, bidi formatting, line/paragraph separators.
const NOT_IN_IDENTIFIERS: &str =
    r"\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029";
/// Characters no prose holds: C0 other than tab and newline, DEL, C1.
const NOT_IN_PROSE: &str = r"\x00-\x08\x0b-\x1f\x7f-\x9f";

/// `^[a-z0-9][a-z0-9-]*$`
pub const SLUG: &str = "^[a-z0-9][a-z0-9-]*$";
/// A contract uuid: version nibble 1..8, variant 8/9/a/b, or the nil or max uuid.
pub const UUID: &str = "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|[fF]{8}-[fF]{4}-[fF]{4}-[fF]{4}-[fF]{12})$";
/// `Date.toISOString()` form.
const ISO: &str = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$";

fn at_least_one_visible(forbidden: &str) -> String {
    format!(r"^[^{forbidden}]*[^\s{forbidden}][^{forbidden}]*$")
}

/// An identifier or label, trimmed, 1..`max` UTF-16 units.
pub fn identifier(max: u32) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max, "x-maxLengthUtf16": max,
        "pattern": at_least_one_visible(NOT_IN_IDENTIFIERS),
        "description": "Trimmed; no control, bidi formatting or line separator character."})
}

/// A slug (`agent`), trimmed, 1..64.
pub fn agent() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": SLUG,
        "description": "Trimmed before the pattern and the bound apply."})
}

/// `scope`: a slug, 1..64, not trimmed.
pub fn scope() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": SLUG})
}

/// Prose, trimmed and non-blank (`content`).
pub fn prose_trimmed(max: u32) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max, "x-maxLengthUtf16": max,
        "pattern": at_least_one_visible(NOT_IN_PROSE),
        "description": "Trimmed; tab and newline allowed, no other control character."})
}

/// Prose, not trimmed (`lastMessageExcerpt`).
pub fn prose(max: u32) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max, "x-maxLengthUtf16": max,
        "pattern": format!("^[^{NOT_IN_PROSE}]*$"),
        "description": "Stored as sent; tab and newline allowed, no other control character."})
}

pub fn uuid() -> Value {
    json!({"type": "string", "format": "uuid", "pattern": UUID})
}

/// A response timestamp.
pub fn iso() -> Value {
    json!({"type": "string", "format": "date-time", "pattern": ISO})
}

pub fn nullable(mut schema: Value) -> Value {
    schema["nullable"] = json!(true);
    schema
}

/// A request instant (RFC 3339).
pub fn instant() -> Value {
    json!({"type": "string", "format": "date-time"})
}

pub fn string_enum(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

pub fn integer(minimum: i64, maximum: i64) -> Value {
    json!({"type": "integer", "minimum": minimum, "maximum": maximum})
}

pub fn boolean() -> Value {
    json!({"type": "boolean"})
}

pub fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub fn array(items: Value, max_items: Option<u32>) -> Value {
    let mut schema = json!({"type": "array", "items": items});
    if let Some(max) = max_items {
        schema["maxItems"] = json!(max);
    }
    schema
}

/// A closed object: exactly these properties, `required` of them required.
pub fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "additionalProperties": false,
        "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A closed object whose every property is required.
pub fn record(properties: Value) -> Value {
    let names: Vec<String> = properties
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    object(properties, &names)
}

pub const TRIAGE_STATUSES: &[&str] = &["idle", "pending", "completed", "expired", "overflowed"];
pub const EVENT_KINDS: &[&str] = &[
    "create",
    "revise",
    "supersede",
    "resolve",
    "unresolve",
    "archive",
    "import",
    "embed_failed",
];
pub const ACTOR_KINDS: &[&str] = &[
    "user_dashboard",
    "user_api",
    "user_mcp",
    "worker",
    "importer",
    "system",
];
pub const MEMORY_TYPES: &[&str] = &[
    "decision",
    "commitment",
    "blocker",
    "fact",
    "preference",
    "pattern",
    "note",
    "event",
];
pub const LIVENESS: &[&str] = &["live", "idle", "disconnected", "closed"];

/// The selector, as a request sends it and as an answer shows it (`includeUnscoped` is
/// optional in a request, always present in an answer).
pub fn selector(answer: bool) -> Value {
    let mut scope_project = json!({"kind": string_enum(&["scope_project"]), "scope": scope(),
        "project": identifier(256), "includeUnscoped": boolean()});
    let required: &[&str] = if answer {
        &["kind", "scope", "project", "includeUnscoped"]
    } else {
        &["kind", "scope", "project"]
    };
    if !answer {
        scope_project["includeUnscoped"]["default"] = json!(false);
    }
    json!({"oneOf": [
        record(json!({"kind": string_enum(&["all"])})),
        record(json!({"kind": string_enum(&["scope"]), "scope": scope()})),
        record(json!({"kind": string_enum(&["project"]), "project": identifier(256)})),
        object(scope_project, required),
    ], "discriminator": {"propertyName": "kind"}})
}

/// Every component schema, by name.
pub fn components() -> Value {
    let briefed = record(json!({"id": uuid(), "topic": identifier(256), "status": identifier(64)}));
    let memory_ref = record(
        json!({"id": uuid(), "memoryType": string_enum(MEMORY_TYPES),
        "topic": {"type": "string"}, "scope": {"type": "string"},
        "project": nullable(json!({"type": "string"}))}),
    );
    let commitment_section = object(
        json!({"count": integer(0, i64::from(u32::MAX)), "hasMore": boolean(),
            "items": array(record(json!({"id": uuid(), "memoryId": uuid(),
                "topic": {"type": "string"}, "status": {"type": "string"},
                "dueAt": nullable(iso()), "overdue": boolean()})), None)}),
        &["count", "hasMore", "items"],
    );
    let memory_section = record(json!({"count": integer(0, i64::from(u32::MAX)),
        "items": array(record(json!({"id": uuid(), "memoryType": string_enum(MEMORY_TYPES),
            "topic": {"type": "string"}, "scope": {"type": "string"},
            "project": nullable(json!({"type": "string"})), "recordedAt": iso(),
            "updatedAt": iso()})), None)}));
    let codes: Vec<&str> = baton_kit::error::ErrorCode::ALL
        .iter()
        .map(|code| code.as_str())
        .collect();
    let mut schemas = json!({
        "Error": object(json!({"error": string_enum(&codes),
            "detail": {"type": "string", "maxLength": 500, "description":
                "Why, on every 4xx: the field (its path in the body, or the query parameter) and \
                 the rule it broke; never the value sent. Absent on a 5xx."}}), &["error"]),
        "BriefedRow": briefed,
        "Selector": selector(false),
        "SelectorAnswer": selector(true),
        "MemoryRef": memory_ref,
        "CommitmentSection": commitment_section,
        "MemorySection": memory_section,
    });
    if let Some(map) = schemas.as_object_mut() {
        super::usage_paths::components(map);
    }
    schemas
}
