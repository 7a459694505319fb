//! `/api/v1/runaway-policy`: the tenant's limits for runaway sessions (issue 24). `GET` reads
//! them (the defaults, $10 in 15 minutes and an hour without a prompt, when never set); `PUT`
//! replaces them (strict body, every field required). Flagged sessions carry `runaway` in the
//! session listings; each episode raises `usage.runaway.flagged` once.

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::{Deserialize, Serialize};

use baton_proto::usage::v1 as proto;

use crate::response::HttpResult;
use crate::state::{AppState, Caller};
use crate::strict::{self, StrictJson};

/// The policy, as both verbs carry it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyBody {
    pub window_minutes: u32,
    pub spend_usd: f64,
    pub unattended_minutes: u32,
}

fn body(policy: proto::RunawayPolicy) -> PolicyBody {
    PolicyBody {
        window_minutes: policy.window_minutes,
        spend_usd: policy.spend_usd,
        unattended_minutes: policy.unattended_minutes,
    }
}

pub async fn get(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<PolicyBody>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let policy = state
        .usage
        .clone()
        .get_runaway_policy(
            state
                .outbound
                .request(&call, proto::GetRunawayPolicyRequest {}),
        )
        .await?
        .into_inner();
    Ok(Json(body(policy)))
}

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
    let stored = state
        .usage
        .clone()
        .set_runaway_policy(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(body(stored)))
}
