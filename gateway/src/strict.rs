//! Strict request parsing (CONTRACT section 0, "Validation semantics").
//!
//! A body that is not JSON is 400 `invalid_request`; JSON that does not fit the route's shape —
//! an unknown or misspelled key, a wrong type, a `null` where a value is optional, a number
//! given as a string — is 400 `invalid_input`. Bodies larger than the configured limit are 413.
//! Query strings are parsed the same way: unknown and repeated keys are errors. Every key and
//! string of a body or query meets the shared character floor (`baton_kit::text`: no U+0000,
//! no control but tab and newline) before any field rule; services then apply the stricter
//! identifier rule to the fields that are identifiers.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use baton_kit::error::ErrorCode;
use baton_kit::shape_error;
use baton_kit::text::{self, TextKind};

use crate::body::BodyLimit;
use crate::response::HttpError;

/// A route without query parameters: any key is 400, like an unknown key of a route that has
/// some (a malformed query string too).
#[derive(Debug, Clone, Copy)]
pub struct NoQuery;

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<NoQuery, HttpError> {
        only_keys(&query_pairs(parts.uri.query())?, &[])?;
        Ok(NoQuery)
    }
}

/// The raw body, read within the configured limit (413 beyond it).
#[derive(Debug)]
pub struct LimitedBody(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for LimitedBody {
    type Rejection = HttpError;

    async fn from_request(request: Request<Body>, _state: &S) -> Result<Self, Self::Rejection> {
        let limit = BodyLimit::of(&request);
        crate::body::read_within(request, limit)
            .await
            .map(LimitedBody)
    }
}

/// A JSON body parsed strictly into `T`.
#[derive(Debug)]
pub struct StrictJson<T>(pub T);

impl<S, T> FromRequest<S> for StrictJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = HttpError;

    async fn from_request(request: Request<Body>, state: &S) -> Result<Self, Self::Rejection> {
        let LimitedBody(bytes) = LimitedBody::from_request(request, state).await?;
        parse_body(&bytes).map(StrictJson)
    }
}

/// Body bytes as JSON: anything unparseable is 400 `invalid_request`.
pub fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, HttpError> {
    serde_json::from_slice(bytes)
        .map_err(|_| HttpError::new(ErrorCode::InvalidRequest, "body is not valid JSON"))
}

/// JSON into the route's shape: any mismatch is 400 `invalid_input`.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, HttpError> {
    baton_kit::text::json_characters("body", &value)?;
    shape_error::from_value("body", value)
        .map_err(|detail| HttpError::new(ErrorCode::InvalidInput, detail))
}

/// Parses body bytes: malformed JSON and shape errors are told apart.
///
/// One pass straight into `T` (no intermediate `Value`: a 1000-row usage upload built 12,000
/// map keys only to throw them away). The answers are those of [`parse_json`] then
/// [`from_value`]: a document that is not JSON is `invalid_request`; then the character floor
/// over every key and string, read from the bytes ([`baton_kit::text::json_text_characters`]);
/// then the shape, `invalid_input` with the field's path and the rule, without the value
/// ([`baton_kit::shape_error`]).
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, HttpError> {
    // Whole-body UTF-8 first: a field serde skips is not checked while skipped.
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str::<T>(text),
        Err(_) => {
            return Err(HttpError::new(
                ErrorCode::InvalidRequest,
                "body is not valid JSON",
            ));
        }
    };
    // serde stops at the first error, which may be one of shape before one of syntax; only a
    // document that is not JSON at all (invalid UTF-8, a lone surrogate escape, a truncation)
    // is `invalid_request`, so a refused body is parsed again the old way to tell them apart.
    if parsed.is_err() && parse_json(bytes).is_err() {
        return Err(HttpError::new(
            ErrorCode::InvalidRequest,
            "body is not valid JSON",
        ));
    }
    baton_kit::text::json_text_characters("body", bytes)?;
    parsed.map_err(|_| {
        HttpError::new(
            ErrorCode::InvalidInput,
            shape_error::refusal::<T>("body", bytes),
        )
    })
}

/// For `#[serde(default, deserialize_with = "strict::present")]`: an optional key that, when
/// present, must hold a value (`null` is rejected, as Zod's `.optional()` does).
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// Parses a query string into pairs, refusing repeated keys.
pub fn query_pairs(query: Option<&str>) -> Result<Vec<(String, String)>, HttpError> {
    query_pairs_allowing(query, &[])
}

/// Parses a query string into pairs; only the keys in `repeatable` may appear more than once.
pub fn query_pairs_allowing(
    query: Option<&str>,
    repeatable: &[&str],
) -> Result<Vec<(String, String)>, HttpError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for piece in query
        .unwrap_or("")
        .split('&')
        .filter(|piece| !piece.is_empty())
    {
        let (raw_key, raw_value) = piece.split_once('=').unwrap_or((piece, ""));
        let key = percent_decode(raw_key)?;
        let value = percent_decode(raw_value)?;
        text::characters("query", &key, TextKind::Prose)?;
        text::characters("query", &value, TextKind::Prose)?;
        if !repeatable.contains(&key.as_str()) && pairs.iter().any(|(existing, _)| *existing == key)
        {
            return Err(HttpError::new(
                ErrorCode::InvalidInput,
                format!("query parameter {key} repeated"),
            ));
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// The value of a key that appears at most once.
pub fn single<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(candidate, _)| candidate == key)
        .map(|(_, value)| value.as_str())
}

/// A strictly written non-negative integer (`"4"`; not `"+4"`, `"4.0"`, `""` or `"abc"`).
pub fn strict_integer(field: &str, text: &str) -> Result<u32, HttpError> {
    let digits_only = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let value = digits_only.then(|| text.parse::<u32>().ok()).flatten();
    value.ok_or_else(|| {
        HttpError::new(
            ErrorCode::InvalidInput,
            format!("{field} must be an integer"),
        )
    })
}

/// Refuses any query key outside `allowed`.
pub fn only_keys(pairs: &[(String, String)], allowed: &[&str]) -> Result<(), HttpError> {
    match pairs
        .iter()
        .find(|(key, _)| !allowed.contains(&key.as_str()))
    {
        Some((key, _)) => Err(HttpError::new(
            ErrorCode::InvalidInput,
            format!("unknown query parameter {key}"),
        )),
        None => Ok(()),
    }
}

fn percent_decode(text: &str) -> Result<String, HttpError> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => {
                decoded.push(b' ');
                index += 1;
            }
            b'%' => {
                let hex = bytes
                    .get(index + 1..index + 3)
                    .and_then(|pair| std::str::from_utf8(pair).ok())
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                    .ok_or_else(|| HttpError::new(ErrorCode::InvalidInput, "bad query escape"))?;
                decoded.push(hex);
                index += 3;
            }
            byte => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded)
        .map_err(|_| HttpError::new(ErrorCode::InvalidInput, "query is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        session_id: String,
        #[serde(default, deserialize_with = "present")]
        turn_count: Option<u32>,
    }

    fn code_of(bytes: &str) -> Option<ErrorCode> {
        parse_body::<Body>(bytes.as_bytes())
            .err()
            .map(|error| error.code)
    }

    #[test]
    fn malformed_json_and_shape_errors_differ() {
        let table = [
            (r#"{"sessionId":"a"}"#, None),
            (r#"{"sessionId":"a","turnCount":4}"#, None),
            (r#"{"sessionId":"a""#, Some(ErrorCode::InvalidRequest)),
            ("", Some(ErrorCode::InvalidRequest)),
            (r#"{"sessionid":"a"}"#, Some(ErrorCode::InvalidInput)),
            (
                r#"{"sessionId":"a","extra":1}"#,
                Some(ErrorCode::InvalidInput),
            ),
            (
                r#"{"sessionId":"a","turnCount":"4"}"#,
                Some(ErrorCode::InvalidInput),
            ),
            (
                r#"{"sessionId":"a","turnCount":null}"#,
                Some(ErrorCode::InvalidInput),
            ),
            (
                r#"{"sessionId":"a","turnCount":1.5}"#,
                Some(ErrorCode::InvalidInput),
            ),
            (
                r#"{"sessionId":"a","turnCount":-1}"#,
                Some(ErrorCode::InvalidInput),
            ),
            (r#"[]"#, Some(ErrorCode::InvalidInput)),
            (r#"{"sessionId":"a\u0000"}"#, Some(ErrorCode::InvalidInput)),
            (r#"{"sessionId":"a\u001b"}"#, Some(ErrorCode::InvalidInput)),
            (r#"{"sessionId":"a\u0085"}"#, Some(ErrorCode::InvalidInput)),
            (r#"{"sessionId\u0000":"a"}"#, Some(ErrorCode::InvalidInput)),
            (r#"{"sessionId":"\ud800"}"#, Some(ErrorCode::InvalidRequest)),
        ];
        for (body, expected) in table {
            assert_eq!(code_of(body), expected, "{body}");
        }
        let not_utf8 = parse_body::<Body>(b"{\"sessionId\":\"\xff\"}").expect_err("not UTF-8");
        assert_eq!(not_utf8.code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn query_keys_are_unique_and_decoded() {
        let pairs = query_pairs(Some("scope=work&project=my%20repo&x=a+b")).expect("valid");
        assert_eq!(pairs[1], ("project".to_string(), "my repo".to_string()));
        assert_eq!(pairs[2].1, "a b");
        assert!(query_pairs(Some("scope=work&scope=personal")).is_err());
        assert!(only_keys(&pairs, &["scope", "project"]).is_err());
        assert!(only_keys(&pairs[..2], &["scope", "project"]).is_ok());
        for bad in [
            "project=a%00b",
            "project=%1b",
            "a%00=1",
            "project=%ff",
            "project=%C2%85",
        ] {
            let refused = query_pairs(Some(bad)).expect_err(bad);
            assert_eq!(refused.code, ErrorCode::InvalidInput, "{bad}");
        }
        assert!(query_pairs(Some("project=a%09b")).is_ok(), "tab is prose");
    }
}
