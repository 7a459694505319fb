//! One session: its process episodes on a timeline, the `/clear` predecessor and successor,
//! its agent tree with status and cost per agent, the nudge attempts, and the closer's passes
//! with each verdict's evidence and an Undo for each resolve.
//!
//! The run is looked up first: a run id of another tenant is not found exactly like one that
//! never existed. The other reads go out together; a failed optional read (tree, nudges,
//! passes) leaves its section saying so instead of failing the page.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use baton_proto::Timestamp;
use baton_proto::closer::v1 as closer;
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;
use baton_proto::usage::v1 as usage;

use crate::console::page::{self, Chrome};
use crate::console::pages::fleet::state_of;
use crate::console::section::Section;
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

mod agents;
mod passes;

pub use agents::{AgentRow, Figures};
pub(crate) use agents::{agent_rows, session_figures};
use passes::pass_rows;
pub use passes::{EvidenceRow, PassRow, VerdictRow};

pub struct EpisodeRow {
    pub client: String,
    pub host_id: String,
    pub pid: u32,
    pub started: Moment,
    pub last_pulse: Moment,
    pub ended: Option<Moment>,
    pub end: String,
}

pub struct AttemptRow {
    pub armed: Moment,
    pub finalized: Option<Moment>,
    pub outcome: String,
}

#[derive(Template)]
#[template(path = "console/session.html")]
pub struct SessionPage {
    pub chrome: Chrome,
    pub run_id: String,
    pub agent: String,
    pub session_id: String,
    pub project: String,
    pub state: &'static str,
    pub state_class: &'static str,
    pub epoch: i64,
    pub opened: Moment,
    pub closed: Option<Moment>,
    pub last_seen: Moment,
    pub triage: String,
    pub follows: Option<String>,
    pub followed_by: Option<String>,
    pub episodes: Section<Vec<EpisodeRow>>,
    pub tree: Section<TreeView>,
    pub attempts: Section<Vec<AttemptRow>>,
    pub attempts_count: u32,
    pub passes: Section<Vec<PassRow>>,
    pub notice: Option<String>,
}

/// The agents-and-cost part (`tree_section.html`), shared with a transcript-only session's
/// page.
#[derive(Default)]
pub struct TreeView {
    pub agents: Vec<AgentRow>,
    pub figures: Option<Figures>,
    /// Why it is flagged as running away now, empty when not.
    pub runaway: String,
}

impl TreeView {
    pub(crate) fn of(answer: &usage::GetTreeResponse) -> TreeView {
        TreeView {
            agents: agent_rows(answer),
            figures: Some(session_figures(answer)),
            runaway: answer
                .session
                .as_ref()
                .map(|session| session.runaway.join(", "))
                .unwrap_or_default(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionQuery {
    undone: Option<String>,
}

fn moment(viewer: &Viewer, timestamp: Option<&Timestamp>) -> Option<Moment> {
    view::moment_of(timestamp, viewer.zone)
}

fn required(viewer: &Viewer, timestamp: Option<&Timestamp>) -> Moment {
    moment(viewer, timestamp)
        .unwrap_or_else(|| view::moment(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH, viewer.zone))
}

/// How an episode ended, in words: a process that went away without an end reads
/// `outcome unknown`.
pub fn episode_end(ended: bool, reason: Option<&str>, newest: bool, session_state: &str) -> String {
    match (ended, reason) {
        (true, Some("session_closed")) => "ended with the session".to_string(),
        (true, Some("process_exited")) => {
            "process exited without an end — outcome unknown".to_string()
        }
        (true, Some("stopped")) => "sidecar stopped".to_string(),
        (true, _) => "ended".to_string(),
        (false, _) if newest && session_state == "disconnected" => {
            "stopped pulsing — outcome unknown".to_string()
        }
        (false, _) if session_state == "closed" => "no end reported".to_string(),
        (false, _) => "running".to_string(),
    }
}

fn episodes(viewer: &Viewer, read: &registry::GetLivenessResponse, state: &str) -> Vec<EpisodeRow> {
    let mut episodes: Vec<&registry::Episode> = read.episodes.iter().collect();
    episodes.sort_by_key(|episode| episode.started_at.as_ref().map(|at| (at.seconds, at.nanos)));
    let last = episodes.len().saturating_sub(1);
    episodes
        .iter()
        .enumerate()
        .map(|(index, episode)| {
            let mut client = episode.client.clone();
            if let Some(version) = &episode.client_version {
                client = format!("{client} {version}");
            }
            EpisodeRow {
                client,
                host_id: episode.host_id.clone(),
                pid: episode.pid,
                started: required(viewer, episode.started_at.as_ref()),
                last_pulse: required(viewer, episode.last_pulse_at.as_ref()),
                ended: moment(viewer, episode.ended_at.as_ref()),
                end: episode_end(
                    episode.ended_at.is_some(),
                    episode.end_reason.as_deref(),
                    index == last,
                    state,
                ),
            }
        })
        .collect()
}

/// `GET /console/sessions/{run_id}`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(run_id): Path<String>,
    query: Result<Query<SessionQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(run_id) = baton_kit::text::session_run_id("sessionRunId", &run_id) else {
        return page::not_found(&viewer);
    };
    let run_id = run_id.to_string();
    let lookup = registry::GetSessionRequest {
        lookup: Some(registry::get_session_request::Lookup::SessionRunId(
            run_id.clone(),
        )),
    };
    let session = match rpc!(state.registry.get_session(&viewer.call, lookup)) {
        Ok(answer) => match answer.session {
            Some(session) => session,
            None => return page::not_found(&viewer),
        },
        Err(status) => return page::from_status(&viewer, "registry", &status),
    };
    let outbound = &state.outbound;
    let call = &viewer.call;
    let (mut registry, mut usage_client) = (state.registry.clone(), state.usage.clone());
    let (mut triage_client, mut attempts_client) = (state.triage.clone(), state.triage.clone());
    let mut closer_client = state.closer.clone();
    let (liveness, tree, triage_state, attempts, passes) = tokio::join!(
        registry.get_liveness(outbound.request(
            call,
            registry::GetLivenessRequest {
                session_run_id: run_id.clone(),
            }
        )),
        usage_client.get_tree(outbound.request(
            call,
            usage::GetTreeRequest {
                agent: session.agent.clone(),
                session_id: session.session_id.clone(),
            }
        )),
        triage_client.get_state(outbound.request(
            call,
            triage::GetStateRequest {
                session_run_id: run_id.clone(),
            }
        )),
        attempts_client.list_attempts(outbound.request(
            call,
            triage::ListAttemptsRequest {
                session_run_id: run_id.clone(),
            }
        )),
        closer_client.list_passes(outbound.request(
            call,
            closer::ListPassesRequest {
                session_run_id: run_id.clone(),
            }
        )),
    );
    let liveness = liveness.map(tonic::Response::into_inner);
    let state_code = liveness
        .as_ref()
        .map_or(registry::SessionState::Unspecified as i32, |read| {
            read.state
        });
    let (state_name, state_label, state_class) = state_of(state_code);
    let (follows, followed_by) = liveness.as_ref().map_or((None, None), |read| {
        (
            read.follows_session_run_id.clone(),
            read.followed_by_session_run_id.clone(),
        )
    });
    let episodes = match &liveness {
        Ok(read) => Section {
            value: episodes(&viewer, read, state_name),
            error: None,
        },
        Err(status) => Section::failed("registry", status),
    };
    let tree = Section::fetched_or_empty("usage", tree, |answer| TreeView::of(&answer));
    let mut attempts_count = 0;
    let attempts = Section::fetched("triage", attempts, |answer| {
        attempts_count = answer.count;
        answer
            .items
            .iter()
            .map(|attempt| AttemptRow {
                armed: required(&viewer, attempt.armed_at.as_ref()),
                finalized: moment(&viewer, attempt.finalized_at.as_ref()),
                outcome: attempt
                    .outcome
                    .clone()
                    .unwrap_or_else(|| "in flight".to_string()),
            })
            .collect()
    });
    let passes = Section::fetched("closer", passes, |answer| {
        pass_rows(&viewer, &answer.passes)
    });
    let notice = query
        .ok()
        .and_then(|Query(query)| query.undone)
        .filter(|id| uuid::Uuid::parse_str(id).is_ok())
        .map(|id| {
            format!("Commitment {id} is open again; the closer will not resolve it for this pass.")
        });
    let page = SessionPage {
        chrome: Chrome::new(
            &viewer,
            "sessions",
            format!("Session {}", session.session_id),
        ),
        run_id,
        agent: session.agent.clone(),
        session_id: session.session_id.clone(),
        project: session.project.clone().unwrap_or_default(),
        state: state_label,
        state_class,
        epoch: session.activation_epoch,
        opened: required(&viewer, session.opened_at.as_ref()),
        closed: moment(&viewer, session.closed_at.as_ref()),
        last_seen: required(&viewer, session.last_seen_at.as_ref()),
        triage: match triage_state {
            Ok(answer) => answer.into_inner().triage_status,
            Err(_) => "unavailable".to_string(),
        },
        follows,
        followed_by,
        episodes,
        tree,
        attempts,
        attempts_count,
        passes,
        notice,
    };
    page::render(StatusCode::OK, &page)
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
