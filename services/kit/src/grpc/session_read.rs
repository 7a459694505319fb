//! The one read of registry that three services make the same way: a session row by its
//! lookup. Provenance asks it to know a run is the tenant's, triage for the Stop handshake's
//! facts, the closer for the fence's epoch; each keeps what it needs of the row.

use baton_proto::registry::v1 as registry;
use baton_proto::registry::v1::get_session_request::Lookup;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;
use tonic::Status;
use uuid::Uuid;

use crate::grpc::{Outbound, OutboundCall, TracedChannel};

/// The lookup of a run by its id.
pub fn by_run(run_id: Uuid) -> Lookup {
    Lookup::SessionRunId(run_id.to_string())
}

/// Registry's row for `lookup`. Every refusal is passed on as registry answered it (NOT_FOUND
/// for a run that is absent or another tenant's); an answer without a row is INTERNAL, a fault
/// of registry's.
pub async fn session(
    registry: &SessionRegistryClient<TracedChannel>,
    outbound: &Outbound,
    call: &OutboundCall,
    lookup: Lookup,
) -> Result<registry::Session, Status> {
    let request = registry::GetSessionRequest {
        lookup: Some(lookup),
    };
    registry
        .clone()
        .get_session(outbound.request(call, request))
        .await?
        .into_inner()
        .session
        .ok_or_else(|| Status::internal("registry answered no session"))
}
