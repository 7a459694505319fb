//! A session known only from uploaded transcripts: its agent tree with cost per agent, its
//! project, hosts and activity window. No hook reported it, so it has no run, liveness,
//! nudges or closer passes. A session a hook did report redirects to its run's page, so each
//! session has one page.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use baton_kit::clock::from_timestamp;
use baton_kit::error::ErrorCode;
use baton_proto::usage::v1 as usage;

use crate::console::page::{self, Chrome};
use crate::console::pages::session::TreeView;
use crate::console::pages::session_sources;
use crate::console::section::Section;
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "console/transcript_session.html")]
pub struct TranscriptSessionPage {
    pub chrome: Chrome,
    pub agent: String,
    pub session_id: String,
    pub project: String,
    pub hosts: String,
    pub first_activity: Option<Moment>,
    pub last_activity: Option<Moment>,
    pub tree: Section<TreeView>,
}

/// The page of `(agent, session_id)`, path segments percent-encoded.
pub fn link(agent: &str, session_id: &str) -> String {
    let encode = |text: &str| {
        url::form_urlencoded::byte_serialize(text.as_bytes())
            .collect::<String>()
            .replace('+', "%20")
    };
    format!(
        "/console/transcripts/{}/{}",
        encode(agent),
        encode(session_id)
    )
}

/// `GET /console/transcripts/{agent}/{session_id}`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((agent, session_id)): Path<(String, String)>,
) -> Response {
    let (Ok(agent), Ok(session_id)) = (
        baton_kit::text::agent(&agent),
        baton_kit::text::session_id(&session_id),
    ) else {
        return page::not_found(&viewer);
    };
    let key = (agent.clone(), session_id.clone());
    match session_sources::hook_runs(&state, &viewer, vec![key]).await {
        Ok(runs) => {
            if let Some(run_id) = runs.into_values().next() {
                return Redirect::to(&format!("/console/sessions/{run_id}")).into_response();
            }
        }
        Err(status) => return page::from_status(&viewer, "registry", &status),
    }
    let tree = rpc!(state.usage.get_tree(
        &viewer.call,
        usage::GetTreeRequest {
            agent: agent.clone(),
            session_id: session_id.clone(),
        },
    ));
    let mut page = TranscriptSessionPage {
        chrome: Chrome::new(&viewer, "sessions", "Session"),
        agent,
        session_id,
        project: String::new(),
        hosts: String::new(),
        first_activity: None,
        last_activity: None,
        tree: Section::default(),
    };
    match tree {
        Ok(answer) => {
            let Some(session) = answer.session.as_ref() else {
                return page::not_found(&viewer);
            };
            let moment = |timestamp: Option<&baton_proto::Timestamp>| {
                timestamp
                    .and_then(from_timestamp)
                    .map(|instant| view::moment(instant, viewer.zone))
            };
            page.project = session.project_slug.clone();
            page.hosts = session.host_ids.join(", ");
            page.first_activity = moment(session.first_activity_at.as_ref());
            page.last_activity = moment(session.last_activity_at.as_ref());
            page.tree.value = TreeView::of(&answer);
        }
        Err(status) if ErrorCode::from_status(&status) == ErrorCode::NotFound => {
            return page::not_found(&viewer);
        }
        Err(status) => page.tree = Section::failed("usage", &status),
    }
    page::render(StatusCode::OK, &page)
}
