//! The session list: newest first, keyset-paged by registry, filtered by project, harness,
//! liveness and opening date, each row with its state and epoch (registry), triage status and
//! nudges (triage), and tokens and cost (usage) — three batched reads per page, not one per
//! row. When triage or usage cannot answer, the list still shows what registry knows and says
//! which figures are missing.

use std::collections::HashMap;

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use baton_kit::clock::{from_timestamp, to_timestamp};
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;
use baton_proto::usage::v1 as usage;

use crate::console::filters::{self, Filters, HARNESSES, LIVENESS, RawFilters};
use crate::console::page::{self, Choice, Chrome};
use crate::console::pages::fleet::state_of;
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::state::AppState;

const PAGE_SIZE: u32 = 50;

pub struct Row {
    pub run_id: String,
    pub agent: String,
    pub session_id: String,
    pub project: String,
    pub state: &'static str,
    pub state_class: &'static str,
    pub epoch: i64,
    pub opened: Moment,
    pub triage: String,
    pub nudges: String,
    pub tokens: String,
    pub cost: String,
    pub cost_usd: String,
    pub unpriced: String,
}

#[derive(Template)]
#[template(path = "console/sessions.html")]
pub struct SessionsPage {
    pub chrome: Chrome,
    pub rows: Vec<Row>,
    pub error: Option<String>,
    pub missing: Vec<&'static str>,
    pub project: String,
    pub harness: String,
    pub liveness: String,
    pub from: String,
    pub to: String,
    pub harnesses: Vec<Choice>,
    pub livenesses: Vec<Choice>,
    pub next_link: Option<String>,
    pub first_link: Option<String>,
    pub filtered: bool,
}

fn state_filter(name: Option<&str>) -> registry::SessionState {
    match name {
        Some("live") => registry::SessionState::Live,
        Some("idle") => registry::SessionState::Idle,
        Some("disconnected") => registry::SessionState::Disconnected,
        Some("closed") => registry::SessionState::Closed,
        _ => registry::SessionState::Unspecified,
    }
}

fn empty_page(viewer: &Viewer, raw: &RawFilters, error: Option<String>) -> SessionsPage {
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    SessionsPage {
        chrome: Chrome::new(viewer, "sessions", "Sessions"),
        rows: Vec::new(),
        error,
        missing: Vec::new(),
        project: text(&raw.project),
        harness: text(&raw.harness),
        liveness: text(&raw.liveness),
        from: text(&raw.from),
        to: text(&raw.to),
        harnesses: page::choices(&HARNESSES, raw.harness.as_deref().unwrap_or_default()),
        livenesses: page::choices(&LIVENESS, raw.liveness.as_deref().unwrap_or_default()),
        next_link: None,
        first_link: None,
        filtered: false,
    }
}

async fn triage_states(
    state: &AppState,
    viewer: &Viewer,
    ids: Vec<String>,
) -> Option<HashMap<String, triage::RunState>> {
    if ids.is_empty() {
        return Some(HashMap::new());
    }
    let request = triage::GetStatesRequest {
        session_run_ids: ids,
    };
    match state
        .triage
        .clone()
        .get_states(state.outbound.request(&viewer.call, request))
        .await
    {
        Ok(answer) => Some(
            answer
                .into_inner()
                .states
                .into_iter()
                .map(|run| (run.session_run_id.clone(), run))
                .collect(),
        ),
        Err(status) => {
            tracing::warn!(code = ?status.code(), "console: triage states unavailable");
            None
        }
    }
}

async fn usage_figures(
    state: &AppState,
    viewer: &Viewer,
    refs: Vec<usage::SessionRef>,
) -> Option<HashMap<(String, String), usage::Figures>> {
    if refs.is_empty() {
        return Some(HashMap::new());
    }
    let request = usage::SessionFiguresRequest { sessions: refs };
    match state
        .usage
        .clone()
        .session_figures(state.outbound.request(&viewer.call, request))
        .await
    {
        Ok(answer) => Some(
            answer
                .into_inner()
                .sessions
                .into_iter()
                .map(|summary| {
                    (
                        (summary.agent, summary.session_id),
                        summary.figures.unwrap_or_default(),
                    )
                })
                .collect(),
        ),
        Err(status) => {
            tracing::warn!(code = ?status.code(), "console: usage figures unavailable");
            None
        }
    }
}

/// `GET /console/sessions`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    query: Result<Query<RawFilters>, QueryRejection>,
) -> Response {
    let raw = match query {
        Ok(Query(raw)) => raw,
        Err(_) => {
            let page = empty_page(
                &viewer,
                &RawFilters::default(),
                Some("Those filters are not ones this page knows.".to_string()),
            );
            return page::render(StatusCode::BAD_REQUEST, &page);
        }
    };
    let filters = match filters::parse(&raw) {
        Ok(filters) => filters,
        Err(message) => {
            return page::render(
                StatusCode::BAD_REQUEST,
                &empty_page(&viewer, &raw, Some(message)),
            );
        }
    };
    let (opened_from, opened_to) = filters::range(filters.from, filters.to, viewer.zone);
    let request = registry::ListSessionsRequest {
        project: filters.project.clone(),
        agent: filters.harness.clone(),
        state: state_filter(filters.liveness.as_deref()).into(),
        opened_from: opened_from.map(to_timestamp),
        opened_to: opened_to.map(to_timestamp),
        limit: PAGE_SIZE,
        cursor: filters.cursor.clone(),
    };
    let listed = match state
        .registry
        .clone()
        .list_sessions(state.outbound.request(&viewer.call, request))
        .await
    {
        Ok(answer) => answer.into_inner(),
        Err(status) => {
            if baton_kit::error::ErrorCode::from_status(&status)
                == baton_kit::error::ErrorCode::InvalidInput
            {
                let page = empty_page(
                    &viewer,
                    &raw,
                    Some(format!(
                        "Registry refused the filters: {}",
                        status.message()
                    )),
                );
                return page::render(StatusCode::BAD_REQUEST, &page);
            }
            return page::from_status(&viewer, "registry", &status);
        }
    };
    let sessions: Vec<registry::Session> = listed
        .sessions
        .iter()
        .filter_map(|summary| summary.session.clone())
        .collect();
    let ids = sessions
        .iter()
        .map(|session| session.session_run_id.clone())
        .collect();
    let refs = sessions
        .iter()
        .map(|session| usage::SessionRef {
            agent: session.agent.clone(),
            session_id: session.session_id.clone(),
        })
        .collect();
    let (triaged, figures) = tokio::join!(
        triage_states(&state, &viewer, ids),
        usage_figures(&state, &viewer, refs)
    );
    let mut missing = Vec::new();
    if triaged.is_none() {
        missing.push("triage status");
    }
    if figures.is_none() {
        missing.push("tokens and cost");
    }
    let rows = listed
        .sessions
        .iter()
        .filter_map(|summary| {
            let session = summary.session.as_ref()?;
            let (_, label, class) = state_of(summary.state);
            let opened = session
                .opened_at
                .as_ref()
                .and_then(from_timestamp)
                .unwrap_or(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
            let run = triaged
                .as_ref()
                .and_then(|states| states.get(&session.session_run_id));
            let usage = figures
                .as_ref()
                .map(|figures| figures.get(&(session.agent.clone(), session.session_id.clone())));
            let (tokens, cost, cost_usd, unpriced) = match usage {
                None => (
                    "unavailable".into(),
                    "unavailable".into(),
                    String::new(),
                    String::new(),
                ),
                Some(None) => (
                    "none uploaded".into(),
                    "—".into(),
                    String::new(),
                    String::new(),
                ),
                Some(Some(figures)) => {
                    let text = view::figure_text(figures);
                    (text.tokens, text.cost, text.cost_usd, text.unpriced)
                }
            };
            Some(Row {
                run_id: session.session_run_id.clone(),
                agent: session.agent.clone(),
                session_id: session.session_id.clone(),
                project: session.project.clone().unwrap_or_default(),
                state: label,
                state_class: class,
                epoch: session.activation_epoch,
                opened: view::moment(opened, viewer.zone),
                // Triage keeps no row for a run it never nudged: registry listed it, so it is
                // this tenant's run, and it reads idle with no nudge (as GetState answers).
                triage: match (&triaged, run) {
                    (None, _) => "unavailable".to_string(),
                    (Some(_), None) => "idle".to_string(),
                    (Some(_), Some(run)) => run.triage_status.clone(),
                },
                nudges: match (&triaged, run) {
                    (None, _) => "unavailable".to_string(),
                    (Some(_), None) => "0".to_string(),
                    (Some(_), Some(run)) => run.attempts.to_string(),
                },
                tokens,
                cost,
                cost_usd,
                unpriced,
            })
        })
        .collect();
    let filtered = filters != Filters::default();
    let first = Filters {
        cursor: None,
        ..filters.clone()
    };
    let mut page = empty_page(&viewer, &raw, None);
    page.rows = rows;
    page.missing = missing;
    page.filtered = filtered;
    page.next_link = listed.next_cursor.as_deref().map(|cursor| {
        format!(
            "/console/sessions?{}",
            filters::query_string(&filters, Some(cursor))
        )
    });
    page.first_link = filters
        .cursor
        .is_some()
        .then(|| format!("/console/sessions?{}", filters::query_string(&first, None)));
    page::render(StatusCode::OK, &page)
}
