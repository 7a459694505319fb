//! The one list of sessions, newest first: every session a hook reported (registry, by opening)
//! and every session known only from uploaded transcripts (usage, by first activity), each
//! once (`session_merge`). Filtered by project, harness, liveness and opening date; a liveness
//! filter lists only hook-reported sessions (only they have one). Each hook row carries its
//! state and epoch (registry), triage status and nudges (triage), and tokens and cost (usage);
//! a transcript row its tokens and cost and "no hook". Batched reads per page, not one per row.
//! When triage or usage cannot answer, the list still shows what registry knows and says which
//! figures are missing.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use crate::console::filters::{self, Filters, HARNESSES, LIVENESS, RawFilters};
use crate::console::page::{self, Choice, Chrome};
use crate::console::pages::session_list::{self, MergedPage, Row};
use crate::console::session_merge::Resume;
use crate::console::viewer::Viewer;
use crate::csv_export;
use crate::state::AppState;

const PAGE_SIZE: u32 = 50;
/// Rows a download reads per page of the list (the registry pages at most 100).
const EXPORT_PAGE: u32 = 100;
/// Most rows one download holds; the file says when it stopped there.
const EXPORT_ROWS: usize = 10_000;

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
    pub member: String,
    pub from: String,
    pub to: String,
    pub harnesses: Vec<Choice>,
    pub livenesses: Vec<Choice>,
    pub next_link: Option<String>,
    pub first_link: Option<String>,
    pub filtered: bool,
    /// The whole filtered list as CSV.
    pub download_link: String,
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
        member: text(&raw.member),
        from: text(&raw.from),
        to: text(&raw.to),
        harnesses: page::choices(&HARNESSES, raw.harness.as_deref().unwrap_or_default()),
        livenesses: page::choices(&LIVENESS, raw.liveness.as_deref().unwrap_or_default()),
        next_link: None,
        first_link: None,
        filtered: false,
        download_link: "/console/sessions/export".to_string(),
    }
}

/// `GET /console/sessions`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    query: Result<Query<RawFilters>, QueryRejection>,
) -> Response {
    let (raw, filters, resume) = match read_filters(&viewer, query) {
        Ok(read) => read,
        Err(response) => return *response,
    };
    let MergedPage {
        rows,
        next,
        missing,
    } = match session_list::merged_page(&state, &viewer, &filters, &resume, PAGE_SIZE).await {
        Ok(page) => page,
        Err(refusal) => return refused(&viewer, &raw, refusal.source, &refusal.status),
    };
    let filtered = filters != Filters::default();
    let first = Filters {
        cursor: None,
        ..filters.clone()
    };
    let mut page = empty_page(&viewer, &raw, None);
    page.rows = rows;
    page.missing = missing;
    page.filtered = filtered;
    page.download_link = format!(
        "/console/sessions/export?{}",
        filters::query_string(&first, None)
    );
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

/// `GET /console/sessions/export`: the whole filtered list as CSV (from the first page, at most
/// [`EXPORT_ROWS`] rows; a last line says when it stopped there).
pub async fn export(
    State(state): State<AppState>,
    viewer: Viewer,
    query: Result<Query<RawFilters>, QueryRejection>,
) -> Response {
    let (raw, filters, _) = match read_filters(&viewer, query) {
        Ok(read) => read,
        Err(response) => return *response,
    };
    let mut rows = Vec::new();
    let mut resume = Resume::default();
    let mut truncated = false;
    loop {
        let page = match session_list::merged_page(&state, &viewer, &filters, &resume, EXPORT_PAGE)
            .await
        {
            Ok(page) => page,
            Err(refusal) => return refused(&viewer, &raw, refusal.source, &refusal.status),
        };
        rows.extend(page.rows);
        match page.next {
            Some(_) if rows.len() >= EXPORT_ROWS => {
                truncated = true;
                break;
            }
            Some(next) => resume = next,
            None => break,
        }
    }
    csv_export::response(
        csv_export::console_sessions_csv(&rows, truncated),
        "baton-console-sessions.csv",
        None,
    )
}

/// The page's filters and cursor, or the page saying what is wrong with them.
fn read_filters(
    viewer: &Viewer,
    query: Result<Query<RawFilters>, QueryRejection>,
) -> Result<(RawFilters, Filters, Resume), Box<Response>> {
    let raw = match query {
        Ok(Query(raw)) => raw,
        Err(_) => {
            let page = empty_page(
                viewer,
                &RawFilters::default(),
                Some("Those filters are not ones this page knows.".to_string()),
            );
            return Err(Box::new(page::render(StatusCode::BAD_REQUEST, &page)));
        }
    };
    let filters = match filters::parse(&raw) {
        Ok(filters) => filters,
        Err(message) => {
            return Err(Box::new(page::render(
                StatusCode::BAD_REQUEST,
                &empty_page(viewer, &raw, Some(message)),
            )));
        }
    };
    let resume = match filters.cursor.as_deref() {
        None => Resume::default(),
        Some(text) => match Resume::decode(text) {
            Some(resume) => resume,
            None => {
                let message = "that page link is damaged: start again from the first page";
                let page = empty_page(viewer, &raw, Some(message.to_string()));
                return Err(Box::new(page::render(StatusCode::BAD_REQUEST, &page)));
            }
        },
    };
    Ok((raw, filters, resume))
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
