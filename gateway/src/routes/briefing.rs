//! `GET /api/v1/briefing` (CONTRACT section 11): the live, bounded state a session starts from.

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_kit::selector::Selector;
use baton_proto::provenance::v1 as proto;

use crate::api_schema::enums::{BriefingMode, BriefingSections, MemoryType, SelectorKind};
use crate::api_schema::selector::SelectorAnswer;
use crate::api_schema::text::{ContractUuid, Identifier, Scope, Timestamp};
use crate::api_schema::{Nullable, errors};
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict;

const KEYS: &[&str] = &[
    "kind",
    "scope",
    "project",
    "includeUnscoped",
    "mode",
    "sections",
    "sectionLimit",
];

/// A commitment in a briefing.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitmentItem {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = ContractUuid::schema)]
    pub memory_id: String,
    pub topic: String,
    pub status: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub due_at: Option<String>,
    pub overdue: bool,
}

/// A commitment section.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitmentSection {
    pub count: u32,
    #[schema(inline)]
    pub items: Vec<CommitmentItem>,
    pub has_more: bool,
}

/// A memory in a briefing.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryItem {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = MemoryType::schema)]
    pub memory_type: String,
    pub topic: String,
    pub scope: String,
    #[schema(required = true)]
    pub project: Option<String>,
    #[schema(schema_with = Timestamp::schema)]
    pub recorded_at: String,
    #[schema(schema_with = Timestamp::schema)]
    pub updated_at: String,
}

/// A memory section.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemorySection {
    pub count: u32,
    #[schema(inline)]
    pub items: Vec<MemoryItem>,
}

/// The briefing; sections not asked for are absent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BriefingAnswer {
    #[schema(value_type = SelectorAnswer)]
    pub selector: Selector,
    #[schema(schema_with = BriefingMode::schema)]
    pub mode: String,
    #[schema(schema_with = Timestamp::schema)]
    pub generated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub commitments: Option<CommitmentSection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub overdue: Option<CommitmentSection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub blockers: Option<MemorySection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub stale_candidates: Option<MemorySection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub recent_decisions: Option<MemorySection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub preferences: Option<MemorySection>,
}

fn invalid(detail: &str) -> HttpError {
    HttpError::new(ErrorCode::InvalidInput, detail.to_string())
}

/// Parses the strict query into the RPC request: `kind` with exactly its axes, `includeUnscoped`
/// only as literal `true|false` and only with `scope_project`, `sections` as a comma list or
/// repeated.
pub fn briefing_request(query: Option<&str>) -> Result<proto::BriefingRequest, HttpError> {
    let pairs = strict::query_pairs_allowing(query, &["sections"])?;
    strict::only_keys(&pairs, KEYS)?;
    let get = |key: &str| strict::single(&pairs, key).map(str::to_string);
    let (scope, project) = (get("scope"), get("project"));
    let include_unscoped = match get("includeUnscoped").as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(invalid("includeUnscoped must be true or false")),
    };
    let kind = get("kind").ok_or_else(|| invalid("kind is required"))?;
    let axes = (scope, project, include_unscoped);
    let selector = match (kind.as_str(), axes) {
        ("all", (None, None, None)) => Selector::All {},
        ("scope", (Some(scope), None, None)) => Selector::Scope { scope },
        ("project", (None, Some(project), None)) => Selector::Project { project },
        ("scope_project", (Some(scope), Some(project), include_unscoped)) => {
            Selector::ScopeProject {
                scope,
                project,
                include_unscoped: include_unscoped.unwrap_or(false),
            }
        }
        ("all" | "scope" | "project" | "scope_project", _) => {
            return Err(invalid("the selector's axes do not match its kind"));
        }
        _ => return Err(invalid("kind must be all, scope, project or scope_project")),
    };
    let selector = selector.validated()?;
    let sections: Vec<String> = pairs
        .iter()
        .filter(|(key, _)| key == "sections")
        .flat_map(|(_, value)| value.split(',').map(str::to_string).collect::<Vec<_>>())
        .collect();
    let section_limit = get("sectionLimit")
        .map(|limit| strict::strict_integer("sectionLimit", &limit))
        .transpose()?;
    Ok(proto::BriefingRequest {
        selector: Some(selector.to_proto()),
        mode: get("mode"),
        sections,
        section_limit,
    })
}

fn commitment_section(section: proto::CommitmentSection) -> CommitmentSection {
    CommitmentSection {
        count: section.count,
        has_more: section.has_more,
        items: section
            .items
            .into_iter()
            .map(|item| CommitmentItem {
                due_at: optional_iso(item.due_at.as_ref()),
                id: item.id,
                memory_id: item.memory_id,
                topic: item.topic,
                status: item.status,
                overdue: item.overdue,
            })
            .collect(),
    }
}

fn memory_section(section: proto::MemorySection) -> MemorySection {
    MemorySection {
        count: section.count,
        items: section
            .items
            .into_iter()
            .map(|item| MemoryItem {
                recorded_at: iso_of(item.recorded_at.as_ref()),
                updated_at: iso_of(item.updated_at.as_ref()),
                id: item.id,
                memory_type: item.memory_type,
                topic: item.topic,
                scope: item.scope,
                project: item.project,
            })
            .collect(),
    }
}

/// The live briefing through a selector; sections not asked for are absent
///
/// Commitments, overdue, blockers, stale candidates, recent decisions and preferences. A read:
/// it writes nothing.
#[utoipa::path(
    get,
    path = "/api/v1/briefing",
    tag = "briefing",
    operation_id = "getBriefing",
    params(
        ("kind" = inline(SelectorKind), Query),
        ("scope" = inline(Option<Scope>), Query),
        ("project" = inline(Option<Identifier<256>>), Query),
        ("includeUnscoped" = Option<bool>, Query),
        ("mode" = inline(Option<BriefingMode>), Query),
        ("sections" = inline(Option<BriefingSections>), Query, style = Form, explode,
            description = "Repeated or comma-separated."),
        ("sectionLimit" = Option<u32>, Query, minimum = 1, maximum = 100),
    ),
    responses(
        (status = 200, description = "success", body = BriefingAnswer),
        errors::InvalidInput,
    ),
)]
pub async fn briefing(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<BriefingAnswer>> {
    let request = briefing_request(query.as_deref())?;
    let answer = rpc!(state.provenance.briefing(&call, request))?;
    Ok(Json(BriefingAnswer {
        selector: Selector::from_proto(answer.selector)?,
        mode: answer.mode,
        generated_at: iso_of(answer.generated_at.as_ref()),
        commitments: answer.commitments.map(commitment_section),
        overdue: answer.overdue.map(commitment_section),
        blockers: answer.blockers.map(memory_section),
        stale_candidates: answer.stale_candidates.map(memory_section),
        recent_decisions: answer.recent_decisions.map(memory_section),
        preferences: answer.preferences.map(memory_section),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_queries() {
        let ok = [
            "kind=all",
            "kind=scope&scope=work",
            "kind=project&project=my%20repo",
            "kind=scope_project&scope=work&project=baton&includeUnscoped=true",
            "kind=all&mode=full&sections=commitments,overdue&sectionLimit=5",
            "kind=all&sections=commitments&sections=blockers",
        ];
        for query in ok {
            assert!(briefing_request(Some(query)).is_ok(), "{query}");
        }
        let bad = [
            "",
            "scope=work",
            "kind=scope",
            "kind=all&scope=work",
            "kind=project&project=p&scope=s",
            "kind=scope&scope=work&includeUnscoped=true",
            "kind=scope_project&scope=w&project=p&includeUnscoped=yes",
            "kind=everything",
            "kind=all&sectionLimit=x",
            "kind=all&kind=all",
            "kind=all&extra=1",
            "kind=scope&scope=Work",
        ];
        for query in bad {
            assert!(briefing_request(Some(query)).is_err(), "{query}");
        }
        let sections = briefing_request(Some(
            "kind=all&sections=commitments&sections=blockers,overdue",
        ))
        .expect("valid")
        .sections;
        assert_eq!(sections, vec!["commitments", "blockers", "overdue"]);
    }
}
