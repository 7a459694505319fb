//! `/api/v1/runaway-policy`: the tenant's limits for runaway sessions (issue 24). `GET` reads
//! them (the defaults, $10 in 15 minutes and an hour without a prompt, when never set); `PUT`
//! replaces them (strict body, every field required). Flagged sessions carry `runaway` in the
//! session listings; each episode raises `usage.runaway.flagged` once.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use baton_proto::usage::v1 as proto;

use crate::response::HttpResult;
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{NoQuery, StrictJson};

/// The policy, as both verbs carry it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyBody {
    #[schema(minimum = 1, maximum = 1440)]
    pub window_minutes: u32,
    #[schema(minimum = 0.01, maximum = 1_000_000)]
    pub spend_usd: f64,
    #[schema(minimum = 1, maximum = 10080)]
    pub unattended_minutes: u32,
}

fn body(policy: proto::RunawayPolicy) -> PolicyBody {
    PolicyBody {
        window_minutes: policy.window_minutes,
        spend_usd: policy.spend_usd,
        unattended_minutes: policy.unattended_minutes,
    }
}

/// The tenant's runaway limits
///
/// Spend over a sliding window, and how long a main agent may work with no user prompt
/// (defaults: $10 in 15 minutes, 60 minutes).
#[utoipa::path(
    get,
    path = "/api/v1/runaway-policy",
    tag = "budgets",
    operation_id = "getRunawayPolicy",
    responses((status = 200, description = "success", body = PolicyBody)),
)]
pub async fn get(
    State(state): State<AppState>,
    Caller(call): Caller,
    _: NoQuery,
) -> HttpResult<Json<PolicyBody>> {
    let policy = rpc!(
        state
            .usage
            .get_runaway_policy(&call, proto::GetRunawayPolicyRequest {})
    )?;
    Ok(Json(body(policy)))
}

/// Replace the tenant's runaway limits; later uploads are judged by them
#[utoipa::path(
    put,
    path = "/api/v1/runaway-policy",
    tag = "budgets",
    operation_id = "putRunawayPolicy",
    request_body(content = PolicyBody,
        example = json!({"windowMinutes": 15, "spendUsd": 10.0, "unattendedMinutes": 60})),
    responses((status = 200, description = "success", body = PolicyBody)),
)]
pub async fn put(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(policy): StrictJson<PolicyBody>,
) -> HttpResult<Json<PolicyBody>> {
    let request = proto::RunawayPolicy {
        window_minutes: policy.window_minutes,
        spend_usd: policy.spend_usd,
        unattended_minutes: policy.unattended_minutes,
    };
    let stored = rpc!(state.usage.set_runaway_policy(&call, request))?;
    Ok(Json(body(stored)))
}
