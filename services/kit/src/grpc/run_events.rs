//! The one read of provenance that two services make the same way: a run's visible event ids,
//! the first [`RUN_EVENT_CEILING`] of them (MAX_SESSION_EVENT_IDS). Triage keeps them as the
//! Stop handshake's watermark; the closer lists them to judge what a session completed.

use baton_proto::provenance::v1 as provenance;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use uuid::Uuid;

use crate::error::ApiError;
use crate::grpc::{Outbound, OutboundCall, TracedChannel};
use crate::text;

/// The per-run event ceiling (MAX_SESSION_EVENT_IDS).
pub const RUN_EVENT_CEILING: u32 = 500;

/// A run's visible event ids, oldest first, and whether it has more than the ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunEventIds {
    pub ids: Vec<Uuid>,
    pub truncated: bool,
}

/// Asks provenance for `run_id`'s visible event ids (never more than [`RUN_EVENT_CEILING`]); an
/// id that is not a uuid is provenance's fault and reads as an invalid `eventId`.
pub async fn run_event_ids(
    provenance: &ProvenanceClient<TracedChannel>,
    outbound: &Outbound,
    call: &OutboundCall,
    run_id: Uuid,
) -> Result<RunEventIds, ApiError> {
    let request = provenance::ListRunEventIdsRequest {
        session_run_id: run_id.to_string(),
        ceiling: RUN_EVENT_CEILING,
    };
    let answer = provenance
        .clone()
        .list_run_event_ids(outbound.request(call, request))
        .await?
        .into_inner();
    let ids = answer
        .ids
        .iter()
        .map(|id| text::session_run_id("eventId", id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RunEventIds {
        ids,
        truncated: answer.truncated,
    })
}
