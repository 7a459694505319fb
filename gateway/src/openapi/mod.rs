//! The OpenAPI 3.0 document of the hook-facing API, served at `GET /api/v1/openapi.json`.
//!
//! Written out rather than derived, because it must state what the server enforces and a
//! derive cannot see it: every status an operation can answer, bounds, patterns, enums,
//! formats, which keys are required, optional (absent, never `null`) or nullable (answers
//! only), closed objects (`additionalProperties: false`, as the strict parser refuses unknown
//! keys) and the auth scheme. The end-to-end test `openapi_contract` checks it against the
//! handlers, and Schemathesis (`make test`) fuzzes the running stack from it.

mod budget_paths;
mod memory_paths;
mod paths;
pub mod schemas;
mod usage_paths;
mod webhook_paths;

use axum::Json;
use serde_json::{Value, json};

/// Statuses every `/api/v1` operation can answer besides its own: 401 before anything else,
/// 429 (rate limits, also the per-client connection cap), 503 (a dependency lost, load shed,
/// request timeout).
pub const COMMON_ERRORS: &[u16] = &[401, 429, 503];
/// Statuses of every operation that reads a body: 408 (body too slow), 413 (too large).
pub const BODY_ERRORS: &[u16] = &[408, 413];

fn error_description(status: u16) -> &'static str {
    match status {
        400 => {
            "`invalid_input` (a field, key, bound or character rule) or `invalid_request` (not JSON)"
        }
        401 => {
            "`unauthorized`: missing, malformed, unknown or revoked key (checked before the body)"
        }
        404 => "`not_found`",
        408 => "`request_timeout`: the body did not arrive in time; the connection is closed",
        409 => "`conflict`, `duplicate_memory`, `resource_limit_exceeded` or `invalid_transition`",
        413 => "`payload_too_large`; the connection is closed",
        415 => "`unsupported_media_type`: a `Content-Encoding` other than gzip or zstd",
        429 => {
            "`rate_limited`: per verified key, per client for failed verifications, or too many connections"
        }
        503 => {
            "`service_unavailable`: a database, broker or service is unreachable (retry), or load shed"
        }
        _ => "error",
    }
}

/// The response object of an error status.
pub fn error_response(status: u16) -> Value {
    let mut response = json!({
        "description": error_description(status),
        "content": {"application/json": {"schema": schemas::reference("Error")}},
    });
    if matches!(status, 429 | 503) {
        response["headers"] = json!({"Retry-After": {"required": true,
            "description": "Seconds to wait before retrying.",
            "schema": {"type": "integer", "minimum": 1}}});
    }
    response
}

/// The whole document.
pub fn document_value() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Baton",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Hook-facing session lifecycle API (CONTRACT.md). Bodies and queries \
                are strict: unknown, misspelled or repeated keys (of a body or any query) are 400 \
                `invalid_input`; an optional key is absent or holds a value, never `null`. Lengths count UTF-16 \
                units (`x-maxLengthUtf16`). Text never holds U+0000 or another control \
                character (prose may hold tab and newline); identifiers hold no bidi \
                formatting or line separator.",
        },
        "servers": [{"url": "/"}],
        "security": [{"api_key": []}],
        "paths": paths::paths(),
        "components": {
            "schemas": schemas::components(),
            "securitySchemes": {"api_key": {"type": "apiKey", "in": "header",
                "name": "X-API-Key", "description": "`btn_<prefix>_<secret>`"}},
        },
    })
}

/// `GET /api/v1/openapi.json` (public: it documents the API, it serves no data).
pub async fn document() -> Json<Value> {
    Json(document_value())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_states_its_statuses_and_every_schema_reference_resolves() {
        let document = document_value();
        let text = document.to_string();
        for name in text.split("#/components/schemas/").skip(1) {
            let name = name.split('"').next().unwrap_or_default();
            assert!(
                document["components"]["schemas"][name].is_object(),
                "dangling reference {name}"
            );
        }
        let paths = document["paths"].as_object().expect("paths");
        assert_eq!(
            paths.len(),
            30,
            "every route but the test-clock one, and the document"
        );
        for (path, item) in paths {
            for (method, operation) in item.as_object().expect("item") {
                let responses = operation["responses"].as_object().expect("responses");
                let public = operation["security"] == json!([]);
                let required: &[u16] = if public { &[503] } else { COMMON_ERRORS };
                for status in required {
                    assert!(
                        responses.contains_key(&status.to_string()),
                        "{method} {path} omits {status}"
                    );
                }
                if operation.get("requestBody").is_some() {
                    for status in [400, 408, 413] {
                        assert!(
                            responses.contains_key(&status.to_string()),
                            "{method} {path}"
                        );
                    }
                }
            }
        }
    }
}
