//! Field rules of memory writes (CONTRACT section 10 and `write.ts` bounds).

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use baton_kit::clock::from_timestamp;
use baton_kit::error::ApiError;
use baton_kit::text;
use baton_proto::provenance::v1 as proto;

use crate::memory::{ActorKind, CommitmentStatus, MemoryType};

/// Longest content in UTF-16 units (after trimming).
pub const MAX_CONTENT: usize = 2000;
/// Longest topic.
pub const MAX_TOPIC: usize = 256;
/// Most tags, and longest tag.
pub const MAX_TAGS: usize = 32;
pub const MAX_TAG: usize = 64;
/// The scope a memory gets when none is given.
pub const DEFAULT_SCOPE: &str = "personal";

/// A validated memory body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMemory {
    pub memory_type: MemoryType,
    pub topic: String,
    pub content: String,
    pub scope: String,
    pub project: Option<String>,
    pub tags: Vec<String>,
    pub due_at: Option<DateTime<Utc>>,
}

impl NewMemory {
    /// SHA-256 of the content, for the duplicate check.
    pub fn content_sha256(&self) -> Vec<u8> {
        Sha256::digest(self.content.as_bytes()).to_vec()
    }
}

/// Validates the memory fields of a remember or revise.
pub fn new_memory(fields: Option<&proto::MemoryFields>) -> Result<NewMemory, ApiError> {
    let fields = fields.ok_or_else(|| ApiError::invalid_input("memory is required"))?;
    let memory_type = MemoryType::parse(&fields.memory_type)
        .ok_or_else(|| ApiError::invalid_input("memoryType is not a memory type"))?;
    let tags = fields
        .tags
        .iter()
        .map(|tag| text::trimmed("tags[]", tag, MAX_TAG))
        .collect::<Result<Vec<_>, _>>()?;
    if tags.len() > MAX_TAGS {
        return Err(ApiError::invalid_input(format!("at most {MAX_TAGS} tags")));
    }
    let due_at = match &fields.due_at {
        None => None,
        Some(timestamp) => Some(
            from_timestamp(timestamp)
                .ok_or_else(|| ApiError::invalid_input("dueAt is out of range"))?,
        ),
    };
    if due_at.is_some() && memory_type != MemoryType::Commitment {
        return Err(ApiError::invalid_input("dueAt applies to commitments only"));
    }
    Ok(NewMemory {
        memory_type,
        topic: text::trimmed("topic", &fields.topic, MAX_TOPIC)?,
        content: text::prose_trimmed("content", &fields.content, MAX_CONTENT)?,
        scope: match &fields.scope {
            Some(scope) => text::scope(scope)?,
            None => DEFAULT_SCOPE.to_string(),
        },
        project: fields.project.as_deref().map(text::project).transpose()?,
        tags,
        due_at,
    })
}

/// A memory id from a path or body.
pub fn memory_id(field: &str, text_value: &str) -> Result<uuid::Uuid, ApiError> {
    text::contract_uuid(text_value)
        .ok_or_else(|| ApiError::invalid_input(format!("{field} must be a uuid")))
}

/// A resolve target status.
pub fn target_status(text_value: &str) -> Result<CommitmentStatus, ApiError> {
    CommitmentStatus::parse(text_value)
        .ok_or_else(|| ApiError::invalid_input("status must be open, waiting, resolved or expired"))
}

/// The actor of a write; unspecified is refused (a caller must say which transport it is).
pub fn actor(value: i32) -> Result<ActorKind, ApiError> {
    let actor = match proto::ActorKind::try_from(value) {
        Ok(proto::ActorKind::UserDashboard) => ActorKind::UserDashboard,
        Ok(proto::ActorKind::UserApi) => ActorKind::UserApi,
        Ok(proto::ActorKind::UserMcp) => ActorKind::UserMcp,
        Ok(proto::ActorKind::Worker) => ActorKind::Worker,
        Ok(proto::ActorKind::Importer) => ActorKind::Importer,
        Ok(proto::ActorKind::System) => ActorKind::System,
        _ => return Err(ApiError::invalid_input("actor is required")),
    };
    Ok(actor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(memory_type: &str, topic: &str, content: &str) -> proto::MemoryFields {
        proto::MemoryFields {
            memory_type: memory_type.to_string(),
            topic: topic.to_string(),
            content: content.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn bodies_are_trimmed_bounded_and_defaulted() {
        let memory = new_memory(Some(&fields("note", "  t ", " c "))).expect("valid");
        assert_eq!((memory.topic.as_str(), memory.content.as_str()), ("t", "c"));
        assert_eq!(memory.scope, "personal");
        assert!(new_memory(Some(&fields("note", "t", &"x".repeat(2000)))).is_ok());
        assert!(new_memory(Some(&fields("note", "t", &"x".repeat(2001)))).is_err());
        assert!(new_memory(Some(&fields("note", &"x".repeat(257), "c"))).is_err());
        assert!(new_memory(Some(&fields("thought", "t", "c"))).is_err());
        assert!(new_memory(Some(&fields("note", " ", "c"))).is_err());
        let mut tagged = fields("note", "t", "c");
        tagged.tags = (0..33).map(|index| format!("tag{index}")).collect();
        assert!(new_memory(Some(&tagged)).is_err());
        tagged.tags = vec!["x".repeat(65)];
        assert!(new_memory(Some(&tagged)).is_err());
    }
}
