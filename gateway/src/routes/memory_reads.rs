//! `/api/v1/memories/{id}` and `/api/v1/memories/{id}/history`: the two memory reads (CONTRACT
//! section 10). A history shows each event's payload by its shape only, never its values.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_proto::provenance::v1 as proto;

use crate::api_schema::Nullable;
use crate::api_schema::enums::{
    ActorKind, CommitmentStatus, EventKind, JsonType, MemoryStatus, MemoryType,
};
use crate::api_schema::errors;
use crate::api_schema::text::{ContractUuid, Timestamp};
use crate::path_ids::MemoryIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::NoQuery;

/// A memory's commitment.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitmentView {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = CommitmentStatus::schema)]
    pub status: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub due_at: Option<String>,
}

/// `GET /memories/{id}` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryView {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = MemoryType::schema)]
    pub memory_type: String,
    pub topic: String,
    pub content: String,
    pub scope: String,
    #[schema(required = true)]
    pub project: Option<String>,
    #[schema(max_items = 32)]
    pub tags: Vec<String>,
    #[schema(schema_with = MemoryStatus::schema)]
    pub status: String,
    #[schema(inline, required = true)]
    pub commitment: Option<CommitmentView>,
    #[schema(schema_with = Nullable::<ContractUuid>::schema, required = true)]
    pub predecessor_id: Option<String>,
    #[schema(schema_with = Nullable::<ContractUuid>::schema, required = true)]
    pub superseded_by: Option<String>,
    #[schema(schema_with = Timestamp::schema)]
    pub created_at: String,
    #[schema(schema_with = Timestamp::schema)]
    pub updated_at: String,
}

/// A payload reduced to its shape: never its values.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayloadShape {
    pub present: bool,
    #[schema(schema_with = Nullable::<JsonType>::schema, required = true)]
    pub json_type: Option<String>,
    #[schema(minimum = 0)]
    pub byte_length: i64,
}

/// One history entry.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = EventKind::schema)]
    pub event_kind: String,
    #[schema(schema_with = ActorKind::schema)]
    pub actor_kind: String,
    #[schema(schema_with = Timestamp::schema)]
    pub created_at: String,
    #[schema(inline)]
    pub payload: PayloadShape,
}

/// `GET /memories/{id}/history` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub memory_id: String,
    #[schema(inline)]
    pub events: Vec<HistoryEntry>,
}

/// Read one memory
#[utoipa::path(
    get,
    path = "/api/v1/memories/{id}",
    tag = "memories",
    operation_id = "getMemory",
    params(MemoryIdPath),
    responses(
        (status = 200, description = "success", body = MemoryView),
        errors::InvalidInput,
        errors::NotFound,
    ),
)]
pub async fn read(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    _: NoQuery,
) -> HttpResult<Json<MemoryView>> {
    let memory = rpc!(
        state
            .provenance
            .get_memory(&call, proto::GetMemoryRequest { memory_id })
    )?
    .memory
    .ok_or_else(|| HttpError::new(ErrorCode::Internal, "no memory answered"))?;
    Ok(Json(MemoryView {
        id: memory.id,
        memory_type: memory.memory_type,
        topic: memory.topic,
        content: memory.content,
        scope: memory.scope,
        project: memory.project,
        tags: memory.tags,
        status: memory.status,
        commitment: memory.commitment.map(|commitment| CommitmentView {
            id: commitment.id,
            status: commitment.status,
            due_at: optional_iso(commitment.due_at.as_ref()),
        }),
        predecessor_id: memory.predecessor_id,
        superseded_by: memory.superseded_by,
        created_at: iso_of(memory.created_at.as_ref()),
        updated_at: iso_of(memory.updated_at.as_ref()),
    }))
}

/// A memory's events: metadata, and each payload's presence, type and size
#[utoipa::path(
    get,
    path = "/api/v1/memories/{id}/history",
    tag = "memories",
    operation_id = "getMemoryHistory",
    params(MemoryIdPath),
    responses(
        (status = 200, description = "success", body = HistoryAnswer),
        errors::InvalidInput,
        errors::NotFound,
    ),
)]
pub async fn history(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    _: NoQuery,
) -> HttpResult<Json<HistoryAnswer>> {
    let answer = rpc!(
        state
            .provenance
            .history(&call, proto::HistoryRequest { memory_id })
    )?;
    Ok(Json(HistoryAnswer {
        memory_id: answer.memory_id,
        events: answer
            .events
            .into_iter()
            .map(|event| {
                let shape = event.payload.unwrap_or_default();
                HistoryEntry {
                    id: event.id,
                    event_kind: event.event_kind,
                    actor_kind: event.actor_kind,
                    created_at: iso_of(event.created_at.as_ref()),
                    payload: PayloadShape {
                        present: shape.present,
                        json_type: shape.present.then_some(shape.json_type),
                        byte_length: shape.byte_length,
                    },
                }
            })
            .collect(),
    }))
}
