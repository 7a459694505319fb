//! Routes that exist only with `BATON_TEST_CLOCK=1` (never in production).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};

use baton_kit::clock::TEST_NOW_KEY;
use baton_proto::closer::v1 as proto;

use crate::response::HttpResult;
use crate::state::AppState;

/// `POST /api/v1/_test/sweep`: one sweep pass at the request's test instant (lease-expiry
/// closes, then due retries).
pub async fn sweep(State(state): State<AppState>, headers: HeaderMap) -> HttpResult<Json<Value>> {
    let test_now = headers
        .get(TEST_NOW_KEY)
        .and_then(|value| value.to_str().ok());
    let request = state
        .outbound
        .maintenance_request(test_now, proto::SweepRequest {});
    let report = state.closer.clone().sweep(request).await?.into_inner();
    Ok(Json(json!({
        "enabled": report.enabled,
        "closed": report.closed,
        "retried": report.retried,
    })))
}
