//! `/healthz` (the process answers) and `/readyz` (the services it needs answer too).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::state::AppState;

/// Liveness: the process is serving HTTP.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: the gateway's database answers within a second with the schema this binary
/// expects, and every service behind it reports SERVING (each is gated on its own schema).
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let database = tokio::time::timeout(
        Duration::from_secs(1),
        sqlx::query!("SELECT 1 AS alive").fetch_one(&state.pool),
    )
    .await
    .is_ok_and(|result| result.is_ok());
    let registry = serving(&state.registry_channel, "baton.registry.v1.SessionRegistry").await;
    let provenance = serving(&state.provenance_channel, "baton.provenance.v1.Provenance").await;
    let triage = serving(&state.triage_channel, "baton.triage.v1.Triage").await;
    let schema = state.schema.is_ready();
    let ready = database && schema && registry && provenance && triage;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if ready { "ready" } else { "not_ready" },
        "checks": {"database": database, "schema": schema, "registry": registry, "provenance": provenance, "triage": triage},
    });
    (status, Json(body))
}

async fn serving(channel: &tonic::transport::Channel, service: &str) -> bool {
    let mut client = HealthClient::new(channel.clone());
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    let answer = tokio::time::timeout(Duration::from_secs(1), client.check(request)).await;
    matches!(answer, Ok(Ok(response)) if response.get_ref().status == ServingStatus::Serving as i32)
}
