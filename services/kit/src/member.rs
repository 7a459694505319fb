//! Members: the person a tenant's ingest key speaks for (`baton key create --member alice`).
//! The gateway resolves it with the key and sends it on every call that attributes work
//! (session opens, heartbeats, pulses, usage uploads) as the `x-baton-member` metadata entry;
//! a key without a member sends none, and what it reported reads as [`UNATTRIBUTED`].
//!
//! A member name is 1..=64 characters of ASCII letters, digits, `.`, `_`, `-` and `@`,
//! starting with a letter or digit (a handle or an e-mail address), and never the reserved
//! word [`UNATTRIBUTED`], so a group keyed by member cannot be mistaken for a person.

use tonic::{Request, Status};

use crate::error::ApiError;

/// The gRPC metadata entry carrying the caller's member.
pub const MEMBER_KEY: &str = "x-baton-member";
/// What work from a key without a member is grouped and shown as.
pub const UNATTRIBUTED: &str = "unattributed";
/// Longest member name.
pub const MAX_MEMBER_LEN: usize = 64;

/// Validates a member name (see the module's rule).
pub fn member(text: &str) -> Result<String, ApiError> {
    let mut characters = text.chars();
    let first_ok = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric());
    let rest_ok = characters.all(|character| {
        character.is_ascii_alphanumeric() || matches!(character, '.' | '_' | '-' | '@')
    });
    if text.is_empty() || text.len() > MAX_MEMBER_LEN || !first_ok || !rest_ok {
        return Err(ApiError::invalid_input(format!(
            "member must be 1 to {MAX_MEMBER_LEN} letters, digits, '.', '_', '-' or '@', \
             starting with a letter or digit"
        )));
    }
    if text.eq_ignore_ascii_case(UNATTRIBUTED) {
        return Err(ApiError::invalid_input(format!(
            "member may not be '{UNATTRIBUTED}' (it names work from keys without a member)"
        )));
    }
    Ok(text.to_string())
}

/// The member a call speaks for: `None` when the key has none; a malformed entry is refused.
pub fn member_of<T>(request: &Request<T>) -> Result<Option<String>, Status> {
    let Some(value) = request.metadata().get(MEMBER_KEY) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        Status::from(ApiError::invalid_input(format!(
            "metadata {MEMBER_KEY} must be text"
        )))
    })?;
    member(text).map(Some).map_err(Status::from)
}

/// Adds `member` to an outgoing request (nothing when absent).
pub fn attach<T>(request: &mut Request<T>, member: Option<&str>) {
    if let Some(value) = member.and_then(|member| member.parse().ok()) {
        request.metadata_mut().insert(MEMBER_KEY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_are_handles_or_addresses_and_never_the_reserved_word() {
        for good in [
            "alice",
            "Bob.Smith",
            "a",
            "dev_1",
            "alice@example.com",
            &"a".repeat(64),
        ] {
            assert_eq!(member(good).as_deref().ok(), Some(good), "{good}");
        }
        for bad in [
            "",
            " alice",
            "-alice",
            "al ice",
            "alice\n",
            "ålice",
            "unattributed",
            "Unattributed",
            &"a".repeat(65),
        ] {
            assert!(member(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_metadata_round_trips_and_a_malformed_entry_is_refused() {
        let mut request = Request::new(());
        assert_eq!(member_of(&request).expect("absent"), None);
        attach(&mut request, Some("alice"));
        assert_eq!(
            member_of(&request).expect("present").as_deref(),
            Some("alice")
        );
        let mut bad = Request::new(());
        bad.metadata_mut()
            .insert(MEMBER_KEY, "two words".parse().expect("ascii"));
        assert_eq!(
            member_of(&bad).expect_err("refused").code(),
            tonic::Code::InvalidArgument
        );
    }
}
