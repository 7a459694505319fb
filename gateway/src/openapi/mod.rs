//! The OpenAPI document of the hook-facing API, served at `GET /api/v1/openapi.json`.
//!
//! Generated from the handlers and the types they read and write: each handler carries its
//! `#[utoipa::path]` (method, path, parameters, body with a working example, answer, its own
//! error statuses), each body and answer derives `ToSchema` with the rules the server enforces
//! beside its fields ([`crate::api_schema`] holds the kinds they share). [`ApiDoc`] lists the
//! operations; [`ErrorAnswers`] adds the statuses that follow from an operation's shape, and
//! [`render`] writes the result as OpenAPI 3.0.3. The end-to-end test `openapi_contract`
//! checks the document against the handlers, and Schemathesis (`make test`) fuzzes the running
//! stack from it.

mod render;

use std::sync::LazyLock;

use axum::Json;
use serde_json::Value;
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api_schema::errors::{self, ErrorAnswers};
use crate::api_schema::selector::SelectorKinds;
use crate::response::ErrorBody;
use crate::routes::{
    briefing, budgets, closer, events, liveness, memories, memory_reads, runaway, sessions, triage,
    usage, usage_upload, webhooks,
};

/// The document: every operation of `/api/v1` but the test-clock one.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Baton",
        description = "Hook-facing session lifecycle API (CONTRACT.md). Bodies and queries are \
            strict: unknown, misspelled or repeated keys (of a body or any query) are 400 \
            `invalid_input`; an optional key is absent or holds a value, never `null`. Lengths \
            count UTF-16 units (`x-maxLengthUtf16`). Text never holds U+0000 or another \
            control character (prose may hold tab and newline); identifiers hold no bidi \
            formatting or line separator."
    ),
    servers((url = "/")),
    tags(
        (name = "sessions", description = "A session's lifecycle, liveness, events and closer"),
        (name = "triage", description = "The Stop handshake and the debrief prompt"),
        (name = "memories", description = "Memories, their transitions and their history"),
        (name = "briefing", description = "The live state a session starts from"),
        (name = "usage", description = "Hosts' uploads, and tokens, cost and agent trees"),
        (name = "budgets", description = "Spend budgets and runaway limits"),
        (name = "webhooks", description = "Where alerts are delivered, and the delivery log"),
        (name = "document", description = "This document"),
    ),
    security(("api_key" = [])),
    paths(
        sessions::open,
        sessions::heartbeat,
        sessions::close,
        liveness::pulse,
        sessions::row,
        liveness::read,
        events::list,
        closer::passes,
        triage::begin,
        triage::complete,
        triage::attempts,
        triage::debrief,
        memories::remember,
        memories::revise,
        memories::resolve,
        memories::archive,
        memory_reads::read,
        memory_reads::history,
        briefing::briefing,
        usage_upload::upload,
        usage::query,
        usage::sessions,
        usage::tree,
        budgets::create,
        budgets::list,
        budgets::delete,
        runaway::get,
        runaway::put,
        webhooks::create,
        webhooks::list,
        webhooks::deliveries,
        webhooks::delete,
        document,
    ),
    components(schemas(ErrorBody<'static>)),
    modifiers(&ApiKeyScheme, &ErrorAnswers, &SelectorKinds),
)]
pub struct ApiDoc;

/// The one way to authenticate: an API key in `X-API-Key`.
struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut Document) {
        let key = ApiKeyValue::with_description("X-API-Key", "`btn_<prefix>_<secret>`");
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme("api_key", SecurityScheme::ApiKey(ApiKey::Header(key)));
    }
}

/// The whole document, as served.
pub fn document_value() -> Value {
    let mut document = serde_json::to_value(ApiDoc::openapi())
        .unwrap_or_else(|error| panic!("the derived document serializes: {error}"));
    errors::require_retry_after(&mut document);
    render::render(&mut document);
    document
}

/// Built once: the document is a function of the code.
static DOCUMENT: LazyLock<Value> = LazyLock::new(document_value);

/// This document
///
/// Public: it documents the API, it serves no data.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "document",
    operation_id = "getOpenApiDocument",
    security(),
    responses(
        (status = 200, description = "the document", body = Object),
        errors::ServiceUnavailable,
    ),
)]
pub async fn document() -> Json<Value> {
    Json(DOCUMENT.clone())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api_schema::errors::{BODY_ERRORS, COMMON_ERRORS};

    /// Every `$ref` of `value` names something the document holds.
    fn dangling_references(document: &Value, value: &Value) -> Vec<String> {
        match value {
            Value::Object(map) => map
                .iter()
                .flat_map(|(key, inner)| match (key.as_str(), inner.as_str()) {
                    ("$ref", Some(reference)) => {
                        let pointer = reference.trim_start_matches('#');
                        if document.pointer(pointer).is_some() {
                            Vec::new()
                        } else {
                            vec![reference.to_string()]
                        }
                    }
                    _ => dangling_references(document, inner),
                })
                .collect(),
            Value::Array(items) => items
                .iter()
                .flat_map(|item| dangling_references(document, item))
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn every_operation_states_its_statuses_and_every_reference_resolves() {
        let document = document_value();
        assert_eq!(document["openapi"], "3.0.3");
        assert_eq!(
            dangling_references(&document, &document),
            Vec::<String>::new()
        );
        let paths = document["paths"].as_object().expect("paths");
        assert_eq!(
            paths.len(),
            30,
            "every route but the test-clock one, and the document"
        );
        let mut operation_ids = Vec::new();
        for (path, item) in paths {
            for (method, operation) in item.as_object().expect("item") {
                operation_ids.push(operation["operationId"].as_str().expect("id").to_string());
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
                    for status in BODY_ERRORS {
                        assert!(
                            responses.contains_key(&status.to_string()),
                            "{method} {path} omits {status}"
                        );
                    }
                }
            }
        }
        let count = operation_ids.len();
        operation_ids.sort();
        operation_ids.dedup();
        assert_eq!(operation_ids.len(), count, "operation ids are unique");
    }

    #[test]
    fn the_served_document_is_openapi_3_0() {
        let text = document_value().to_string();
        for three_one in [r#""type":["#, r#"{"type":"null"}"#, r#""identifier":"#] {
            assert!(!text.contains(three_one), "3.1 form left: {three_one}");
        }
    }

    #[test]
    fn bounds_come_from_the_checks() {
        let document = document_value();
        let events = &document["paths"]["/api/v1/agent-sessions/{sessionRunId}/events"];
        let limit = events["get"]["parameters"]
            .as_array()
            .and_then(|parameters| parameters.iter().find(|p| p["name"] == "limit"))
            .expect("limit");
        assert_eq!(limit["schema"]["minimum"], 1);
        assert_eq!(limit["schema"]["maximum"], 100);
        let detail = &document["components"]["schemas"]["Error"]["properties"]["detail"];
        assert_eq!(
            detail["maxLength"],
            baton_kit::shape_error::MAX_DETAIL_CHARS
        );
    }
}
