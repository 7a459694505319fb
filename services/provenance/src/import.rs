//! Import: memories with their events from a JSON document (gRPC only, no REST route).
//!
//! `sessionRunId` is reserved for native write provenance: an imported event carrying it would
//! land in a live run's event set, re-arm triage or push the run toward overflow. So the import
//! boundary rejects the key wherever it appears — as a memory field or inside any event
//! payload — and nothing is written. Imports never attach to a session.

use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_proto::provenance::v1 as proto;

use crate::memory::{ActorKind, CommitmentStatus, EventKind, MemoryType};
use crate::service::Provenance;
use crate::store::{events, memories};
use crate::validate;

/// Most memories one import may carry.
pub const MAX_IMPORT_MEMORIES: usize = 1000;
/// Most events per imported memory.
pub const MAX_IMPORT_EVENTS: usize = 100;
/// Largest serialized event payload, in characters.
pub const MAX_PAYLOAD_CHARS: usize = 4096;
/// The reserved key.
pub const RESERVED_KEY: &str = "sessionRunId";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportDocument {
    memories: Vec<ImportMemory>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImportMemory {
    memory_type: String,
    topic: String,
    content: String,
    scope: Option<String>,
    project: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    events: Vec<ImportEvent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImportEvent {
    event_kind: String,
    payload: Option<Value>,
}

/// Whether `value` holds the reserved key at any depth.
pub fn contains_reserved_key(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, inner)| key == RESERVED_KEY || contains_reserved_key(inner)),
        Value::Array(items) => items.iter().any(contains_reserved_key),
        _ => false,
    }
}

fn reserved() -> ApiError {
    ApiError::invalid_input(
        "sessionRunId is reserved for native write provenance and cannot be imported",
    )
}

/// A parsed, validated import, ready to write.
struct Planned {
    memory: validate::NewMemory,
    events: Vec<(EventKind, Option<Value>)>,
}

fn plan(document_json: &str) -> Result<Vec<Planned>, ApiError> {
    let raw: Value = serde_json::from_str(document_json)
        .map_err(|_| ApiError::invalid_input("import document is not JSON"))?;
    if contains_reserved_key(&raw) {
        return Err(reserved());
    }
    baton_kit::text::json_characters("import document", &raw)?;
    // serde's own message may quote a value: the detail names the field and the rule only.
    let document: ImportDocument = baton_kit::shape_error::from_value("import document", raw)
        .map_err(ApiError::invalid_input)?;
    if document.memories.is_empty() || document.memories.len() > MAX_IMPORT_MEMORIES {
        return Err(ApiError::invalid_input(format!(
            "an import carries 1 to {MAX_IMPORT_MEMORIES} memories"
        )));
    }
    document
        .memories
        .into_iter()
        .map(|item| {
            let fields = proto::MemoryFields {
                memory_type: item.memory_type,
                topic: item.topic,
                content: item.content,
                scope: item.scope,
                project: item.project,
                tags: item.tags,
                due_at: None,
            };
            let memory = validate::new_memory(Some(&fields))?;
            if item.events.len() > MAX_IMPORT_EVENTS {
                return Err(ApiError::invalid_input(format!(
                    "at most {MAX_IMPORT_EVENTS} events per memory"
                )));
            }
            let events = item
                .events
                .into_iter()
                .map(|event| {
                    let kind = EventKind::parse(&event.event_kind)
                        .ok_or_else(|| ApiError::invalid_input("eventKind is not an event kind"))?;
                    let size = event
                        .payload
                        .as_ref()
                        .map_or(0, |payload| payload.to_string().chars().count());
                    if size > MAX_PAYLOAD_CHARS {
                        return Err(ApiError::invalid_input(format!(
                            "an event payload is at most {MAX_PAYLOAD_CHARS} characters"
                        )));
                    }
                    Ok((kind, event.payload))
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            Ok(Planned { memory, events })
        })
        .collect()
}

impl Provenance {
    /// Imports every memory of the document in one transaction, or none.
    pub async fn import(
        &self,
        call: &CallContext,
        document_json: &str,
    ) -> Result<Vec<Uuid>, ApiError> {
        let planned = plan(document_json)?;
        let (tenant_id, now) = (call.tenant_id, call.now);
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let mut ids = Vec::with_capacity(planned.len());
        for item in planned {
            let id = Uuid::now_v7();
            memories::insert(&mut transaction, tenant_id, id, &item.memory, None, now).await?;
            if item.memory.memory_type == MemoryType::Commitment {
                memories::insert_commitment(
                    &mut transaction,
                    tenant_id,
                    id,
                    CommitmentStatus::Open,
                    None,
                    now,
                )
                .await?;
            }
            events::insert(
                &mut transaction,
                tenant_id,
                id,
                EventKind::Import,
                ActorKind::Importer,
                None,
                now,
            )
            .await?;
            for (kind, payload) in &item.events {
                events::insert(
                    &mut transaction,
                    tenant_id,
                    id,
                    *kind,
                    ActorKind::Importer,
                    payload.as_ref(),
                    now,
                )
                .await?;
            }
            ids.push(id);
        }
        transaction.commit().await?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_key_is_found_at_any_depth() {
        let nested = serde_json::json!({"memories": [{"events": [{"payload": {"a": [{"sessionRunId": "x"}]}}]}]});
        assert!(contains_reserved_key(&nested));
        let top = serde_json::json!({"memories": [{"sessionRunId": "x"}]});
        assert!(contains_reserved_key(&top));
        let clean = serde_json::json!({"memories": [{"events": [{"payload": {"session": "x"}}]}]});
        assert!(!contains_reserved_key(&clean));
    }

    #[test]
    fn plans_reject_bad_documents() {
        assert!(plan("not json").is_err());
        assert!(plan(r#"{"memories": []}"#).is_err());
        assert!(plan(r#"{"memories": [{"memoryType": "note", "topic": "t", "content": "c", "sessionRunId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}]}"#).is_err());
        assert!(plan(r#"{"memories": [{"memoryType": "note", "topic": "t", "content": "c", "extra": 1}]}"#).is_err());
        assert!(plan(r#"{"memories": [{"memoryType": "note", "topic": "t", "content": "c", "events": [{"eventKind": "poke"}]}]}"#).is_err());
        let ok = plan(r#"{"memories": [{"memoryType": "note", "topic": "t", "content": "c", "events": [{"eventKind": "revise", "payload": {"source": "old"}}]}]}"#)
            .expect("valid");
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].events.len(), 1);
    }
}
