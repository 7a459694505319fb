//! The operations: parameters, bodies (with a working example each), answers and statuses.

use serde_json::{Map, Value, json};

use super::schemas::{
    ACTOR_KINDS, EVENT_KINDS, LIVENESS, TRIAGE_STATUSES, agent, array, boolean, identifier,
    instant, integer, iso, nullable, object, prose, record, reference, scope, string_enum, uuid,
};
use super::{BODY_ERRORS, COMMON_ERRORS, error_response};

pub(super) const EXAMPLE_RUN: &str = "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a";

pub(super) struct Operation {
    pub summary: &'static str,
    pub parameters: Vec<Value>,
    /// `(schema, example, required)`
    pub body: Option<(Value, Value, bool)>,
    pub success: (u16, Value),
    /// Statuses besides the common ones (and the body ones, added when there is a body).
    pub errors: &'static [u16],
}

impl Operation {
    pub fn into_value(self) -> Value {
        let mut responses = Map::new();
        responses.insert(
            self.success.0.to_string(),
            json!({"description": "success",
                "content": {"application/json": {"schema": self.success.1}}}),
        );
        let mut statuses: Vec<u16> = self.errors.to_vec();
        statuses.extend_from_slice(COMMON_ERRORS);
        if self.body.is_some() {
            statuses.push(400);
            statuses.extend_from_slice(BODY_ERRORS);
        }
        statuses.sort_unstable();
        statuses.dedup();
        for status in statuses {
            responses.insert(status.to_string(), error_response(status));
        }
        let mut operation = json!({"summary": self.summary, "responses": responses});
        if !self.parameters.is_empty() {
            operation["parameters"] = json!(self.parameters);
        }
        if let Some((schema, example, required)) = self.body {
            operation["requestBody"] = json!({"required": required, "content":
                {"application/json": {"schema": schema, "example": example}}});
        }
        operation
    }
}

fn path_parameter(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": uuid(),
        "description": description})
}

pub(super) fn query(name: &str, schema: Value, required: bool) -> Value {
    json!({"name": name, "in": "query", "required": required, "schema": schema})
}

pub(super) fn run_path() -> Value {
    path_parameter(
        "sessionRunId",
        "Lower-cased before use; malformed, unknown and other tenants' ids are 400.",
    )
}

pub(super) fn memory_path() -> Value {
    path_parameter("id", "Malformed, unknown and other tenants' ids are 404.")
}

fn natural_key() -> (Value, Value) {
    (agent(), identifier(256))
}

fn session_paths(paths: &mut Map<String, Value>) {
    let (agent_schema, session_schema) = natural_key();
    let open = Operation {
        summary: "Open or reactivate a session (CONTRACT table A)",
        parameters: vec![],
        body: Some((
            object(
                json!({"agent": agent_schema, "sessionId": session_schema,
                    "source": string_enum(&["startup", "resume"]), "project": identifier(256),
                    "scope": scope(), "selector": reference("Selector"),
                    "briefedMemories": array(reference("BriefedRow"), Some(100)),
                    "followsSessionId": identifier(256)}),
                &["agent", "sessionId", "source"],
            ),
            json!({"agent": "claude-code", "sessionId": "doc-1", "source": "startup",
                "project": "baton", "scope": "work"}),
            true,
        )),
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "activationEpoch": integer(1, i64::MAX),
                "source": string_enum(&["startup", "resume"]), "created": boolean(),
                "reopened": boolean(), "openedAt": iso(), "lastSeenAt": iso(),
                "briefingDeliveredAt": nullable(iso())}),
            ),
        ),
        errors: &[409],
    };
    paths.insert(
        "/api/v1/agent-sessions/open".into(),
        json!({"post": open.into_value()}),
    );
    let heartbeat = Operation {
        summary: "Refresh the lease; resurrects a closed or expired session (table B)",
        parameters: vec![],
        body: Some((
            object(
                json!({"agent": agent(), "sessionId": identifier(256),
                    "lastMessageExcerpt": prose(4000), "observedAt": instant()}),
                &["agent", "sessionId"],
            ),
            json!({"agent": "claude-code", "sessionId": "doc-1",
                "lastMessageExcerpt": "tests pass"}),
            true,
        )),
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "activationEpoch": integer(1, i64::MAX),
                "lastSeenAt": iso(), "resurrected": boolean()}),
            ),
        ),
        errors: &[404],
    };
    paths.insert(
        "/api/v1/agent-sessions/heartbeat".into(),
        json!({"post": heartbeat.into_value()}),
    );
    let close = Operation {
        summary: "Close by natural key; idempotent (table C)",
        parameters: vec![],
        body: Some((
            object(
                json!({"agent": agent(), "sessionId": identifier(256), "observedAt": instant()}),
                &["agent", "sessionId"],
            ),
            json!({"agent": "claude-code", "sessionId": "doc-1"}),
            true,
        )),
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "activationEpoch": integer(1, i64::MAX),
                "closedAt": iso(), "alreadyClosed": boolean()}),
            ),
        ),
        errors: &[404],
    };
    paths.insert(
        "/api/v1/agent-sessions/close".into(),
        json!({"post": close.into_value()}),
    );
    let token = |max: u32| {
        json!({"type": "string", "minLength": 1, "maxLength": max,
            "pattern": "^[A-Za-z0-9._:+-]+$", "description": "Trimmed."})
    };
    let pulse = Operation {
        summary: "Record a liveness sidecar's pulse; never refreshes the lease",
        parameters: vec![],
        body: Some((
            object(
                json!({"agent": agent(), "sessionId": identifier(256), "episodeId": uuid(),
                    "client": agent(), "clientVersion": token(64), "hostClient": agent(),
                    "hostId": token(128), "pid": integer(1, i64::from(i32::MAX)),
                    "observedAt": instant(),
                    "endReason": string_enum(&["process_exited", "session_closed", "stopped"]),
                    "hostLabel": identifier(255)}),
                &["agent", "sessionId", "episodeId", "client", "hostId", "pid"],
            ),
            json!({"agent": "claude-code", "sessionId": "doc-1", "episodeId": EXAMPLE_RUN,
                "client": "claude-code", "hostId": "host-1", "pid": 4242}),
            true,
        )),
        success: (
            200,
            record(json!({"sessionRunId": uuid(), "liveness": string_enum(LIVENESS)})),
        ),
        errors: &[404, 409],
    };
    paths.insert(
        "/api/v1/agent-sessions/pulse".into(),
        json!({"post": pulse.into_value()}),
    );
    let row = Operation {
        summary: "Read one session row; never refreshes the lease",
        parameters: vec![run_path()],
        body: None,
        success: (
            200,
            record(json!({"sessionRunId": uuid(), "agent": {"type": "string"},
                "sessionId": {"type": "string"}, "source": string_enum(&["startup", "resume"]),
                "project": nullable(json!({"type": "string"})),
                "scope": nullable(json!({"type": "string"})),
                "selector": reference("SelectorAnswer"),
                "activationEpoch": integer(1, i64::MAX),
                "triageStatus": string_enum(TRIAGE_STATUSES), "openedAt": iso(),
                "closedAt": nullable(iso()), "lastSeenAt": iso(),
                "briefingDeliveredAt": nullable(iso()),
                "briefedMemories": array(reference("BriefedRow"), Some(100))})),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}".into(),
        json!({"get": row.into_value()}),
    );
    let episode = record(json!({"episodeId": uuid(), "client": {"type": "string"},
        "clientVersion": nullable(json!({"type": "string"})),
        "hostClient": nullable(json!({"type": "string"})), "hostId": {"type": "string"},
        "pid": integer(0, i64::from(u32::MAX)), "startedAt": iso(), "lastPulseAt": iso(),
        "endedAt": nullable(iso()), "endReason": nullable(json!({"type": "string"})),
        "hostLabel": nullable(json!({"type": "string"}))}));
    let liveness = Operation {
        summary: "A session's liveness and process episodes; never refreshes the lease",
        parameters: vec![run_path()],
        body: None,
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "liveness": string_enum(LIVENESS),
                "outcome": nullable(string_enum(&["unknown"])), "lastSeenAt": iso(),
                "closedAt": nullable(iso()), "followsSessionRunId": nullable(uuid()),
                "episodes": array(episode, Some(50))}),
            ),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}/liveness".into(),
        json!({"get": liveness.into_value()}),
    );
    let events = Operation {
        summary: "A run's provenance events in id order, at most 500 (table I)",
        parameters: vec![
            run_path(),
            query("cursor", uuid(), false),
            query("limit", integer(1, 100), false),
        ],
        body: None,
        success: (
            200,
            object(
                json!({"items": array(record(json!({"id": uuid(), "memoryId": uuid(),
                    "eventKind": string_enum(EVENT_KINDS), "actorKind": string_enum(ACTOR_KINDS),
                    "sessionRunId": uuid(), "createdAt": iso()})), Some(100)),
                    "nextCursor": uuid(), "truncated": boolean()}),
                &["items", "truncated"],
            ),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}/events".into(),
        json!({"get": events.into_value()}),
    );
    closer_path(paths);
}

fn closer_path(paths: &mut Map<String, Value>) {
    let evidence = object(
        json!({"quote": {"type": "string", "minLength": 1,
                "description": "Verbatim slice of the session's last message or of a memory the run wrote."},
            "source": string_enum(&["excerpt", "memory"]),
            "memoryId": uuid()}),
        &["quote", "source"],
    );
    let verdict = record(json!({"memoryId": uuid(),
        "verdict": string_enum(&["judged-done", "resolved", "skipped", "not-done"]),
        "reason": {"type": "string", "minLength": 1, "maxLength": 40},
        "judge": {"type": "string", "minLength": 1, "maxLength": 40},
        "evidence": array(evidence, None),
        "resolvedAt": nullable(iso()),
        "undone": boolean(),
        "undoneAt": nullable(iso())}));
    let pass = record(json!({"activationEpoch": integer(1, i64::MAX),
        "state": string_enum(&["queued", "running", "finished", "failed"]),
        "outcome": nullable(string_enum(&["fenced", "claim-lost", "not-eligible",
            "nothing-briefed", "completed", "overflowed", "refused", "failed", "not-found",
            "not-closed"])),
        "resolved": integer(0, i64::from(u32::MAX)),
        "rejected": integer(0, i64::from(u32::MAX)),
        "failures": integer(0, i64::from(u32::MAX)),
        "nextAttemptAt": nullable(iso()),
        "verdicts": array(verdict, Some(100))}));
    let closer = Operation {
        summary: "The closer's passes over a run: each briefed commitment's verdict, its \
            evidence, and whether a user has since undone the resolve",
        parameters: vec![run_path()],
        body: None,
        success: (
            200,
            record(json!({"sessionRunId": uuid(), "passes": array(pass, None)})),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}/closer".into(),
        json!({"get": closer.into_value()}),
    );
}

fn triage_paths(paths: &mut Map<String, Value>) {
    let begin = Operation {
        summary: "May this turn end inject a debrief? (table F)",
        parameters: vec![],
        body: Some((
            object(
                json!({"agent": agent(), "sessionId": identifier(256),
                    "turnCount": integer(0, 100_000), "stopHookActive": boolean()}),
                &["agent", "sessionId"],
            ),
            json!({"agent": "claude-code", "sessionId": "doc-1", "turnCount": 3}),
            true,
        )),
        success: (
            200,
            object(
                json!({"sessionRunId": uuid(), "armed": boolean(), "attemptId": uuid(),
                    "triageStatus": string_enum(TRIAGE_STATUSES),
                    "reason": string_enum(&["not-live", "terminal", "pending", "pending-fresh",
                        "no-signal", "debounce", "overflowed"])}),
                &["sessionRunId", "armed", "triageStatus"],
            ),
        ),
        errors: &[404],
    };
    paths.insert(
        "/api/v1/agent-sessions/triage/begin".into(),
        json!({"post": begin.into_value()}),
    );
    let complete = Operation {
        summary: "Absorb an armed attempt's writes (table G)",
        parameters: vec![],
        body: Some((
            record(json!({"agent": agent(), "sessionId": identifier(256), "attemptId": uuid()})),
            json!({"agent": "claude-code", "sessionId": "doc-1", "attemptId": EXAMPLE_RUN}),
            true,
        )),
        success: (
            200,
            record(json!({"sessionRunId": uuid(),
                "triageStatus": string_enum(&["completed", "expired", "overflowed"]),
                "eventCount": integer(0, 500), "sinceBeginCount": integer(0, 500),
                "truncated": boolean()})),
        ),
        errors: &[404, 409],
    };
    paths.insert(
        "/api/v1/agent-sessions/triage/complete".into(),
        json!({"post": complete.into_value()}),
    );
    let attempt = object(
        json!({"attemptId": uuid(), "armedAt": iso(), "finalizedAt": iso(),
            "outcome": string_enum(&["completed", "expired", "overflowed"])}),
        &["attemptId", "armedAt"],
    );
    let attempts = Operation {
        summary: "A run's attempt log, oldest first, the newest 50 kept",
        parameters: vec![run_path()],
        body: None,
        success: (
            200,
            record(
                json!({"sessionRunId": uuid(), "items": array(attempt, Some(50)),
                "count": integer(0, i64::from(u32::MAX)), "truncated": boolean()}),
            ),
        ),
        errors: &[400],
    };
    paths.insert(
        "/api/v1/agent-sessions/{sessionRunId}/triage-attempts".into(),
        json!({"get": attempts.into_value()}),
    );
    let debrief = Operation {
        summary: "The debrief prompt; `agent` and `sessionId` go together",
        parameters: vec![
            query("scope", scope(), false),
            query("project", identifier(256), false),
            query("agent", agent(), false),
            query("sessionId", identifier(256), false),
        ],
        body: None,
        success: (
            200,
            record(json!({"prompt": {"type": "string", "minLength": 1}})),
        ),
        errors: &[400, 404],
    };
    paths.insert(
        "/api/v1/prompts/debrief".into(),
        json!({"get": debrief.into_value()}),
    );
}

/// Every documented path.
pub fn paths() -> Value {
    let mut paths = Map::new();
    session_paths(&mut paths);
    triage_paths(&mut paths);
    super::memory_paths::memory_paths(&mut paths);
    super::usage_paths::usage_paths(&mut paths);
    super::budget_paths::budget_paths(&mut paths);
    super::webhook_paths::webhook_paths(&mut paths);
    paths.insert(
        "/api/v1/openapi.json".into(),
        json!({"get": {"summary": "This document", "security": [],
            "responses": {"200": {"description": "the document",
                "content": {"application/json": {"schema": {"type": "object"}}}},
                "503": error_response(503)}}}),
    );
    Value::Object(paths)
}
