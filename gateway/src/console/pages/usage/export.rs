//! The usage page's CSV downloads: one of its tables, for the same range, in the API's CSV
//! columns.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::{UsageQuery, blank, grouped, range};
use crate::console::page;
use crate::console::viewer::Viewer;
use crate::csv_export;
use crate::state::AppState;

/// The tables the usage page offers as CSV, by their `table` name.
const EXPORTS: [(&str, &str); 5] = [
    ("periods", ""),
    ("projects", "project"),
    ("machines", "host"),
    ("members", "member"),
    ("sessions", "session"),
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    table: Option<String>,
    from: Option<String>,
    to: Option<String>,
    tz: Option<String>,
    by: Option<String>,
}

/// `GET /console/usage/export?table=periods|projects|machines|sessions&…`: one of the page's
/// tables, for the same range, as CSV (the API's CSV columns).
pub async fn export(
    State(state): State<AppState>,
    viewer: Viewer,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        let page = blank(
            &viewer,
            &UsageQuery::default(),
            Some("Those are not fields this download knows.".into()),
        );
        return page::render(StatusCode::BAD_REQUEST, &page);
    };
    let usage_query = UsageQuery {
        from: query.from.clone(),
        to: query.to.clone(),
        tz: query.tz.clone(),
        by: query.by.clone(),
    };
    let table = query.table.as_deref().unwrap_or("periods");
    let Some((name, group_by)) = EXPORTS.iter().find(|(name, _)| *name == table) else {
        let message = "table must be periods, projects, machines, members or sessions".to_string();
        let page = blank(&viewer, &usage_query, Some(message));
        return page::render(StatusCode::BAD_REQUEST, &page);
    };
    let range = match range(&usage_query, viewer.zone, viewer.now) {
        Ok(range) => range,
        Err(message) => {
            let page = blank(&viewer, &usage_query, Some(message));
            return page::render(StatusCode::BAD_REQUEST, &page);
        }
    };
    let group_by = if group_by.is_empty() {
        range.period.name()
    } else {
        group_by
    };
    match grouped(&state, &viewer, &range, group_by).await {
        Ok(answer) => {
            let answer = crate::routes::usage::query_answer(answer);
            let file = format!("baton-usage-{name}-{}-{}.csv", range.from, range.to);
            csv_export::response(csv_export::usage_csv(&answer), &file, None)
        }
        Err(status) => page::from_status(&viewer, "usage", &status),
    }
}
