//! `GET /api/v1/agent-sessions/{sessionRunId}/closer`: the closer's passes over a run, each
//! with every briefed commitment's verdict, its evidence (verbatim quotes of the session's
//! last message or of a memory the run wrote) and whether a user has since undone the
//! closer's resolve (reopened it through `POST /memories/{id}/resolve` with `status: open`).
//!
//! The run is looked up in registry first, so a malformed, unknown or other tenant's id is
//! 400 like the other run reads, and a known run the closer never passed over lists none.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_proto::closer::v1 as proto;

use crate::api_schema::Nullable;
use crate::api_schema::enums::{EvidenceSource, PassOutcome, PassState, Verdict};
use crate::api_schema::errors;
use crate::api_schema::text::{ContractUuid, Timestamp};
use crate::path_ids::RunIdPath;
use crate::response::HttpResult;
use crate::routes::optional_iso;
use crate::routes::sessions::{run_session, unknown_run_is_invalid};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::NoQuery;

/// One quoted statement a verdict rests on.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceItem {
    /// Verbatim slice of the session's last message or of a memory the run wrote.
    #[schema(min_length = 1)]
    pub quote: String,
    /// `excerpt` or `memory`.
    #[schema(schema_with = EvidenceSource::schema)]
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = ContractUuid::schema)]
    pub memory_id: Option<String>,
}

/// One briefed commitment's verdict in a pass.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictItem {
    #[schema(schema_with = ContractUuid::schema)]
    pub memory_id: String,
    #[schema(schema_with = Verdict::schema)]
    pub verdict: String,
    #[schema(min_length = 1, max_length = 40)]
    pub reason: String,
    #[schema(min_length = 1, max_length = 40)]
    pub judge: String,
    #[schema(inline)]
    pub evidence: Vec<EvidenceItem>,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub resolved_at: Option<String>,
    pub undone: bool,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub undone_at: Option<String>,
}

/// One pass (one per activation epoch).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PassItem {
    #[schema(minimum = 1)]
    pub activation_epoch: i64,
    #[schema(schema_with = PassState::schema)]
    pub state: String,
    #[schema(schema_with = Nullable::<PassOutcome>::schema, required = true)]
    pub outcome: Option<String>,
    pub resolved: u32,
    pub rejected: u32,
    pub failures: u32,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub next_attempt_at: Option<String>,
    #[schema(inline, max_items = 100)]
    pub verdicts: Vec<VerdictItem>,
}

/// The answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloserAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(inline)]
    pub passes: Vec<PassItem>,
}

fn verdict_item(verdict: proto::Verdict) -> VerdictItem {
    VerdictItem {
        memory_id: verdict.memory_id,
        verdict: verdict.verdict,
        reason: verdict.reason,
        judge: verdict.judge,
        evidence: verdict
            .evidence
            .into_iter()
            .map(|item| EvidenceItem {
                quote: item.quote,
                source: item.source,
                memory_id: item.memory_id,
            })
            .collect(),
        resolved_at: optional_iso(verdict.resolved_at.as_ref()),
        undone: verdict.undone,
        undone_at: optional_iso(verdict.undone_at.as_ref()),
    }
}

/// The closer's passes over a run
///
/// Each briefed commitment's verdict, its evidence, and whether a user has since undone the
/// resolve. A read: never refreshes a lease.
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}/closer",
    tag = "sessions",
    operation_id = "getCloserPasses",
    params(RunIdPath),
    responses((status = 200, description = "success", body = CloserAnswer), errors::InvalidInput),
)]
pub async fn passes(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    _: NoQuery,
) -> HttpResult<Json<CloserAnswer>> {
    let session = run_session(&state, &call, run_id)
        .await
        .map_err(unknown_run_is_invalid)?;
    let listed = rpc!(state.closer.list_passes(
        &call,
        proto::ListPassesRequest {
            session_run_id: session.session_run_id.clone(),
        },
    ))?;
    Ok(Json(CloserAnswer {
        session_run_id: session.session_run_id,
        passes: listed
            .passes
            .into_iter()
            .map(|pass| PassItem {
                activation_epoch: pass.activation_epoch,
                state: pass.state,
                outcome: pass.outcome,
                resolved: pass.resolved,
                rejected: pass.rejected,
                failures: pass.failures,
                next_attempt_at: optional_iso(pass.next_attempt_at.as_ref()),
                verdicts: pass.verdicts.into_iter().map(verdict_item).collect(),
            })
            .collect(),
    }))
}
