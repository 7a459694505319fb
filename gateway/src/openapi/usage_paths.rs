//! The usage context's operations: the upload, the usage query, the session listing and a
//! run's agent tree.

use serde_json::{Map, Value, json};

use super::paths::{EXAMPLE_RUN, Operation, query};
use super::schemas::{
    agent, array, boolean, identifier, instant, integer, iso, nullable, object, record, reference,
    string_enum, uuid,
};

/// `[A-Za-z0-9._:-]`, 1..`max`.
fn id(max: u32) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max,
        "pattern": format!("^[A-Za-z0-9._:-]{{1,{max}}}$")})
}

fn count() -> Value {
    integer(0, 1_000_000_000_000)
}

/// Server-tool calls of one request (the service's bound).
fn calls() -> Value {
    integer(0, 1_000_000)
}

fn u32_count() -> Value {
    integer(0, i64::from(u32::MAX))
}

fn number() -> Value {
    json!({"type": "number", "minimum": 0})
}

const JOIN_PATHS: &[&str] = &[
    "tool_result",
    "agent_progress",
    "meta_file",
    "task_notification",
    "queue_operation",
    "codex_source",
    "codex_review_echo",
    "compaction",
    "directory",
    "legacy_sibling",
    "inline_sidechain",
];
const KINDS: &[&str] = &["main", "subagent", "compaction"];
const STATUSES: &[&str] = &["working", "waiting", "completed", "error", "unknown"];

fn upload_schema() -> Value {
    let session = object(
        json!({"agent": agent(), "sessionId": identifier(256), "projectSlug": identifier(256),
            "clientVersions": array(identifier(64), Some(32)), "outputUnderReported": boolean(),
            "firstActivityAt": instant(), "lastActivityAt": instant()}),
        &["agent", "sessionId", "projectSlug"],
    );
    let agent_fact = object(
        json!({"agent": agent(), "sessionId": identifier(256), "agentId": id(128),
            "kind": string_enum(KINDS), "parentAgentId": id(128),
            "subagentType": identifier(128), "spawnTool": identifier(64),
            "model": identifier(128), "firstActivityAt": instant(), "lastActivityAt": instant(),
            "ended": string_enum(&["completed", "error"]), "endedAt": instant()}),
        &["agent", "sessionId", "kind"],
    );
    let edge = object(
        json!({"agent": agent(), "sessionId": identifier(256), "parentAgentId": id(128),
            "childAgentId": id(128), "joinPath": string_enum(JOIN_PATHS)}),
        &["agent", "sessionId", "childAgentId", "joinPath"],
    );
    let usage = object(
        json!({"agent": agent(), "sessionId": identifier(256), "agentId": id(128),
            "dedupKey": identifier(256), "model": identifier(128), "at": instant(),
            "input": count(), "output": count(), "cacheRead": count(),
            "cacheWrite5m": count(), "cacheWrite1h": count(),
            "serviceTier": {"type": "string", "maxLength": 64},
            "speed": {"type": "string", "maxLength": 64},
            "inferenceGeo": {"type": "string", "maxLength": 64}, "sidechain": boolean(),
            "reasoning": described(count(), "Reasoning tokens, already inside `output`."),
            "webSearchRequests": described(calls(), "Server-side web searches, billed per call."),
            "webFetchRequests": described(calls(), "Server-side web fetches, billed per call.")}),
        &["agent", "sessionId", "dedupKey", "at"],
    );
    let delivery = object(
        json!({"deliveryId": uuid(), "agent": agent(), "sessionId": identifier(256),
            "event": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "maxLength": 64},
            "observedAt": instant()}),
        &["deliveryId", "agent", "sessionId", "event", "observedAt"],
    );
    object(
        json!({"hostId": id(128), "hostname": identifier(255), "clientVersion": identifier(64),
            "sessions": array(session, Some(500)), "agents": array(agent_fact, Some(5000)),
            "edges": array(edge, Some(5000)), "usage": array(usage, Some(10000)),
            "deliveries": array(delivery, Some(2000))}),
        &["hostId"],
    )
}

fn upload_example() -> Value {
    json!({
        "hostId": "host-example", "clientVersion": "0.1.0",
        "sessions": [{"agent": "claude-code", "sessionId": "openapi-usage",
            "projectSlug": "-home-me-repo", "clientVersions": ["2.1.100"],
            "firstActivityAt": "2026-01-05T10:00:00Z", "lastActivityAt": "2026-01-05T10:20:00Z"}],
        "agents": [{"agent": "claude-code", "sessionId": "openapi-usage", "agentId": "a1",
            "kind": "subagent", "subagentType": "Explore", "spawnTool": "Task",
            "model": "claude-haiku-4-5", "lastActivityAt": "2026-01-05T10:10:00Z"}],
        "edges": [{"agent": "claude-code", "sessionId": "openapi-usage", "childAgentId": "a1",
            "joinPath": "tool_result"}],
        "usage": [{"agent": "claude-code", "sessionId": "openapi-usage",
            "dedupKey": "msg_1:req_1", "model": "claude-opus-4-5",
            "at": "2026-01-05T10:01:00Z", "input": 1000, "output": 50, "cacheRead": 200,
            "reasoning": 20, "webSearchRequests": 2}],
        "deliveries": [{"deliveryId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7b",
            "agent": "claude-code", "sessionId": "openapi-usage", "event": "UserPromptSubmit",
            "observedAt": "2026-01-05T10:00:00Z"}]
    })
}

fn figures() -> Value {
    record(json!({
        "tokens": record(json!({"input": count(), "output": count(), "cacheRead": count(),
            "cacheWrite5m": count(), "cacheWrite1h": count(),
            "total": described(count(), "The five kinds summed (reasoning is inside output)."),
            "reasoning": described(count(), "The part of output that was reasoning.")})),
        "costUsd": described(number(), "Tokens and server-tool calls, priced."),
        "unpricedTokens": count(),
        "unpriced": array(record(json!({"model": {"type": "string"}, "tokens": count()})), None),
        "requests": count(),
        "serverTools": record(json!({"webSearchRequests": count(),
            "webFetchRequests": count(),
            "costUsd": described(number(), "What the priced calls cost (inside costUsd)."),
            "unpricedCalls": described(count(),
                "Calls without a price row for their provider and date (never $0).")})),
    }))
}

fn session_summary() -> Value {
    record(
        json!({"agent": {"type": "string"}, "sessionId": {"type": "string"},
        "projectSlug": {"type": "string"}, "hostIds": array(json!({"type": "string"}), None),
        "members": array(json!({"type": "string"}), None),
        "runaway": array(string_enum(&["spend", "unattended"]), Some(2)),
        "clientVersions": array(json!({"type": "string"}), None),
        "outputUnderReported": boolean(), "firstActivityAt": nullable(iso()),
        "lastActivityAt": nullable(iso()), "agentCount": u32_count(),
        "figures": reference("UsageFigures")}),
    )
}

/// The usage schemas the operations reference.
pub fn components(schemas: &mut Map<String, Value>) {
    schemas.insert("UsageFigures".into(), figures());
    schemas.insert("UsageSession".into(), session_summary());
}

fn range_parameters() -> Vec<Value> {
    vec![
        query("from", instant(), false),
        query("to", instant(), false),
    ]
}

pub fn usage_paths(paths: &mut Map<String, Value>) {
    let upload = Operation {
        summary: "Upload one host's session, agent, edge, usage and delivery facts \
            (identifiers and counts only; idempotent; `Content-Encoding: gzip|zstd` accepted, \
            415 for any other; the 8 MiB limit applies after decoding)",
        parameters: vec![],
        body: Some((upload_schema(), upload_example(), true)),
        success: (
            200,
            record(json!({"sessions": u32_count(), "agents": u32_count(),
                "edgesInserted": u32_count(), "usageInserted": u32_count(),
                "usageReplaced": u32_count(), "usageUnchanged": u32_count(),
                "deliveriesInserted": u32_count(), "deliveriesDuplicate": u32_count()})),
        ),
        errors: &[404, 415],
    };
    paths.insert(
        "/api/v1/usage/batches".into(),
        json!({"post": upload.into_value()}),
    );
    let mut parameters = range_parameters();
    parameters.push(query(
        "groupBy",
        string_enum(&[
            "day",
            "week",
            "month",
            "model",
            "project",
            "host",
            "session",
            "agentType",
            "member",
        ]),
        false,
    ));
    parameters.push(query(
        "timezone",
        json!({"type": "string", "maxLength": 64, "description": "An IANA zone; UTC by default."}),
        false,
    ));
    let usage = Operation {
        summary: "Tokens by kind, cost and unpriced tokens by model in [from, to) \
            (default: the last 30 days, at most 400), grouped (default `day`, cut in `timezone`)",
        parameters,
        body: None,
        success: (
            200,
            record(
                json!({"groupBy": {"type": "string"}, "timezone": {"type": "string"},
                "from": iso(), "to": iso(),
                "groups": array(record(json!({"key": {"type": "string"},
                    "figures": reference("UsageFigures")})), None),
                "total": reference("UsageFigures")}),
            ),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/usage".into(),
        json!({"get": with_csv(usage.into_value(), None)}),
    );
    let mut parameters = range_parameters();
    parameters.extend([
        query("project", identifier(256), false),
        query("agent", agent(), false),
        query("hostId", id(128), false),
        query(
            "member",
            json!({"type": "string", "maxLength": 64,
                "description": "A member's sessions; `unattributed`: those no member uploaded."}),
            false,
        ),
        query(
            "runaway",
            json!({"type": "string", "enum": ["true", "false"],
                "description": "true: only sessions flagged as running away now."}),
            false,
        ),
        query("limit", integer(1, 200), false),
        query(
            "cursor",
            json!({"type": "string", "maxLength": 2048}),
            false,
        ),
    ]);
    let sessions = Operation {
        summary: "Sessions whose last activity is in [from, to), newest first, with their \
            figures; keyset-paged by the opaque `nextCursor` (a malformed cursor is 400)",
        parameters,
        body: None,
        success: (
            200,
            object(
                json!({"sessions": array(reference("UsageSession"), Some(200)),
                    "nextCursor": {"type": "string"}}),
                &["sessions"],
            ),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/usage/sessions".into(),
        json!({"get": with_csv(
            sessions.into_value(),
            Some("The next page when `Accept: text/csv` (RFC 8288), `<…>; rel=\"next\"`"),
        )}),
    );
    let own_or_rolled = reference("UsageFigures");
    let tree_agent = object(
        json!({"agentId": {"type": "string"}, "kind": string_enum(KINDS),
            "parentAgentId": {"type": "string"}, "subagentType": {"type": "string"},
            "spawnTool": {"type": "string"}, "model": {"type": "string"},
            "status": string_enum(STATUSES), "firstActivityAt": nullable(iso()),
            "lastActivityAt": nullable(iso()), "own": own_or_rolled.clone(),
            "rolledUp": own_or_rolled}),
        &[
            "kind",
            "status",
            "firstActivityAt",
            "lastActivityAt",
            "own",
            "rolledUp",
        ],
    );
    let tree = Operation {
        summary: "A run's agent tree: agents with status, own and rolled-up figures, edges with \
            the join path that proved them, and delegation savings (always an estimate)",
        parameters: vec![
            json!({"name": "sessionRunId", "in": "path", "required": true,
            "schema": uuid(), "example": EXAMPLE_RUN,
            "description": "Malformed ids are 400; unknown and other tenants' runs are 404. \
                A run with nothing uploaded answers its empty tree."}),
        ],
        body: None,
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "session": reference("UsageSession"),
                "agents": array(tree_agent, None),
                "edges": array(object(json!({"parentAgentId": {"type": "string"},
                    "childAgentId": {"type": "string"}, "joinPath": string_enum(JOIN_PATHS)}),
                    &["childAgentId", "joinPath"]), None),
                "delegationSavings": object(json!({"actualUsd": number(),
                    "counterfactualUsd": number(), "savingsUsd": {"type": "number"},
                    "isEstimate": string_enum_bool(),
                    "skippedAgentIds": array(json!({"type": "string"}), None),
                    "counterfactualModel": {"type": "string"}}),
                    &["actualUsd", "counterfactualUsd", "savingsUsd", "isEstimate",
                      "skippedAgentIds"])}),
            ),
        ),
        errors: &[400, 404],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}/tree".into(),
        json!({"get": tree.into_value()}),
    );
}

fn described(mut schema: Value, description: &str) -> Value {
    schema["description"] = json!(description);
    schema
}

/// `true`, always: savings are a counterfactual.
fn string_enum_bool() -> Value {
    json!({"type": "boolean", "enum": [true]})
}

/// The operation also answers `text/csv` (one header row, then one row per group or session)
/// to a caller that prefers it; `link` documents the `Link` header of a paged CSV answer.
fn with_csv(mut operation: Value, link: Option<&str>) -> Value {
    let success = &mut operation["responses"]["200"];
    success["content"]["text/csv"] = json!({"schema": {"type": "string"}});
    if let Some(description) = link {
        success["headers"] = json!({"Link": {"description": description,
            "schema": {"type": "string"}}});
    }
    operation
}
