//! The error answers: one response per status (`#/components/responses/...`), each an
//! [`ErrorBody`](crate::response::ErrorBody) with the codes that status carries.
//!
//! Statuses that follow from an operation's shape are added to every operation by
//! [`ErrorAnswers`]: 401, 429 and 503 wherever a key is required, and 400, 408 and 413 wherever
//! a body is read. An operation names its own others (`errors::NotFound`, `errors::Conflict`)
//! in its `responses(...)`.

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Ref, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, RefOr};
use utoipa::{IntoResponses, Modify, ToSchema};

use crate::response::ErrorBody;

/// Statuses every `/api/v1` operation that takes a key can answer besides its own: 401 before
/// anything else, 429 (rate limits, also the per-client connection cap), 503 (a dependency
/// lost, load shed, request timeout).
pub const COMMON_ERRORS: &[u16] = &[401, 429, 503];
/// Statuses of every operation that reads a body: 400 (the body's shape or a field's rule), 408
/// (body too slow), 413 (too large).
pub const BODY_ERRORS: &[u16] = &[400, 408, 413];

/// An error status: its response's name in the document, and which codes it carries.
struct ErrorStatus {
    status: u16,
    name: &'static str,
    description: &'static str,
}

const STATUSES: &[ErrorStatus] = &[
    ErrorStatus {
        status: 400,
        name: "InvalidInput",
        description: "`invalid_input` (a field, key, bound or character rule) or \
            `invalid_request` (not JSON)",
    },
    ErrorStatus {
        status: 401,
        name: "Unauthorized",
        description: "`unauthorized`: missing, malformed, unknown or revoked key (checked \
            before the body)",
    },
    ErrorStatus {
        status: 404,
        name: "NotFound",
        description: "`not_found`",
    },
    ErrorStatus {
        status: 408,
        name: "RequestTimeout",
        description: "`request_timeout`: the body did not arrive in time; the connection is \
            closed",
    },
    ErrorStatus {
        status: 409,
        name: "Conflict",
        description: "`conflict`, `duplicate_memory`, `resource_limit_exceeded` or \
            `invalid_transition`",
    },
    ErrorStatus {
        status: 413,
        name: "PayloadTooLarge",
        description: "`payload_too_large`; the connection is closed",
    },
    ErrorStatus {
        status: 415,
        name: "UnsupportedMediaType",
        description: "`unsupported_media_type`: a `Content-Encoding` other than gzip or zstd",
    },
    ErrorStatus {
        status: 429,
        name: "RateLimited",
        description: "`rate_limited`: per verified key, per client for failed verifications, \
            or too many connections",
    },
    ErrorStatus {
        status: 503,
        name: "ServiceUnavailable",
        description: "`service_unavailable`: a database, broker or service is unreachable \
            (retry), or load shed",
    },
];

fn error_status(status: u16) -> &'static ErrorStatus {
    STATUSES
        .iter()
        .find(|known| known.status == status)
        .unwrap_or_else(|| panic!("{status} is not an error status the document describes"))
}

/// The answer of an error status; 429 and 503 say when to come back.
fn response(status: &ErrorStatus) -> Response {
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(ErrorBody::name())))
        .build();
    let mut response = ResponseBuilder::new()
        .description(status.description)
        .content("application/json", body);
    if matches!(status.status, 429 | 503) {
        // Always sent (`response::HttpError`); see `require_retry_after` for `required`.
        let seconds = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1));
        response = response.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(seconds)
                .description(Some("Seconds to wait before retrying."))
                .build(),
        );
    }
    response.build()
}

fn reference(status: u16) -> (String, RefOr<Response>) {
    let name = error_status(status).name;
    (
        status.to_string(),
        RefOr::Ref(Ref::from_response_name(name)),
    )
}

/// Declares an operation's own error status, for its `responses(...)`.
macro_rules! error_answer {
    ($(#[$meta:meta])* $name:ident = $status:literal) => {
        $(#[$meta])*
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([reference($status)])
            }
        }
    };
}

error_answer!(
    /// 400 of an operation without a body: a query or path rule broken.
    InvalidInput = 400
);
error_answer!(
    /// 404: no such session, memory, budget or webhook (or another tenant's).
    NotFound = 404
);
error_answer!(
    /// 409: a conflict, a duplicate, a limit or a transition the state refuses.
    Conflict = 409
);
error_answer!(
    /// 415: an upload's `Content-Encoding` is neither gzip nor zstd.
    UnsupportedMediaType = 415
);
error_answer!(
    /// 503: the public document's only error.
    ServiceUnavailable = 503
);

/// Adds the statuses that follow from an operation's shape, and the error responses.
pub struct ErrorAnswers;

impl ErrorAnswers {
    fn add_to(operation: &mut Operation, global_security: bool) {
        let public = operation
            .security
            .as_ref()
            .map_or(!global_security, Vec::is_empty);
        let mut statuses: Vec<u16> = Vec::new();
        if !public {
            statuses.extend_from_slice(COMMON_ERRORS);
        }
        if operation.request_body.is_some() {
            statuses.extend_from_slice(BODY_ERRORS);
        }
        for status in statuses {
            let (code, answer) = reference(status);
            operation.responses.responses.entry(code).or_insert(answer);
        }
    }
}

impl Modify for ErrorAnswers {
    fn modify(&self, openapi: &mut OpenApi) {
        let global_security = openapi
            .security
            .as_ref()
            .is_some_and(|requirements| !requirements.is_empty());
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                ErrorAnswers::add_to(operation, global_security);
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        for status in STATUSES {
            components
                .responses
                .insert(status.name.to_string(), RefOr::T(response(status)));
        }
    }
}

/// utoipa's header object has no `required`; `Retry-After` is always sent with a 429 or 503.
pub fn require_retry_after(document: &mut serde_json::Value) {
    for status in [429, 503] {
        let name = error_status(status).name;
        let header = &mut document["components"]["responses"][name]["headers"]["Retry-After"];
        if header.is_object() {
            header["required"] = serde_json::Value::Bool(true);
        }
    }
}
