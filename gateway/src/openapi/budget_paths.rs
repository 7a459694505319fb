//! The budget operations (issue 24): create, list with each budget's current period, delete.

use serde_json::{Map, Value, json};

use super::paths::{Operation, memory_path};
use super::schemas::{array, integer, iso, nullable, object, record, string_enum};
use super::{COMMON_ERRORS, error_response};

fn budget() -> Value {
    record(json!({
        "id": {"type": "string", "format": "uuid"},
        "scope": string_enum(&["tenant", "project", "member"]),
        "subject": nullable(json!({"type": "string"})),
        "period": string_enum(&["month", "day"]),
        "limitUsd": {"type": "number"},
        "thresholds": array(integer(1, 1000), Some(10)),
        "timezone": {"type": "string"},
        "createdAt": nullable(iso()),
        "current": nullable(record(json!({
            "startDay": {"type": "string", "format": "date"},
            "start": iso(), "end": iso(),
            "spentUsd": {"type": "number"},
            "forecastUsd": {"type": "number",
                "description": "The spend at the period's end at the pace so far (an estimate)."},
            "crossed": array(integer(1, 1000), Some(10)),
        }))),
    }))
}

pub(super) fn budget_paths(paths: &mut Map<String, Value>) {
    let create = Operation {
        summary: "Create a budget: a USD limit per calendar month or day (cut in `timezone`, \
            UTC by default) for the tenant, a project or a member, with thresholds in percent \
            (default 50, 80, 100); each crossing of a period raises `usage.budget.crossed` once",
        parameters: vec![],
        body: Some((
            object(
                json!({
                    "scope": string_enum(&["tenant", "project", "member"]),
                    "subject": {"type": "string", "maxLength": 256,
                        "description": "The project slug or member name; absent for tenant."},
                    "period": string_enum(&["month", "day"]),
                    "limitUsd": {"type": "number", "minimum": 0.01, "maximum": 1_000_000_000},
                    "thresholds": array(integer(1, 1000), Some(10)),
                    "timezone": {"type": "string", "maxLength": 64},
                }),
                &["scope", "period", "limitUsd"],
            ),
            json!({"scope": "tenant", "period": "month", "limitUsd": 500.0}),
            true,
        )),
        success: (201, budget()),
        errors: &[409],
    };
    let list = Operation {
        summary: "The tenant's budgets, each with its current period's spend, forecast and \
            crossed thresholds",
        parameters: vec![],
        body: None,
        success: (200, record(json!({"budgets": array(budget(), Some(100))}))),
        errors: &[],
    };
    paths.insert(
        "/api/v1/budgets".into(),
        json!({"post": create.into_value(), "get": list.into_value()}),
    );
    let policy = || {
        object(
            json!({
                "windowMinutes": integer(1, 1440),
                "spendUsd": {"type": "number", "minimum": 0.01, "maximum": 1_000_000},
                "unattendedMinutes": integer(1, 10080),
            }),
            &["windowMinutes", "spendUsd", "unattendedMinutes"],
        )
    };
    let read = Operation {
        summary: "The tenant's runaway limits: spend over a sliding window, and how long a \
            main agent may work with no user prompt (defaults: $10 in 15 minutes, 60 minutes)",
        parameters: vec![],
        body: None,
        success: (200, policy()),
        errors: &[],
    };
    let replace = Operation {
        summary: "Replace the tenant's runaway limits; later uploads are judged by them",
        parameters: vec![],
        body: Some((
            policy(),
            json!({"windowMinutes": 15, "spendUsd": 10.0, "unattendedMinutes": 60}),
            true,
        )),
        success: (200, policy()),
        errors: &[],
    };
    paths.insert(
        "/api/v1/runaway-policy".into(),
        json!({"get": read.into_value(), "put": replace.into_value()}),
    );
    let mut responses = Map::new();
    responses.insert("204".into(), json!({"description": "deleted"}));
    for status in [404].iter().chain(COMMON_ERRORS) {
        responses.insert(status.to_string(), error_response(*status));
    }
    paths.insert(
        "/api/v1/budgets/{id}".into(),
        json!({"delete": {"summary": "Remove a budget and its record of crossings",
            "parameters": [memory_path()], "responses": responses}}),
    );
}
