//! `GET /api/v1/agent-sessions/{sessionRunId}/events`: the typed provenance read (CONTRACT
//! section 7, table I).

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_kit::text;
use baton_proto::provenance::v1 as proto;

use crate::api_schema::enums::{ActorKind, EventKind};
use crate::api_schema::text::{ContractUuid, Timestamp};
use crate::api_schema::{Bounded, errors};
use crate::path_ids::RunIdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::iso_of;
use crate::routes::sessions::unknown_run_is_invalid;
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict;

/// The fewest and most events a page may ask for.
const PAGE_MIN: i64 = 1;
const PAGE_MAX: i64 = 100;

/// One event of a run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    #[schema(schema_with = ContractUuid::schema)]
    pub id: String,
    #[schema(schema_with = ContractUuid::schema)]
    pub memory_id: String,
    #[schema(schema_with = EventKind::schema)]
    pub event_kind: String,
    #[schema(schema_with = ActorKind::schema)]
    pub actor_kind: String,
    #[schema(schema_with = ContractUuid::schema)]
    pub session_run_id: String,
    #[schema(schema_with = Timestamp::schema)]
    pub created_at: String,
}

/// A page of a run's events. `nextCursor` is absent (not null) on the last page.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEventsPage {
    #[schema(inline, max_items = 100)]
    pub items: Vec<RunEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = ContractUuid::schema)]
    pub next_cursor: Option<String>,
    pub truncated: bool,
}

/// `limit` as the document states it: the bound [`page_query`] checks.
type PageLimit = Bounded<PAGE_MIN, PAGE_MAX>;

/// The strict query: `cursor?` (uuid) and `limit?` (integer 1..100, default 50).
fn page_query(query: Option<&str>) -> Result<(Option<String>, Option<u32>), HttpError> {
    let pairs = strict::query_pairs(query)?;
    strict::only_keys(&pairs, &["cursor", "limit"])?;
    let cursor = strict::single(&pairs, "cursor")
        .map(|cursor| text::session_run_id("cursor", cursor).map(|id| id.to_string()))
        .transpose()?;
    let limit = strict::single(&pairs, "limit")
        .map(|limit| strict::strict_integer("limit", limit))
        .transpose()?;
    if limit.is_some_and(|limit| !(PAGE_MIN..=PAGE_MAX).contains(&i64::from(limit))) {
        return Err(HttpError::new(
            ErrorCode::InvalidInput,
            format!("limit must be {PAGE_MIN} to {PAGE_MAX}"),
        ));
    }
    Ok((cursor, limit))
}

/// A run's provenance events in id order, at most 500 (table I)
#[utoipa::path(
    get,
    path = "/api/v1/agent-sessions/{sessionRunId}/events",
    tag = "sessions",
    operation_id = "listSessionEvents",
    params(
        RunIdPath,
        ("cursor" = inline(Option<ContractUuid>), Query),
        ("limit" = inline(Option<PageLimit>), Query),
    ),
    responses(
        (status = 200, description = "success", body = RunEventsPage),
        errors::InvalidInput,
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(call): Caller,
    RunIdPath(run_id): RunIdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<RunEventsPage>> {
    let (cursor, limit) = page_query(query.as_deref())?;
    let request = proto::ListRunEventsRequest {
        session_run_id: run_id,
        cursor,
        limit,
    };
    let page = rpc!(state.provenance.list_run_events(&call, request))
        .map_err(|status| unknown_run_is_invalid(status.into()))?;
    Ok(Json(RunEventsPage {
        items: page
            .items
            .into_iter()
            .map(|event| RunEvent {
                created_at: iso_of(event.created_at.as_ref()),
                id: event.id,
                memory_id: event.memory_id,
                event_kind: event.event_kind,
                actor_kind: event.actor_kind,
                session_run_id: event.session_run_id,
            })
            .collect(),
        next_cursor: page.next_cursor,
        truncated: page.truncated,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_queries_are_strict() {
        assert_eq!(page_query(None).expect("empty"), (None, None));
        assert_eq!(page_query(Some("limit=7")).expect("valid").1, Some(7));
        for bad in [
            "cursor=nope",
            "limit=0",
            "limit=101",
            "limit=abc",
            "limit=1.5",
            "limit=",
            "cursro=x",
            "offset=1",
            "projection=x",
            "limit=1&limit=2",
            "limit=+5",
        ] {
            assert!(page_query(Some(bad)).is_err(), "{bad}");
        }
    }
}
