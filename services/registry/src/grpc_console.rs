//! The gRPC adapter for the console's list reads: validation of ListSessions and ListMachines
//! requests and the mapping of pages and machines onto `baton.registry.v1`.

use baton_kit::clock::{from_timestamp, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_kit::text;
use baton_proto::registry::v1 as proto;

use crate::console_reads::SessionSummary;
use crate::cursor::Cursor;
use crate::grpc::{RegistryGrpc, session_to_proto};
use crate::grpc_liveness::state_to_proto;
use crate::liveness::State;
use crate::machines::{self, Machine};
use crate::session_list::{self, SessionQuery};

/// An optional instant field: absent, or a valid instant.
fn optional_instant(
    field: &str,
    timestamp: Option<&baton_proto::Timestamp>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    timestamp
        .map(|timestamp| {
            from_timestamp(timestamp)
                .ok_or_else(|| ApiError::invalid_input(format!("{field} must be a valid instant")))
        })
        .transpose()
}

/// A state filter: UNSPECIFIED is none; an unknown value is refused.
fn state_filter(value: i32) -> Result<Option<State>, ApiError> {
    match proto::SessionState::try_from(value) {
        Ok(proto::SessionState::Unspecified) => Ok(None),
        Ok(proto::SessionState::Live) => Ok(Some(State::Live)),
        Ok(proto::SessionState::Idle) => Ok(Some(State::Idle)),
        Ok(proto::SessionState::Disconnected) => Ok(Some(State::Disconnected)),
        Ok(proto::SessionState::Closed) => Ok(Some(State::Closed)),
        Err(_) => Err(ApiError::invalid_input(
            "state must be live, idle, disconnected, closed or unspecified",
        )),
    }
}

/// A member filter: a member name, or the reserved word for sessions no member reported.
pub fn member_filter(text: &str) -> Result<String, ApiError> {
    if text == baton_kit::member::UNATTRIBUTED {
        return Ok(text.to_string());
    }
    baton_kit::member::member(text)
}

/// Validates a ListSessions request.
pub fn session_query_of(request: &proto::ListSessionsRequest) -> Result<SessionQuery, ApiError> {
    let opened_from = optional_instant("openedFrom", request.opened_from.as_ref())?;
    let opened_to = optional_instant("openedTo", request.opened_to.as_ref())?;
    session_list::window(opened_from, opened_to)?;
    Ok(SessionQuery {
        project: request.project.as_deref().map(text::project).transpose()?,
        agent: request.agent.as_deref().map(text::agent).transpose()?,
        state: state_filter(request.state)?,
        opened_from,
        opened_to,
        member: request.member.as_deref().map(member_filter).transpose()?,
        limit: session_list::limit(request.limit)?,
        cursor: request.cursor.as_deref().map(Cursor::parse).transpose()?,
    })
}

fn summary_to_proto(
    summary: &SessionSummary,
    lease: crate::session::Lease,
    call: &CallContext,
    position: String,
) -> proto::SessionSummary {
    proto::SessionSummary {
        session: Some(session_to_proto(
            &summary.session,
            lease.of(&summary.session, call.now),
        )),
        state: state_to_proto(summary.state).into(),
        host_id: summary.host_id.clone(),
        follows_session_run_id: summary.follows.map(|id| id.to_string()),
        position,
        members: summary.members.clone(),
    }
}

/// Most keys one FindSessions call may ask about.
pub const MAX_FIND_KEYS: usize = 200;

/// Validates FindSessions' keys: 1..=[`MAX_FIND_KEYS`], each a valid harness and session id;
/// duplicates collapse to one.
pub fn find_keys_of(
    request: &proto::FindSessionsRequest,
) -> Result<Vec<(String, String)>, ApiError> {
    if request.keys.is_empty() || request.keys.len() > MAX_FIND_KEYS {
        return Err(ApiError::invalid_input(format!(
            "keys must hold 1 to {MAX_FIND_KEYS} sessions"
        )));
    }
    let mut keys = Vec::with_capacity(request.keys.len());
    for key in &request.keys {
        let pair = (text::agent(&key.agent)?, text::session_id(&key.session_id)?);
        if !keys.contains(&pair) {
            keys.push(pair);
        }
    }
    Ok(keys)
}

fn machine_to_proto(machine: &Machine) -> proto::Machine {
    proto::Machine {
        host_id: machine.host_id.clone(),
        host_label: machine.host_label.clone(),
        clients: machine
            .clients
            .iter()
            .map(|client| proto::MachineClient {
                client: client.client.clone(),
                client_version: client.client_version.clone(),
                host_client: client.host_client.clone(),
            })
            .collect(),
        last_pulse_at: Some(to_timestamp(machine.last_pulse_at)),
        live: machine.live,
        idle: machine.idle,
        disconnected: machine.disconnected,
        sessions: machine
            .sessions
            .iter()
            .map(|session| proto::MachineSession {
                session_run_id: session.session_run_id.to_string(),
                agent: session.agent.clone(),
                session_id: session.session_id.clone(),
                project: session.project.clone(),
                state: state_to_proto(session.state).into(),
                opened_at: Some(to_timestamp(session.opened_at)),
                last_pulse_at: Some(to_timestamp(session.last_pulse_at)),
                pid: u32::try_from(session.pid).unwrap_or(0),
            })
            .collect(),
    }
}

impl RegistryGrpc {
    pub(crate) async fn list_sessions_rpc(
        &self,
        call: &CallContext,
        request: &proto::ListSessionsRequest,
    ) -> Result<proto::ListSessionsResponse, ApiError> {
        let query = session_query_of(request)?;
        let page = self
            .registry
            .list_sessions(call.tenant_id, &query, call.now)
            .await?;
        tracing::Span::current()
            .record("sessions", page.sessions.len())
            .record("more", page.next_cursor.is_some());
        let lease = self.registry.lease();
        Ok(proto::ListSessionsResponse {
            sessions: page
                .sessions
                .iter()
                .map(|summary| {
                    let position = Cursor {
                        opened_at: summary.session.opened_at,
                        id: summary.session.id,
                    };
                    summary_to_proto(summary, lease, call, position.encode())
                })
                .collect(),
            next_cursor: page.next_cursor.map(|cursor| cursor.encode()),
        })
    }

    pub(crate) async fn find_sessions_rpc(
        &self,
        call: &CallContext,
        request: &proto::FindSessionsRequest,
    ) -> Result<proto::FindSessionsResponse, ApiError> {
        let keys = find_keys_of(request)?;
        let found = self
            .registry
            .find_sessions(call.tenant_id, &keys, call.now)
            .await?;
        tracing::Span::current()
            .record("keys", keys.len())
            .record("found", found.len());
        let lease = self.registry.lease();
        Ok(proto::FindSessionsResponse {
            sessions: found
                .iter()
                .map(|summary| summary_to_proto(summary, lease, call, String::new()))
                .collect(),
        })
    }

    pub(crate) async fn list_machines_rpc(
        &self,
        call: &CallContext,
        request: &proto::ListMachinesRequest,
    ) -> Result<proto::ListMachinesResponse, ApiError> {
        let given = optional_instant("since", request.since.as_ref())?;
        let since = machines::since(given, call.now)?;
        let limit = machines::limit(request.limit)?;
        let listed = self
            .registry
            .list_machines(call.tenant_id, since, limit, call.now)
            .await?;
        tracing::Span::current()
            .record("machines", listed.machines.len())
            .record("truncated", listed.truncated);
        Ok(proto::ListMachinesResponse {
            machines: listed.machines.iter().map(machine_to_proto).collect(),
            truncated: listed.truncated,
        })
    }
}
