//! `/api/v1/memories`: remember, revise, resolve and archive (CONTRACT section 10; the reads
//! are [`super::memory_reads`]). Writes name their session run in `sessionRunId`; provenance
//! resolves it (table E).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_kit::clock::parse_instant;
use baton_kit::error::ErrorCode;
use baton_kit::text;
use baton_proto::provenance::v1 as proto;

use crate::api_schema::enums::ResolvedStatus;
use crate::api_schema::enums::{Archived, CommitmentStatus, EdgeIntent, Embedded, MemoryType};
use crate::api_schema::text::{ContractUuid, Identifier, Scope, TrimmedProse};
use crate::api_schema::{List, errors};
use crate::path_ids::MemoryIdPath;
use crate::response::{HttpError, HttpResult};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{self, LimitedBody, StrictJson};

/// `POST /memories` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RememberBody {
    #[schema(schema_with = MemoryType::schema)]
    pub memory_type: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub topic: String,
    /// At most 2000 characters after trimming.
    #[schema(schema_with = TrimmedProse::<2000>::schema)]
    pub content: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Scope::schema)]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<256>::schema)]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = List::<Identifier<64>, 32>::schema)]
    pub tags: Option<Vec<String>>,
    /// Commitments only (RFC 3339).
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(format = DateTime, nullable = false)]
    pub due_at: Option<String>,
    /// Not supported by Baton yet: a body carrying it is refused with a detail (so the
    /// document leaves it out).
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(ignore)]
    pub facts: Option<serde_json::Value>,
    /// The session run this write belongs to.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: Option<String>,
}

/// `POST /memories/{id}/revise` body: the remember fields (no `facts`) and the edge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviseBody {
    #[schema(schema_with = MemoryType::schema)]
    pub memory_type: String,
    #[schema(schema_with = Identifier::<256>::schema)]
    pub topic: String,
    /// At most 2000 characters after trimming.
    #[schema(schema_with = TrimmedProse::<2000>::schema)]
    pub content: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Scope::schema)]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Identifier::<256>::schema)]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = List::<Identifier<64>, 32>::schema)]
    pub tags: Option<Vec<String>>,
    /// Commitments only (RFC 3339).
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(format = DateTime, nullable = false)]
    pub due_at: Option<String>,
    /// `supersedes` (default) or `updates`.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = EdgeIntent::schema)]
    pub edge_intent: Option<String>,
    /// Accepted and ignored: the path's id wins.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(nullable = false)]
    pub predecessor_id: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: Option<String>,
}

/// `POST /memories/{id}/resolve` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveBody {
    /// open (unresolve), waiting, resolved or expired.
    #[schema(schema_with = CommitmentStatus::schema)]
    pub status: String,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: Option<String>,
    /// Accepted and ignored: the path's id wins.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(nullable = false)]
    pub memory_id: Option<String>,
}

/// `POST /memories/{id}/archive` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveBody {
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: Option<String>,
}

/// The written memory.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRef {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = MemoryType::schema)]
    pub memory_type: String,
    pub topic: String,
    pub scope: String,
    #[schema(required = true)]
    pub project: Option<String>,
}

/// `POST /memories` answer (201).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RememberAnswer {
    pub memory: MemoryRef,
    /// Baton computes no embeddings: always `off`.
    #[schema(schema_with = Embedded::schema)]
    pub embedded: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = ContractUuid::schema)]
    pub commitment_id: Option<String>,
}

/// `POST /memories/{id}/revise` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviseAnswer {
    pub memory: MemoryRef,
    #[schema(schema_with = Embedded::schema)]
    pub embedded: String,
}

/// `POST /memories/{id}/resolve` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub commitment_id: String,
    #[schema(schema_with = ResolvedStatus::schema)]
    pub status: String,
}

/// `POST /memories/{id}/archive` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ArchiveAnswer {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = Archived::schema)]
    pub status: String,
}

/// A write's provenance from its optional `sessionRunId` (validated, lower-cased).
fn provenance(session_run_id: Option<&str>) -> Result<Option<proto::WriteProvenance>, HttpError> {
    let Some(text_value) = session_run_id else {
        return Ok(None);
    };
    let id = text::session_run_id("sessionRunId", text_value)?;
    Ok(Some(proto::WriteProvenance {
        source: Some(proto::write_provenance::Source::SessionRunId(
            id.to_string(),
        )),
    }))
}

fn due_at(text_value: Option<&str>) -> Result<Option<baton_proto::Timestamp>, HttpError> {
    text_value
        .map(|text_value| {
            parse_instant(text_value)
                .map(baton_kit::clock::to_timestamp)
                .ok_or_else(|| HttpError::new(ErrorCode::InvalidInput, "dueAt must be RFC 3339"))
        })
        .transpose()
}

fn memory_ref(summary: Option<proto::MemorySummary>) -> Result<MemoryRef, HttpError> {
    let summary =
        summary.ok_or_else(|| HttpError::new(ErrorCode::Internal, "no memory answered"))?;
    Ok(MemoryRef {
        id: summary.id,
        memory_type: summary.memory_type,
        topic: summary.topic,
        scope: summary.scope,
        project: summary.project,
    })
}

/// Write a memory; `sessionRunId` names the run that wrote it (table E)
#[utoipa::path(
    post,
    path = "/api/v1/memories",
    tag = "memories",
    operation_id = "rememberMemory",
    request_body(content = RememberBody, example = json!({"memoryType": "commitment",
        "topic": "release", "content": "Ship 1.2 with the new importer", "project": "baton"})),
    responses(
        (status = 201, description = "success", body = RememberAnswer),
        errors::Conflict,
    ),
)]
pub async fn remember(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<RememberBody>,
) -> HttpResult<(StatusCode, Json<RememberAnswer>)> {
    if body.facts.is_some() {
        return Err(
            HttpError::new(ErrorCode::InvalidInput, "facts are not supported").with_public_detail(
                "structured facts are not part of Baton yet; send the memory without facts",
            ),
        );
    }
    let request = proto::RememberRequest {
        memory: Some(proto::MemoryFields {
            memory_type: body.memory_type,
            topic: body.topic,
            content: body.content,
            scope: body.scope,
            project: body.project,
            tags: body.tags.unwrap_or_default(),
            due_at: due_at(body.due_at.as_deref())?,
        }),
        actor: proto::ActorKind::UserApi.into(),
        provenance: provenance(body.session_run_id.as_deref())?,
    };
    let answer = rpc!(state.provenance.remember(&call, request))?;
    Ok((
        StatusCode::CREATED,
        Json(RememberAnswer {
            memory: memory_ref(answer.memory)?,
            embedded: "off".to_string(),
            commitment_id: answer.commitment_id,
        }),
    ))
}

/// Revise a memory: a successor supersedes it
#[utoipa::path(
    post,
    path = "/api/v1/memories/{id}/revise",
    tag = "memories",
    operation_id = "reviseMemory",
    params(MemoryIdPath),
    request_body(content = ReviseBody, example = json!({"memoryType": "commitment",
        "topic": "release", "content": "Ship 1.3 with the new importer", "project": "baton"})),
    responses(
        (status = 200, description = "success", body = ReviseAnswer),
        errors::NotFound,
        errors::Conflict,
    ),
)]
pub async fn revise(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    StrictJson(raw): StrictJson<serde_json::Value>,
) -> HttpResult<Json<ReviseAnswer>> {
    let predecessor_id = memory_id;
    if raw.get("facts").is_some() {
        return Err(HttpError::new(
            ErrorCode::InvalidInput,
            "facts are not supported on revise",
        ));
    }
    let body: ReviseBody = strict::from_value(raw)?;
    let request = proto::ReviseRequest {
        predecessor_id,
        memory: Some(proto::MemoryFields {
            memory_type: body.memory_type,
            topic: body.topic,
            content: body.content,
            scope: body.scope,
            project: body.project,
            tags: body.tags.unwrap_or_default(),
            due_at: due_at(body.due_at.as_deref())?,
        }),
        edge_intent: body.edge_intent,
        actor: proto::ActorKind::UserApi.into(),
        provenance: provenance(body.session_run_id.as_deref())?,
    };
    let answer = rpc!(state.provenance.revise(&call, request))?;
    Ok(Json(ReviseAnswer {
        memory: memory_ref(answer.memory)?,
        embedded: "off".to_string(),
    }))
}

/// Move a commitment to a status (`open` unresolves); a blocker is archived
#[utoipa::path(
    post,
    path = "/api/v1/memories/{id}/resolve",
    tag = "memories",
    operation_id = "resolveMemory",
    params(MemoryIdPath),
    request_body(content = ResolveBody, example = json!({"status": "resolved"})),
    responses(
        (status = 200, description = "success", body = ResolveAnswer),
        errors::NotFound,
        errors::Conflict,
    ),
)]
pub async fn resolve(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    StrictJson(body): StrictJson<ResolveBody>,
) -> HttpResult<Json<ResolveAnswer>> {
    let request = proto::TransitionRequest {
        memory_id,
        target_status: body.status,
        actor: proto::ActorKind::UserApi.into(),
        provenance: provenance(body.session_run_id.as_deref())?,
    };
    let answer = rpc!(state.provenance.transition(&call, request))?;
    Ok(Json(ResolveAnswer {
        commitment_id: answer.commitment_id,
        status: answer.status,
    }))
}

/// Archive a memory; the body is optional
#[utoipa::path(
    post,
    path = "/api/v1/memories/{id}/archive",
    tag = "memories",
    operation_id = "archiveMemory",
    params(MemoryIdPath),
    request_body(content = Option<ArchiveBody>, example = json!({})),
    responses(
        (status = 200, description = "success", body = ArchiveAnswer),
        errors::NotFound,
        errors::Conflict,
    ),
)]
pub async fn archive(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    LimitedBody(body): LimitedBody,
) -> HttpResult<Json<ArchiveAnswer>> {
    let body: ArchiveBody = if body.iter().all(u8::is_ascii_whitespace) {
        ArchiveBody::default()
    } else {
        strict::parse_body(&body)?
    };
    let request = proto::ArchiveRequest {
        memory_id,
        actor: proto::ActorKind::UserApi.into(),
        provenance: provenance(body.session_run_id.as_deref())?,
    };
    let answer = rpc!(state.provenance.archive(&call, request))?;
    Ok(Json(ArchiveAnswer {
        id: answer.id,
        status: answer.status,
    }))
}
