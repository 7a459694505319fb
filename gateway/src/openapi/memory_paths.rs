//! The memory and briefing operations (CONTRACT sections 10 and 11).

use serde_json::{Map, Value, json};

use super::paths::{Operation, memory_path, query};
use super::schemas::{
    ACTOR_KINDS, EVENT_KINDS, MEMORY_TYPES, array, boolean, identifier, integer, iso, nullable,
    object, prose_trimmed, record, reference, scope, string_enum, uuid,
};

const COMMITMENT_STATUSES: &[&str] = &["open", "waiting", "resolved", "expired"];
const SECTIONS: &[&str] = &[
    "commitments",
    "overdue",
    "blockers",
    "staleCandidates",
    "recentDecisions",
    "preferences",
];

/// The fields remember and revise share.
fn memory_fields() -> Map<String, Value> {
    let fields = json!({
        "memoryType": string_enum(MEMORY_TYPES),
        "topic": identifier(256),
        "content": prose_trimmed(2000),
        "scope": scope(),
        "project": identifier(256),
        "tags": array(identifier(64), Some(32)),
        "dueAt": {"type": "string", "format": "date-time",
            "description": "Commitments only (RFC 3339)."},
        "sessionRunId": uuid(),
    });
    fields.as_object().cloned().unwrap_or_default()
}

fn memory_answer() -> Value {
    record(json!({"memory": reference("MemoryRef"), "embedded": string_enum(&["off"])}))
}

fn write_paths(paths: &mut Map<String, Value>) {
    let remember = Operation {
        summary: "Write a memory; `sessionRunId` names the run that wrote it (table E)",
        parameters: vec![],
        body: Some((
            object(
                Value::Object(memory_fields()),
                &["memoryType", "topic", "content"],
            ),
            json!({"memoryType": "commitment", "topic": "release",
                "content": "Ship 1.2 with the new importer", "project": "baton"}),
            true,
        )),
        success: (
            201,
            object(
                json!({"memory": reference("MemoryRef"), "embedded": string_enum(&["off"]),
                    "commitmentId": uuid()}),
                &["memory", "embedded"],
            ),
        ),
        errors: &[409],
    };
    paths.insert(
        "/api/v1/memories".into(),
        json!({"post": remember.into_value()}),
    );
    let mut revise_fields = memory_fields();
    revise_fields.insert("edgeIntent".into(), string_enum(&["supersedes", "updates"]));
    revise_fields.insert(
        "predecessorId".into(),
        json!({"type": "string", "description": "Accepted and ignored: the path's id wins."}),
    );
    let revise = Operation {
        summary: "Revise a memory: a successor supersedes it",
        parameters: vec![memory_path()],
        body: Some((
            object(
                Value::Object(revise_fields),
                &["memoryType", "topic", "content"],
            ),
            json!({"memoryType": "commitment", "topic": "release",
                "content": "Ship 1.3 with the new importer", "project": "baton"}),
            true,
        )),
        success: (200, memory_answer()),
        errors: &[404, 409],
    };
    paths.insert(
        "/api/v1/memories/{id}/revise".into(),
        json!({"post": revise.into_value()}),
    );
    let resolve = Operation {
        summary: "Move a commitment to a status (`open` unresolves); a blocker is archived",
        parameters: vec![memory_path()],
        body: Some((
            object(
                json!({"status": string_enum(COMMITMENT_STATUSES), "sessionRunId": uuid(),
                    "memoryId": {"type": "string",
                        "description": "Accepted and ignored: the path's id wins."}}),
                &["status"],
            ),
            json!({"status": "resolved"}),
            true,
        )),
        success: (
            200,
            record(json!({"commitmentId": uuid(),
                "status": string_enum(&["open", "waiting", "resolved", "expired", "archived"])})),
        ),
        errors: &[404, 409],
    };
    paths.insert(
        "/api/v1/memories/{id}/resolve".into(),
        json!({"post": resolve.into_value()}),
    );
    let archive = Operation {
        summary: "Archive a memory; the body is optional",
        parameters: vec![memory_path()],
        body: Some((
            object(json!({"sessionRunId": uuid()}), &[]),
            json!({}),
            false,
        )),
        success: (
            200,
            record(json!({"id": uuid(), "status": string_enum(&["archived"])})),
        ),
        errors: &[404, 409],
    };
    paths.insert(
        "/api/v1/memories/{id}/archive".into(),
        json!({"post": archive.into_value()}),
    );
}

fn read_paths(paths: &mut Map<String, Value>) {
    let commitment = nullable(record(json!({"id": uuid(),
        "status": string_enum(COMMITMENT_STATUSES), "dueAt": nullable(iso())})));
    let read = Operation {
        summary: "Read one memory",
        parameters: vec![memory_path()],
        body: None,
        success: (
            200,
            record(
                json!({"id": uuid(), "memoryType": string_enum(MEMORY_TYPES),
                "topic": {"type": "string"}, "content": {"type": "string"},
                "scope": {"type": "string"}, "project": nullable(json!({"type": "string"})),
                "tags": array(json!({"type": "string"}), Some(32)),
                "status": string_enum(&["open", "archived", "superseded"]),
                "commitment": commitment, "predecessorId": nullable(uuid()),
                "supersededBy": nullable(uuid()), "createdAt": iso(), "updatedAt": iso()}),
            ),
        ),
        errors: &[400, 404],
    };
    paths.insert(
        "/api/v1/memories/{id}".into(),
        json!({"get": read.into_value()}),
    );
    let payload = record(json!({"present": boolean(),
        "jsonType": nullable(string_enum(&["object", "array", "string", "number", "boolean",
            "null"])),
        "byteLength": integer(0, i64::MAX)}));
    let history = Operation {
        summary: "A memory's events: metadata, and each payload's presence, type and size",
        parameters: vec![memory_path()],
        body: None,
        success: (
            200,
            record(
                json!({"memoryId": uuid(), "events": array(record(json!({"id": uuid(),
                "eventKind": string_enum(EVENT_KINDS), "actorKind": string_enum(ACTOR_KINDS),
                "createdAt": iso(), "payload": payload})), None)}),
            ),
        ),
        errors: &[400, 404],
    };
    paths.insert(
        "/api/v1/memories/{id}/history".into(),
        json!({"get": history.into_value()}),
    );
    let sections = json!({"type": "array", "uniqueItems": true, "items": string_enum(SECTIONS)});
    let mut section_param = query("sections", sections, false);
    section_param["style"] = json!("form");
    section_param["explode"] = json!(true);
    section_param["description"] = json!("Repeated or comma-separated.");
    let mut answer = Map::new();
    answer.insert("selector".into(), reference("SelectorAnswer"));
    answer.insert("mode".into(), string_enum(&["brief", "full"]));
    answer.insert("generatedAt".into(), iso());
    for name in ["commitments", "overdue"] {
        answer.insert(name.into(), reference("CommitmentSection"));
    }
    for name in [
        "blockers",
        "staleCandidates",
        "recentDecisions",
        "preferences",
    ] {
        answer.insert(name.into(), reference("MemorySection"));
    }
    let briefing = Operation {
        summary: "The live briefing through a selector; sections not asked for are absent",
        parameters: vec![
            query(
                "kind",
                string_enum(&["all", "scope", "project", "scope_project"]),
                true,
            ),
            query("scope", scope(), false),
            query("project", identifier(256), false),
            query("includeUnscoped", boolean(), false),
            query("mode", string_enum(&["brief", "full"]), false),
            section_param,
            query("sectionLimit", integer(1, 100), false),
        ],
        body: None,
        success: (
            200,
            object(Value::Object(answer), &["selector", "mode", "generatedAt"]),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/briefing".into(),
        json!({"get": briefing.into_value()}),
    );
}

/// Memory and briefing paths.
pub fn memory_paths(paths: &mut Map<String, Value>) {
    write_paths(paths);
    read_paths(paths);
}
