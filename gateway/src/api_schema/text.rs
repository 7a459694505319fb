//! Text kinds: identifiers, prose, slugs, ids and instants, each with the character rule of
//! `baton_kit::text` written as a pattern.
//!
//! Bounds: JSON Schema counts code points, the contract counts UTF-16 units (a character
//! outside the BMP is two); `maxLength` is the contract's number and `x-maxLengthUtf16` says
//! how it is counted, so astral text reaches the bound sooner than `maxLength` suggests.
//! Patterns of trimmed fields describe the value after trimming.

use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};

/// Characters no identifier holds: C0, DEL, C1, bidi formatting, line/paragraph separators.
const NOT_IN_IDENTIFIERS: &str =
    r"\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029";
/// Characters no prose holds: C0 other than tab and newline, DEL, C1.
const NOT_IN_PROSE: &str = r"\x00-\x08\x0b-\x1f\x7f-\x9f";
/// The slug form of `agent` and `scope` (`baton_kit::text::is_slug`).
const SLUG: &str = "^[a-z0-9][a-z0-9-]*$";
/// A contract uuid (`baton_kit::text::contract_uuid`): version nibble 1..8, variant 8/9/a/b,
/// or the nil or max uuid.
const UUID: &str = "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|[fF]{8}-[fF]{4}-[fF]{4}-[fF]{4}-[fF]{12})$";
/// `Date.toISOString()` form, as every answer writes an instant (`baton_kit::clock::iso`).
const ISO: &str = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$";
/// A slug's longest form (`agent`, `scope`).
const SLUG_MAX: usize = 64;

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

fn format(known: KnownFormat) -> Option<SchemaFormat> {
    Some(SchemaFormat::KnownFormat(known))
}

/// 1..`max` UTF-16 units.
fn counted(max: usize) -> ObjectBuilder {
    string()
        .min_length(Some(1))
        .max_length(Some(max))
        .extensions(Some(
            ExtensionsBuilder::new()
                .add("x-maxLengthUtf16", max)
                .build(),
        ))
}

/// Some character other than white space, and none of `forbidden`.
fn at_least_one_visible(forbidden: &str) -> String {
    format!(r"^[^{forbidden}]*[^\s{forbidden}][^{forbidden}]*$")
}

kind! {
    /// An identifier or label (`sessionId`, `project`, `topic`, a tag), trimmed, 1..`MAX`.
    Identifier<const MAX: usize> => counted(MAX)
        .pattern(Some(at_least_one_visible(NOT_IN_IDENTIFIERS)))
        .description(Some("Trimmed; no control, bidi formatting or line separator character."))
}

kind! {
    /// Prose, trimmed and not blank (a memory's `content`).
    TrimmedProse<const MAX: usize> => counted(MAX)
        .pattern(Some(at_least_one_visible(NOT_IN_PROSE)))
        .description(Some("Trimmed; tab and newline allowed, no other control character."))
}

kind! {
    /// Prose stored as sent (`lastMessageExcerpt`).
    Prose<const MAX: usize> => counted(MAX)
        .pattern(Some(format!("^[^{NOT_IN_PROSE}]*$")))
        .description(Some("Stored as sent; tab and newline allowed, no other control character."))
}

kind! {
    /// `agent` (and a client's kind): a slug, trimmed.
    Agent => string()
        .min_length(Some(1))
        .max_length(Some(SLUG_MAX))
        .pattern(Some(SLUG))
        .description(Some("Trimmed before the pattern and the bound apply."))
}

kind! {
    /// `scope`: a slug, not trimmed (a padded scope is simply invalid).
    Scope => string().min_length(Some(1)).max_length(Some(SLUG_MAX)).pattern(Some(SLUG))
}

kind! {
    /// An uploaded fact's id (`hostId`, `agentId`): `[A-Za-z0-9._:-]`, 1..`MAX`.
    FactId<const MAX: usize> => string()
        .min_length(Some(1))
        .max_length(Some(MAX))
        .pattern(Some(format!("^[A-Za-z0-9._:-]{{1,{MAX}}}$")))
}

kind! {
    /// A sidecar's token (`clientVersion`, `hostId` of a pulse), trimmed, 1..`MAX`.
    Token<const MAX: usize> => string()
        .min_length(Some(1))
        .max_length(Some(MAX))
        .pattern(Some("^[A-Za-z0-9._:+-]+$"))
        .description(Some("Trimmed."))
}

kind! {
    /// A contract uuid.
    ContractUuid => string().format(format(KnownFormat::Uuid)).pattern(Some(UUID))
}

kind! {
    /// An instant an answer writes, always in `toISOString` form.
    Timestamp => string().format(format(KnownFormat::DateTime)).pattern(Some(ISO))
}

kind! {
    /// An instant a request names (RFC 3339).
    Instant => string().format(format(KnownFormat::DateTime))
}
