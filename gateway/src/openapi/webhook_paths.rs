//! The webhook operations (issue 24): register (the secret answered once), list, delete, and
//! the delivery log.

use serde_json::{Map, Value, json};

use super::paths::{Operation, memory_path, query};
use super::schemas::{array, integer, iso, nullable, object, record, string_enum};
use super::{COMMON_ERRORS, error_response};

const EVENTS: &[&str] = &["budget.crossed", "runaway.flagged"];

fn webhook() -> Value {
    record(json!({
        "id": {"type": "string", "format": "uuid"},
        "url": {"type": "string"},
        "events": array(string_enum(EVENTS), Some(2)),
        "format": string_enum(&["baton", "slack"]),
        "createdAt": nullable(iso()),
    }))
}

fn delivery() -> Value {
    record(json!({
        "id": {"type": "string", "format": "uuid"},
        "webhookId": {"type": "string", "format": "uuid"},
        "eventId": {"type": "string", "format": "uuid"},
        "event": string_enum(EVENTS),
        "state": string_enum(&["pending", "delivered", "failed", "cancelled"]),
        "createdAt": iso(),
        "nextAttemptAt": nullable(iso()),
        "attempts": array(record(json!({
            "number": integer(1, 1000),
            "at": iso(),
            "durationMs": integer(0, 4_294_967_295),
            "statusCode": nullable(integer(100, 599)),
            "error": nullable(string_enum(&["http_status", "timeout", "dns", "connect",
                "address_refused", "invalid_url", "request"])),
        })), None),
    }))
}

pub(super) fn webhook_paths(paths: &mut Map<String, Value>) {
    let create = Operation {
        summary: "Register a webhook for alerts (`budget.crossed`, `runaway.flagged`): each \
            delivery is signed (`X-Baton-Signature: v1=<hex HMAC-SHA256(secret, \
            \"{X-Baton-Timestamp}.{body}\")>`) and retried with backoff until a 2xx; the \
            secret is answered once. A hosted deployment takes only `https` URLs that resolve \
            to public addresses",
        parameters: vec![],
        body: Some((
            object(
                json!({
                    "url": {"type": "string", "maxLength": 2048},
                    "events": array(string_enum(EVENTS), Some(2)),
                    "format": string_enum(&["baton", "slack"]),
                }),
                &["url", "events"],
            ),
            json!({"url": "https://hooks.example.com/baton", "events": ["budget.crossed"]}),
            true,
        )),
        success: (
            201,
            record(json!({"webhook": webhook(), "secret": {"type": "string"}})),
        ),
        errors: &[409],
    };
    let list = Operation {
        summary: "The tenant's webhooks, oldest first (never a secret)",
        parameters: vec![],
        body: None,
        success: (200, record(json!({"webhooks": array(webhook(), None)}))),
        errors: &[],
    };
    paths.insert(
        "/api/v1/webhooks".into(),
        json!({"post": create.into_value(), "get": list.into_value()}),
    );
    let log = Operation {
        summary: "The delivery log, newest first: each delivery's state and every attempt \
            with its status code or failure class",
        parameters: vec![
            query(
                "webhookId",
                json!({"type": "string", "format": "uuid"}),
                false,
            ),
            query("limit", integer(1, 200), false),
        ],
        body: None,
        success: (
            200,
            record(json!({"deliveries": array(delivery(), Some(200))})),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/webhooks/deliveries".into(),
        json!({"get": log.into_value()}),
    );
    let mut responses = Map::new();
    responses.insert("204".into(), json!({"description": "deleted"}));
    for status in [404].iter().chain(COMMON_ERRORS) {
        responses.insert(status.to_string(), error_response(*status));
    }
    paths.insert(
        "/api/v1/webhooks/{id}".into(),
        json!({"delete": {"summary": "Remove a webhook: nothing more is delivered to it; its \
            log stays", "parameters": [memory_path()], "responses": responses}}),
    );
}
