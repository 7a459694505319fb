//! The closer's reads of the other contexts for its evidence listing and its report: each
//! figure comes from the context that owns it, over gRPC, never from another schema.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::clock::{from_timestamp, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::OutboundCall;
use baton_kit::text;
use baton_proto::provenance::v1 as provenance;
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;

use crate::links::Links;
use crate::undo::{Trail, TrailEvent};

/// Most ids per `CommitmentTrails` call (provenance's bound).
const TRAIL_BATCH: usize = 500;

/// Registry's part of the report.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BriefedRead {
    pub sessions_opened: u64,
    pub briefed: Vec<(Uuid, Uuid)>,
    pub truncated: bool,
}

fn uuid(field: &str, value: &str) -> Result<Uuid, ApiError> {
    text::session_run_id(field, value)
}

fn trail_of(trail: provenance::CommitmentTrail) -> Result<Trail, ApiError> {
    let events = trail
        .events
        .into_iter()
        .map(|event| {
            Ok(TrailEvent {
                kind: event.event_kind,
                actor: event.actor_kind,
                // A stamp that is not a run id names no run of ours.
                run: event
                    .session_run_id
                    .as_deref()
                    .and_then(|run| Uuid::parse_str(run).ok()),
                at: event
                    .created_at
                    .as_ref()
                    .and_then(from_timestamp)
                    .ok_or_else(|| {
                        ApiError::internal("provenance answered an event without time")
                    })?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Trail {
        memory_id: uuid("trails[].memoryId", &trail.memory_id)?,
        status: trail.status,
        events,
    })
}

impl Links {
    /// The trails of `memory_ids` (distinct), in batches provenance accepts.
    pub async fn trails(
        &self,
        call: &OutboundCall,
        memory_ids: &[Uuid],
    ) -> Result<Vec<Trail>, ApiError> {
        let mut distinct: Vec<Uuid> = memory_ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut trails = Vec::with_capacity(distinct.len());
        for batch in distinct.chunks(TRAIL_BATCH) {
            let request = provenance::CommitmentTrailsRequest {
                memory_ids: batch.iter().map(ToString::to_string).collect(),
            };
            let answer = self
                .provenance
                .clone()
                .commitment_trails(self.outbound.request(call, request))
                .await?
                .into_inner();
            for trail in answer.trails {
                trails.push(trail_of(trail)?);
            }
        }
        Ok(trails)
    }

    /// Whether the closer resolved `memory_id` for `run`: the first resolve in its trail
    /// stamped with the run is the worker's.
    pub async fn resolved_by_closer_of(
        &self,
        call: &OutboundCall,
        memory_id: Uuid,
        run: Uuid,
    ) -> Result<bool, ApiError> {
        let trails = self.trails(call, &[memory_id]).await?;
        Ok(crate::undo::fate(trails.first(), run) == crate::undo::Fate::ByCloser)
    }

    /// Sessions opened since `since` and their briefed pairs, at most `limit`.
    pub async fn briefed_since(
        &self,
        call: &OutboundCall,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<BriefedRead, ApiError> {
        let request = registry::BriefedSinceRequest {
            since: Some(to_timestamp(since)),
            limit,
        };
        let answer = self
            .registry
            .clone()
            .briefed_since(self.outbound.request(call, request))
            .await?
            .into_inner();
        let briefed = answer
            .briefed
            .iter()
            .map(|pair| {
                Ok((
                    uuid("briefed[].sessionRunId", &pair.session_run_id)?,
                    uuid("briefed[].memoryId", &pair.memory_id)?,
                ))
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        Ok(BriefedRead {
            sessions_opened: answer.sessions_opened,
            briefed,
            truncated: answer.truncated,
        })
    }

    /// Triage's nudge counts since `since`.
    pub async fn nudge_counts(
        &self,
        call: &OutboundCall,
        since: DateTime<Utc>,
    ) -> Result<triage::NudgeCountsResponse, ApiError> {
        let request = triage::NudgeCountsRequest {
            since: Some(to_timestamp(since)),
        };
        Ok(self
            .triage
            .clone()
            .nudge_counts(self.outbound.request(call, request))
            .await?
            .into_inner())
    }

    /// Provenance's write counts since `since`.
    pub async fn write_counts(
        &self,
        call: &OutboundCall,
        since: DateTime<Utc>,
    ) -> Result<provenance::WriteCountsResponse, ApiError> {
        let request = provenance::WriteCountsRequest {
            since: Some(to_timestamp(since)),
        };
        Ok(self
            .provenance
            .clone()
            .write_counts(self.outbound.request(call, request))
            .await?
            .into_inner())
    }
}
