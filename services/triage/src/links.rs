//! What triage asks other contexts: registry for the session row (never refreshing its lease),
//! provenance for a run's visible event ids.

use baton_kit::grpc::TracedChannel;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::clock::from_timestamp;
use baton_kit::error::ApiError;
use baton_kit::grpc::run_events::run_event_ids;
use baton_kit::grpc::session_read;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_kit::selector::Selector;
use baton_kit::text;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_proto::registry::v1 as registry;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;

use crate::decide::Listing;

pub use baton_kit::grpc::run_events::RUN_EVENT_CEILING as CEILING;

/// A briefed row as the debrief needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Briefed {
    pub id: String,
    pub topic: String,
    pub status: String,
}

/// The session facts triage decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFacts {
    pub run_id: Uuid,
    pub live: bool,
    /// Closed, explicitly or implicitly (a stale row is not closed).
    pub closed: bool,
    pub epoch: i64,
    pub opened_at: DateTime<Utc>,
    pub project: Option<String>,
    pub scope: Option<String>,
    pub selector: Selector,
    pub briefed: Vec<Briefed>,
}

/// Clients of registry and provenance.
#[derive(Debug, Clone)]
pub struct Links {
    registry: SessionRegistryClient<TracedChannel>,
    provenance: ProvenanceClient<TracedChannel>,
    outbound: Outbound,
}

impl Links {
    pub fn new(registry: TracedChannel, provenance: TracedChannel, outbound: Outbound) -> Links {
        Links {
            registry: SessionRegistryClient::new(registry),
            provenance: ProvenanceClient::new(provenance),
            outbound,
        }
    }

    /// The session for a natural key (404 when absent), read-only.
    pub async fn session_by_key(
        &self,
        call: &OutboundCall,
        agent: &str,
        session_id: &str,
    ) -> Result<SessionFacts, ApiError> {
        let lookup = registry::get_session_request::Lookup::Key(registry::SessionKey {
            agent: agent.to_string(),
            session_id: session_id.to_string(),
        });
        self.session(call, lookup).await
    }

    /// The session for a run id (404 when absent or foreign), read-only.
    pub async fn session_by_id(
        &self,
        call: &OutboundCall,
        run_id: Uuid,
    ) -> Result<SessionFacts, ApiError> {
        self.session(call, session_read::by_run(run_id)).await
    }

    async fn session(
        &self,
        call: &OutboundCall,
        lookup: registry::get_session_request::Lookup,
    ) -> Result<SessionFacts, ApiError> {
        let session = session_read::session(&self.registry, &self.outbound, call, lookup).await?;
        Ok(SessionFacts {
            run_id: text::session_run_id("sessionRunId", &session.session_run_id)?,
            live: session.liveness == registry::Liveness::Live as i32,
            closed: session.closed_at.is_some(),
            epoch: session.activation_epoch,
            opened_at: session
                .opened_at
                .as_ref()
                .and_then(from_timestamp)
                .ok_or_else(|| ApiError::internal("registry answered no openedAt"))?,
            project: session.project,
            scope: session.scope,
            selector: Selector::from_proto(session.selector)?,
            briefed: session
                .briefed_memories
                .into_iter()
                .map(|row| Briefed {
                    id: row.id,
                    topic: row.topic,
                    status: row.status,
                })
                .collect(),
        })
    }

    /// The run's visible event ids (the first [`CEILING`]) and whether it has more.
    pub async fn listing(&self, call: &OutboundCall, run_id: Uuid) -> Result<Listing, ApiError> {
        run_event_ids(&self.provenance, &self.outbound, call, run_id).await
    }
}
