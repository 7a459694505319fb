//! End-to-end: the real `baton serve all` process on free ports against real Postgres, tenants
//! from the real CLI, everything over HTTP.

mod abuse;
mod amqp_tls;
mod auth;
mod budgets;
mod bus_messages;
mod claude_hooks_real;
mod claude_real;
mod closer;
mod closer_faults;
mod closer_messages;
mod closer_overlap;
mod closer_report;
mod closer_write_back;
mod codex_real;
mod console;
mod console_sessions;
mod copilot_clear_real;
mod copilot_real;
mod copilot_usage_real;
mod database_tls;
mod db_restart;
mod error_detail;
mod gemini_clear_real;
mod gemini_real;
mod gemini_usage_real;
mod grpc_reflection;
mod grpc_tls;
mod hook_backoff;
mod hook_clients;
mod hook_end_signals;
mod hook_install;
mod hook_liveness;
mod hook_spool;
mod hook_spool_keys;
mod hook_start;
mod hook_stop;
mod hook_usage;
mod hook_usage_memo;
mod hostile_input;
mod internal_clients;
mod lease;
mod liveness_routes;
mod lost_commit;
mod members;
mod memories;
mod openapi_contract;
mod otlp;
mod otlp_tls;
mod outbox_relays;
mod outbox_stall;
mod ownership;
mod real_client;
mod runaway;
mod schema_gate;
mod schemathesis;
mod secrets_in_logs;
mod sessions;
mod standalone;
mod surface;
mod system_clock;
mod telemetry_trust;
mod tenant_rls;
mod time_bounds;
mod token_kinds;
mod token_rotation;
mod trace;
mod triage;
mod usage_concurrency;
mod usage_conformance;
mod usage_csv;
mod usage_hook;
mod usage_hook_sidecar;
mod usage_reads;
mod usage_real;
mod usage_upload;
mod validation;
mod webhooks;

use serde_json::{Value, json};

/// An open body for the conventional test session.
pub fn startup(session_id: &str) -> Value {
    json!({
        "agent": "claude-code",
        "sessionId": session_id,
        "source": "startup",
        "project": "baton",
        "scope": "work",
        "selector": {"kind": "scope", "scope": "work"},
    })
}

/// Opens the conventional test session `session_id`, which must answer 200; its run id.
pub async fn open_session(client: &baton_tests::Client, session_id: &str) -> String {
    client.open(&startup(session_id)).await
}

pub fn key(session_id: &str) -> Value {
    json!({"agent": "claude-code", "sessionId": session_id})
}

/// Whether a string is in `toISOString` form.
pub fn is_iso(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    text.len() == 24
        && text.ends_with('Z')
        && chrono::DateTime::parse_from_rfc3339(text).is_ok()
        && text.as_bytes()[19] == b'.'
}
