//! Ids in the path, decoded into the contract's answers (CONTRACT sections 0, 7 and 10).
//!
//! axum's own `Path` rejection is a plain-text 400 naming a Rust type; here a segment that is
//! not UTF-8 after percent-decoding (`/memories/%ff`) is answered exactly like any other
//! malformed id of its route: 404 `not_found` for memories, 400 `invalid_input` for session
//! runs.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::{IntoParams, PartialSchema};

use baton_kit::error::ErrorCode;
use baton_kit::text;

use crate::api_schema::text::ContractUuid;
use crate::response::HttpError;

/// A `{sessionRunId}` segment: a contract uuid, lower-cased; anything else is 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIdPath(pub String);

/// A memory `{id}` segment: a contract uuid, lower-cased; anything else is 404.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryIdPath(pub String);

/// A budget's or webhook's `{id}` segment: a contract uuid, lower-cased; anything else is 404
/// (no such budget or webhook).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetIdPath(pub String);

/// The id a segment names, or the route's refusal.
pub fn decide(segment: Option<&str>, malformed: ErrorCode) -> Result<String, HttpError> {
    segment
        .and_then(text::contract_uuid)
        .map(|id| id.to_string())
        .ok_or_else(|| HttpError::new(malformed, "malformed id in the path"))
}

async fn segment<S: Send + Sync>(parts: &mut Parts, state: &S) -> Option<String> {
    Path::<String>::from_request_parts(parts, state)
        .await
        .ok()
        .map(|Path(segment)| segment)
}

impl<S: Send + Sync> FromRequestParts<S> for RunIdPath {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<RunIdPath, HttpError> {
        let segment = segment(parts, state).await;
        decide(segment.as_deref(), ErrorCode::InvalidInput).map(RunIdPath)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for MemoryIdPath {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<MemoryIdPath, HttpError> {
        let segment = segment(parts, state).await;
        decide(segment.as_deref(), ErrorCode::NotFound).map(MemoryIdPath)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for BudgetIdPath {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<BudgetIdPath, HttpError> {
        let segment = segment(parts, state).await;
        decide(segment.as_deref(), ErrorCode::NotFound).map(BudgetIdPath)
    }
}

/// The document's path parameter `name`: a contract uuid, described for its route.
fn parameter(name: &str, description: &str) -> Vec<Parameter> {
    vec![
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .schema(Some(ContractUuid::schema()))
            .description(Some(description))
            .build(),
    ]
}

impl IntoParams for RunIdPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        parameter(
            "sessionRunId",
            "Lower-cased before use; malformed, unknown and other tenants' ids are 400.",
        )
    }
}

impl IntoParams for MemoryIdPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        parameter("id", "Malformed, unknown and other tenants' ids are 404.")
    }
}

impl IntoParams for BudgetIdPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        parameter("id", "Malformed, unknown and other tenants' ids are 404.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_become_ids_or_the_routes_refusal() {
        let id = "0190B3A4-7D2E-7C41-9A3B-2F1E4D5C6B7A";
        // (segment, malformed code, expected)
        let table = [
            (Some(id), ErrorCode::NotFound, Ok(id.to_lowercase())),
            (None, ErrorCode::NotFound, Err(ErrorCode::NotFound)),
            (None, ErrorCode::InvalidInput, Err(ErrorCode::InvalidInput)),
            (
                Some("\u{0000}"),
                ErrorCode::NotFound,
                Err(ErrorCode::NotFound),
            ),
            (
                Some("nope"),
                ErrorCode::InvalidInput,
                Err(ErrorCode::InvalidInput),
            ),
        ];
        for (segment, malformed, expected) in table {
            let decided = decide(segment, malformed).map_err(|error| error.code);
            assert_eq!(decided, expected, "{segment:?}");
        }
    }
}
