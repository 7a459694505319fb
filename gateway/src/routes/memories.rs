//! `/api/v1/memories`: remember, revise, resolve, archive and the two reads (CONTRACT section
//! 10). Writes name their session run in `sessionRunId`; provenance resolves it (table E).

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use baton_kit::clock::parse_instant;
use baton_kit::error::ErrorCode;
use baton_kit::text;
use baton_proto::provenance::v1 as proto;

use crate::path_ids::MemoryIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::state::{AppState, Caller};
use crate::strict::{self, LimitedBody, StrictJson};

/// `POST /memories` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RememberBody {
    /// decision, commitment, blocker, fact, preference, pattern, note or event.
    pub memory_type: String,
    pub topic: String,
    /// At most 2000 characters after trimming.
    pub content: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub tags: Option<Vec<String>>,
    /// Commitments only (Baton addition): when it is due, RFC 3339.
    #[serde(default, deserialize_with = "strict::present")]
    pub due_at: Option<String>,
    /// Not supported by Baton yet: a body carrying it is refused with a detail.
    #[serde(default, deserialize_with = "strict::present")]
    pub facts: Option<serde_json::Value>,
    /// The session run this write belongs to.
    #[serde(default, deserialize_with = "strict::present")]
    pub session_run_id: Option<String>,
}

/// `POST /memories/{id}/revise` body: the remember fields (no `facts`) and the edge.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviseBody {
    pub memory_type: String,
    pub topic: String,
    pub content: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub tags: Option<Vec<String>>,
    #[serde(default, deserialize_with = "strict::present")]
    pub due_at: Option<String>,
    /// `supersedes` (default) or `updates`.
    #[serde(default, deserialize_with = "strict::present")]
    pub edge_intent: Option<String>,
    /// Accepted for compatibility; the URL's id wins.
    #[serde(default, deserialize_with = "strict::present")]
    pub predecessor_id: Option<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub session_run_id: Option<String>,
}

/// `POST /memories/{id}/resolve` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveBody {
    /// open (unresolve), waiting, resolved or expired.
    pub status: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub session_run_id: Option<String>,
    /// Accepted for compatibility; the URL's id wins.
    #[serde(default, deserialize_with = "strict::present")]
    pub memory_id: Option<String>,
}

/// `POST /memories/{id}/archive` body (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveBody {
    #[serde(default, deserialize_with = "strict::present")]
    pub session_run_id: Option<String>,
}

/// The written memory.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRef {
    pub id: String,
    pub memory_type: String,
    pub topic: String,
    pub scope: String,
    pub project: Option<String>,
}

/// `POST /memories` answer (201).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RememberAnswer {
    pub memory: MemoryRef,
    /// Baton computes no embeddings: always `off`.
    pub embedded: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commitment_id: Option<String>,
}

/// `POST /memories/{id}/revise` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviseAnswer {
    pub memory: MemoryRef,
    pub embedded: String,
}

/// `POST /memories/{id}/resolve` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveAnswer {
    pub commitment_id: String,
    pub status: String,
}

/// `POST /memories/{id}/archive` answer.
#[derive(Debug, Serialize)]
pub struct ArchiveAnswer {
    pub id: String,
    pub status: String,
}

/// A memory's commitment.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitmentView {
    pub id: String,
    pub status: String,
    pub due_at: Option<String>,
}

/// `GET /memories/{id}` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryView {
    pub id: String,
    pub memory_type: String,
    pub topic: String,
    pub content: String,
    pub scope: String,
    pub project: Option<String>,
    pub tags: Vec<String>,
    pub status: String,
    pub commitment: Option<CommitmentView>,
    pub predecessor_id: Option<String>,
    pub superseded_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A payload reduced to its shape: never its values.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadShape {
    pub present: bool,
    pub json_type: Option<String>,
    pub byte_length: i64,
}

/// One history entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub id: String,
    pub event_kind: String,
    pub actor_kind: String,
    pub created_at: String,
    pub payload: PayloadShape,
}

/// `GET /memories/{id}/history` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryAnswer {
    pub memory_id: String,
    pub events: Vec<HistoryEntry>,
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

/// Write a memory (CONTRACT section 10).
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
    let answer = state
        .provenance
        .clone()
        .remember(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok((
        StatusCode::CREATED,
        Json(RememberAnswer {
            memory: memory_ref(answer.memory)?,
            embedded: "off".to_string(),
            commitment_id: answer.commitment_id,
        }),
    ))
}

/// Revise a memory: a successor supersedes it.
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
    let answer = state
        .provenance
        .clone()
        .revise(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(ReviseAnswer {
        memory: memory_ref(answer.memory)?,
        embedded: "off".to_string(),
    }))
}

/// Move a commitment to a status (`open` unresolves); a blocker is archived.
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
    let answer = state
        .provenance
        .clone()
        .transition(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(ResolveAnswer {
        commitment_id: answer.commitment_id,
        status: answer.status,
    }))
}

/// Archive a memory. The body is optional.
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
    let answer = state
        .provenance
        .clone()
        .archive(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(ArchiveAnswer {
        id: answer.id,
        status: answer.status,
    }))
}

/// Read one memory.
pub async fn read(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<MemoryView>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let memory = state
        .provenance
        .clone()
        .get_memory(
            state
                .outbound
                .request(&call, proto::GetMemoryRequest { memory_id }),
        )
        .await?
        .into_inner()
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

/// A memory's events: metadata, and each payload's presence, JSON type and size only.
pub async fn history(
    State(state): State<AppState>,
    Caller(call): Caller,
    MemoryIdPath(memory_id): MemoryIdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<HistoryAnswer>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let answer = state
        .provenance
        .clone()
        .history(
            state
                .outbound
                .request(&call, proto::HistoryRequest { memory_id }),
        )
        .await?
        .into_inner();
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
