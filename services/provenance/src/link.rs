//! Write provenance through registry (DESIGN section 4, rules 1 and 2; CONTRACT table E).
//!
//! A write resolves its stamp before it writes: a run id the caller passed is attached by
//! registry (which may resurrect it), a missing one falls back to the project's single open
//! run, and the closer's pre-resolved id is stamped as is. A foreign or unknown id fails the
//! write with 400 before anything is persisted.

use baton_kit::grpc::TracedChannel;
use uuid::Uuid;

use baton_kit::error::{ApiError, ErrorCode};
use baton_kit::grpc::{Outbound, OutboundCall, session_read};
use baton_kit::text;
use baton_proto::provenance::v1 as proto;
use baton_proto::registry::v1 as registry;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;

/// How a write asked to be tied to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Nothing given: the single-open default.
    Default,
    /// A run id to attach.
    Given(Uuid),
    /// A run id to stamp without attaching (the closer's writes).
    PreResolved(Uuid),
}

impl Provenance {
    pub fn from_proto(provenance: Option<&proto::WriteProvenance>) -> Result<Provenance, ApiError> {
        use proto::write_provenance::Source;
        match provenance.and_then(|provenance| provenance.source.as_ref()) {
            None => Ok(Provenance::Default),
            Some(Source::SessionRunId(id)) => {
                Ok(Provenance::Given(text::session_run_id("sessionRunId", id)?))
            }
            Some(Source::PreResolvedSessionRunId(id)) => Ok(Provenance::PreResolved(
                text::session_run_id("preResolvedSessionRunId", id)?,
            )),
        }
    }
}

/// Registry, as provenance needs it.
#[derive(Debug, Clone)]
pub struct RegistryLink {
    client: SessionRegistryClient<TracedChannel>,
    outbound: Outbound,
}

fn unknown_run(error: tonic::Status) -> ApiError {
    let error = ApiError::from(error);
    if error.code == ErrorCode::NotFound {
        ApiError::invalid_input("unknown sessionRunId")
    } else {
        error
    }
}

impl RegistryLink {
    pub fn new(channel: TracedChannel, outbound: Outbound) -> RegistryLink {
        RegistryLink {
            client: SessionRegistryClient::new(channel),
            outbound,
        }
    }

    /// The run the write's events are stamped with, if any. `project` is the project of the
    /// memory being written (for resolve and archive: the target's).
    pub async fn stamp(
        &self,
        call: &OutboundCall,
        provenance: Provenance,
        project: Option<&str>,
    ) -> Result<Option<Uuid>, ApiError> {
        match provenance {
            Provenance::PreResolved(id) => Ok(Some(id)),
            Provenance::Given(id) => {
                let request = registry::AttachWriteRequest {
                    session_run_id: id.to_string(),
                };
                let answer = self
                    .client
                    .clone()
                    .attach_write(self.outbound.request(call, request))
                    .await
                    .map_err(unknown_run)?
                    .into_inner();
                if !answer.attached {
                    return Ok(None);
                }
                text::session_run_id("sessionRunId", &answer.session_run_id).map(Some)
            }
            Provenance::Default => {
                let request = registry::SoleOpenSessionRequest {
                    project: project.map(str::to_string),
                };
                let answer = self
                    .client
                    .clone()
                    .sole_open_session(self.outbound.request(call, request))
                    .await
                    .map_err(ApiError::from)?
                    .into_inner();
                answer
                    .session_run_id
                    .map(|id| text::session_run_id("sessionRunId", &id))
                    .transpose()
            }
        }
    }

    /// Fails with 400 when `id` is not one of the tenant's runs; never attaches or refreshes.
    pub async fn check_owned(&self, call: &OutboundCall, id: Uuid) -> Result<(), ApiError> {
        self.get_run(call, id).await.map_err(unknown_run)
    }

    /// Whether `id` is one of the tenant's runs (NOT_FOUND stays NOT_FOUND).
    pub async fn require_run(&self, call: &OutboundCall, id: Uuid) -> Result<(), ApiError> {
        self.get_run(call, id).await.map_err(ApiError::from)
    }

    /// Reads run `id` from registry: an answer means it is one of the tenant's runs.
    async fn get_run(&self, call: &OutboundCall, id: Uuid) -> Result<(), tonic::Status> {
        session_read::session(&self.client, &self.outbound, call, session_read::by_run(id))
            .await
            .map(drop)
    }
}

/// The provenance payload every event of a write carries: `{"sessionRunId": <lowercase>}`.
pub fn payload(stamp: Option<Uuid>) -> Option<serde_json::Value> {
    stamp.map(|id| serde_json::json!({ "sessionRunId": id.to_string() }))
}
