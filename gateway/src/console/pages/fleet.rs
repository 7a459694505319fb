//! The fleet: every machine whose sidecar pulsed in the last week, its harnesses and versions,
//! and its sessions by state. The machine list is a fragment the page re-fetches every two
//! seconds (htmx polling), so a new session appears and a killed one turns `disconnected`
//! without a reload.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Duration;

use baton_kit::clock::{from_timestamp, to_timestamp};
use baton_proto::registry::v1 as registry;

use crate::console::page::{self, Chrome};
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

/// Machines that pulsed within this long are listed.
const WINDOW_DAYS: i64 = 7;

pub struct SessionRow {
    pub run_id: String,
    pub agent: String,
    pub session_id: String,
    pub project: String,
    pub state: &'static str,
    pub state_class: &'static str,
    pub opened: Moment,
    pub last_pulse: Moment,
    pub last_pulse_ago: String,
    pub pid: u32,
}

pub struct MachineRow {
    pub host_id: String,
    pub label: Option<String>,
    pub clients: Vec<String>,
    pub last_pulse: Moment,
    pub last_pulse_ago: String,
    pub live: u32,
    pub idle: u32,
    pub disconnected: u32,
    pub sessions: Vec<SessionRow>,
}

#[derive(Template)]
#[template(path = "console/fleet_live.html")]
pub struct FleetLive {
    pub machines: Vec<MachineRow>,
    pub live: u32,
    pub idle: u32,
    pub disconnected: u32,
    pub truncated: bool,
    pub as_of: Moment,
}

#[derive(Template)]
#[template(path = "console/fleet.html")]
pub struct FleetPage {
    pub chrome: Chrome,
    pub live_html: String,
    /// Sessions flagged as running away now (`None`: usage could not say).
    pub runaway: Option<Vec<RunawayRow>>,
}

/// A session flagged as running away, as the fleet lists it.
pub struct RunawayRow {
    pub agent: String,
    pub session_id: String,
    pub reasons: String,
    pub cost: String,
    pub cost_usd: String,
    pub last_activity: String,
    pub link: String,
}

/// The sessions flagged as running away now, newest activity first (the last 30 days).
async fn runaway(state: &AppState, viewer: &Viewer) -> Option<Vec<RunawayRow>> {
    let request = baton_proto::usage::v1::ListSessionsRequest {
        runaway: true,
        limit: Some(50),
        ..Default::default()
    };
    match rpc!(state.usage.list_sessions(&viewer.call, request)) {
        Ok(answer) => Some(
            answer
                .sessions
                .iter()
                .map(|summary| {
                    let text = view::figure_text(&summary.figures.clone().unwrap_or_default());
                    RunawayRow {
                        agent: summary.agent.clone(),
                        session_id: summary.session_id.clone(),
                        reasons: summary.runaway.join(", "),
                        cost: text.cost,
                        cost_usd: text.cost_usd,
                        last_activity: summary
                            .last_activity_at
                            .as_ref()
                            .and_then(from_timestamp)
                            .map(|at| view::ago(at, viewer.now))
                            .unwrap_or_default(),
                        link: super::transcript_session::link(&summary.agent, &summary.session_id),
                    }
                })
                .collect(),
        ),
        Err(status) => {
            tracing::warn!(code = ?status.code(), "console: runaway sessions unavailable");
            None
        }
    }
}

/// `host-client` names, with versions, as one line per harness.
fn client_line(client: &registry::MachineClient) -> String {
    let mut line = client.client.clone();
    if let Some(version) = &client.client_version {
        line.push(' ');
        line.push_str(version);
    }
    if let Some(host) = client
        .host_client
        .as_ref()
        .filter(|host| **host != client.client)
    {
        line.push_str(" (in ");
        line.push_str(host);
        line.push(')');
    }
    line
}

fn state_name(state: i32) -> &'static str {
    match registry::SessionState::try_from(state) {
        Ok(registry::SessionState::Live) => "live",
        Ok(registry::SessionState::Idle) => "idle",
        Ok(registry::SessionState::Disconnected) => "disconnected",
        Ok(registry::SessionState::Closed) => "closed",
        _ => "unknown",
    }
}

pub fn state_of(state: i32) -> (&'static str, &'static str, &'static str) {
    let name = state_name(state);
    let (label, class) = view::state(name);
    (name, label, class)
}

fn moment_of(viewer: &Viewer, timestamp: Option<&baton_proto::Timestamp>) -> (Moment, String) {
    let instant = timestamp
        .and_then(from_timestamp)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
    (
        view::moment(instant, viewer.zone),
        view::ago(instant, viewer.now),
    )
}

fn machine_row(viewer: &Viewer, machine: &registry::Machine) -> MachineRow {
    let (last_pulse, last_pulse_ago) = moment_of(viewer, machine.last_pulse_at.as_ref());
    MachineRow {
        host_id: machine.host_id.clone(),
        label: machine.host_label.clone(),
        clients: machine.clients.iter().map(client_line).collect(),
        last_pulse,
        last_pulse_ago,
        live: machine.live,
        idle: machine.idle,
        disconnected: machine.disconnected,
        sessions: machine
            .sessions
            .iter()
            .map(|session| {
                let (_, state, state_class) = state_of(session.state);
                let (opened, _) = moment_of(viewer, session.opened_at.as_ref());
                let (last_pulse, last_pulse_ago) =
                    moment_of(viewer, session.last_pulse_at.as_ref());
                SessionRow {
                    run_id: session.session_run_id.clone(),
                    agent: session.agent.clone(),
                    session_id: session.session_id.clone(),
                    project: session.project.clone().unwrap_or_default(),
                    state,
                    state_class,
                    opened,
                    last_pulse,
                    last_pulse_ago,
                    pid: session.pid,
                }
            })
            .collect(),
    }
}

async fn live(state: &AppState, viewer: &Viewer) -> Result<FleetLive, Response> {
    let request = registry::ListMachinesRequest {
        since: Some(to_timestamp(viewer.now - Duration::days(WINDOW_DAYS))),
        limit: 100,
    };
    let answer = rpc!(state.registry.list_machines(&viewer.call, request))
        .map_err(|status| page::from_status(viewer, "registry", &status))?;
    let machines: Vec<MachineRow> = answer
        .machines
        .iter()
        .map(|machine| machine_row(viewer, machine))
        .collect();
    Ok(FleetLive {
        live: machines.iter().map(|machine| machine.live).sum(),
        idle: machines.iter().map(|machine| machine.idle).sum(),
        disconnected: machines.iter().map(|machine| machine.disconnected).sum(),
        machines,
        truncated: answer.truncated,
        as_of: view::moment(viewer.now, viewer.zone),
    })
}

/// `GET /console/fleet`.
pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Response {
    let live = match live(&state, &viewer).await {
        Ok(live) => live,
        Err(response) => return response,
    };
    let live_html = match live.render() {
        Ok(html) => html,
        Err(error) => {
            tracing::error!(error = %error, "console template failed to render");
            return page::unavailable("the page renderer");
        }
    };
    page::render(
        StatusCode::OK,
        &FleetPage {
            chrome: Chrome::new(&viewer, "fleet", "Fleet"),
            live_html,
            runaway: runaway(&state, &viewer).await,
        },
    )
}

/// `GET /console/fleet/live`: the machine list alone, for the page's polling.
pub async fn fragment(State(state): State<AppState>, viewer: Viewer) -> Response {
    match live(&state, &viewer).await {
        Ok(live) => page::render(StatusCode::OK, &live),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harness_line_names_its_version_and_its_host() {
        let client =
            |client: &str, version: Option<&str>, host: Option<&str>| registry::MachineClient {
                client: client.to_string(),
                client_version: version.map(str::to_string),
                host_client: host.map(str::to_string),
            };
        let table = [
            (
                client("claude-code", Some("2.1.332"), None),
                "claude-code 2.1.332",
            ),
            (client("codex", None, None), "codex"),
            (client("gemini", Some("0.61.0"), None), "gemini 0.61.0"),
            (
                client("claude-code", Some("2.1.3"), Some("cursor")),
                "claude-code 2.1.3 (in cursor)",
            ),
            (
                client("claude-code", None, Some("claude-code")),
                "claude-code",
            ),
        ];
        for (client, expected) in table {
            assert_eq!(client_line(&client), expected);
        }
    }
}
