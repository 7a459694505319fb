//! The one list of sessions, newest first: every session a hook reported (registry, by opening)
//! and every session known only from uploaded transcripts (usage, by first activity), each
//! once (`session_merge`). Filtered by project, harness, liveness and opening date; a liveness
//! filter lists only hook-reported sessions (only they have one). Each hook row carries its
//! state and epoch (registry), triage status and nudges (triage), and tokens and cost (usage);
//! a transcript row its tokens and cost and "no hook". Batched reads per page, not one per row.
//! When triage or usage cannot answer, the list still shows what registry knows and says which
//! figures are missing.

use std::collections::HashMap;

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use baton_kit::clock::from_timestamp;
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;
use baton_proto::usage::v1 as usage;

use crate::console::filters::{self, Filters, HARNESSES, LIVENESS, RawFilters};
use crate::console::page::{self, Choice, Chrome};
use crate::console::pages::fleet::state_of;
use crate::console::pages::session_sources::{self as sources, Key, Window};
use crate::console::session_merge::{self, Entry, Fetched, Resume, Stream};
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::state::AppState;

const PAGE_SIZE: u32 = 50;

pub struct Row {
    /// Empty for a session no hook reported.
    pub run_id: String,
    pub link: String,
    pub agent: String,
    pub session_id: String,
    pub project: String,
    pub state: &'static str,
    pub state_class: &'static str,
    pub epoch: String,
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
    let resume = match filters.cursor.as_deref() {
        None => Resume::default(),
        Some(text) => match Resume::decode(text) {
            Some(resume) => resume,
            None => {
                let message = "that page link is damaged: start again from the first page";
                let page = empty_page(&viewer, &raw, Some(message.to_string()));
                return page::render(StatusCode::BAD_REQUEST, &page);
            }
        },
    };
    let (opened_from, opened_to) = filters::range(filters.from, filters.to, viewer.zone);
    let window = Window {
        filters: &filters,
        opened_from,
        opened_to,
        state: state_filter(filters.liveness.as_deref()),
        limit: PAGE_SIZE,
    };
    // Only hook-reported sessions have a liveness to filter on.
    let transcript_stream = if filters.liveness.is_some() {
        Stream::Done
    } else {
        resume.transcripts.clone()
    };
    let (hooks, transcripts) = tokio::join!(
        sources::hook_sessions(&state, &viewer, &window, &resume.hooks),
        sources::transcript_sessions(&state, &viewer, &window, &transcript_stream)
    );
    let hooks = match hooks {
        Ok(hooks) => hooks,
        Err(status) => return refused(&viewer, &raw, "Registry", &status),
    };
    let mut missing = Vec::new();
    let (transcripts, transcripts_read) = match transcripts {
        Ok(transcripts) => (transcripts, true),
        Err(status)
            if baton_kit::error::ErrorCode::from_status(&status)
                == baton_kit::error::ErrorCode::InvalidInput =>
        {
            return refused(&viewer, &raw, "Usage", &status);
        }
        Err(status) => {
            tracing::warn!(code = ?status.code(), "console: transcript sessions unavailable");
            missing.push("sessions known only from transcripts");
            (Fetched::done(), false)
        }
    };
    let transcript_keys: Vec<Key> = transcripts
        .rows
        .iter()
        .map(|row| (row.key.agent.clone(), row.key.session_id.clone()))
        .collect();
    let hooked = match sources::hook_runs(&state, &viewer, transcript_keys).await {
        Ok(hooked) => hooked,
        Err(status) => return page::from_status(&viewer, "registry", &status),
    };
    let (entries, next) = session_merge::merge(
        PAGE_SIZE as usize,
        &resume,
        hooks,
        transcripts,
        |summary: &usage::SessionSummary| {
            hooked.contains_key(&(summary.agent.clone(), summary.session_id.clone()))
        },
    );
    // A transcript page that could not be read resumes where it stood, not past it.
    let next = next.map(|mut next| {
        if !transcripts_read {
            next.transcripts = transcript_stream.clone();
        }
        next
    });
    let hook_sessions: Vec<&registry::Session> = entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Hook(summary) => summary.session.as_ref(),
            Entry::Transcript(_) => None,
        })
        .collect();
    let ids = hook_sessions
        .iter()
        .map(|session| session.session_run_id.clone())
        .collect();
    let keys = hook_sessions
        .iter()
        .map(|session| (session.agent.clone(), session.session_id.clone()))
        .collect();
    let (triaged, figures) = tokio::join!(
        sources::triage_states(&state, &viewer, ids),
        sources::usage_figures(&state, &viewer, keys)
    );
    if triaged.is_none() {
        missing.push("triage status");
    }
    if figures.is_none() {
        missing.push("tokens and cost");
    }
    let rows = entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Hook(summary) => hook_row(&viewer, summary, triaged.as_ref(), figures.as_ref()),
            Entry::Transcript(summary) => Some(transcript_row(&viewer, summary)),
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
    page.next_link = next.map(|next| {
        format!(
            "/console/sessions?{}",
            filters::query_string(&filters, Some(&next.encode()))
        )
    });
    page.first_link = filters
        .cursor
        .is_some()
        .then(|| format!("/console/sessions?{}", filters::query_string(&first, None)));
    page::render(StatusCode::OK, &page)
}

/// A source refused the filters (400, saying which), or failed (its error page).
fn refused(viewer: &Viewer, raw: &RawFilters, source: &str, status: &tonic::Status) -> Response {
    if baton_kit::error::ErrorCode::from_status(status) == baton_kit::error::ErrorCode::InvalidInput
    {
        let message = format!("{source} refused the filters: {}", status.message());
        let page = empty_page(viewer, raw, Some(message));
        return page::render(StatusCode::BAD_REQUEST, &page);
    }
    page::from_status(viewer, &source.to_lowercase(), status)
}

/// Tokens and cost as the list shows them: unavailable, none uploaded, or the figures.
fn figure_columns(usage: Option<Option<&usage::Figures>>) -> (String, String, String, String) {
    match usage {
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
    }
}

fn hook_row(
    viewer: &Viewer,
    summary: &registry::SessionSummary,
    triaged: Option<&HashMap<String, triage::RunState>>,
    figures: Option<&HashMap<Key, usage::Figures>>,
) -> Option<Row> {
    let session = summary.session.as_ref()?;
    let (_, label, class) = state_of(summary.state);
    let opened = session
        .opened_at
        .as_ref()
        .and_then(from_timestamp)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
    let run = triaged.and_then(|states| states.get(&session.session_run_id));
    let usage =
        figures.map(|figures| figures.get(&(session.agent.clone(), session.session_id.clone())));
    let (tokens, cost, cost_usd, unpriced) = figure_columns(usage);
    Some(Row {
        run_id: session.session_run_id.clone(),
        link: format!("/console/sessions/{}", session.session_run_id),
        agent: session.agent.clone(),
        session_id: session.session_id.clone(),
        project: session.project.clone().unwrap_or_default(),
        state: label,
        state_class: class,
        epoch: session.activation_epoch.to_string(),
        opened: view::moment(opened, viewer.zone),
        // Triage keeps no row for a run it never nudged: registry listed it, so it is this
        // tenant's run, and it reads idle with no nudge (as GetState answers).
        triage: match (triaged, run) {
            (None, _) => "unavailable".to_string(),
            (Some(_), None) => "idle".to_string(),
            (Some(_), Some(run)) => run.triage_status.clone(),
        },
        nudges: match (triaged, run) {
            (None, _) => "unavailable".to_string(),
            (Some(_), None) => "0".to_string(),
            (Some(_), Some(run)) => run.attempts.to_string(),
        },
        tokens,
        cost,
        cost_usd,
        unpriced,
    })
}

/// A session known only from transcripts: no run, no liveness, no triage; "opened" at its
/// first activity.
fn transcript_row(viewer: &Viewer, summary: &usage::SessionSummary) -> Row {
    let opened = summary
        .first_activity_at
        .as_ref()
        .and_then(from_timestamp)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
    let (tokens, cost, cost_usd, unpriced) = figure_columns(Some(summary.figures.as_ref()));
    Row {
        run_id: String::new(),
        link: super::transcript_session::link(&summary.agent, &summary.session_id),
        agent: summary.agent.clone(),
        session_id: summary.session_id.clone(),
        project: summary.project_slug.clone(),
        state: "no hook",
        state_class: "state-unknown",
        epoch: "—".to_string(),
        opened: view::moment(opened, viewer.zone),
        triage: "—".to_string(),
        nudges: "—".to_string(),
        tokens,
        cost,
        cost_usd,
        unpriced,
    }
}
