//! CSV answers of the usage reads (`GET /usage`, `GET /usage/sessions`) for callers that ask
//! with `Accept: text/csv`, and the console's downloads.
//!
//! - Negotiation ([`wants_csv`]): CSV only when the caller prefers `text/csv` (higher `q`
//!   than JSON, which stays the answer to no `Accept`, `*/*` and ties), so every existing
//!   client keeps its JSON.
//! - One header row, then one row per group or session; no total row (a spreadsheet sums a
//!   column, and a total row would read as one more group). Numbers as JSON writes them.
//! - Text cells a spreadsheet would evaluate as a formula (starting with `=`, `+`, `-`, `@`,
//!   a tab or a carriage return — OWASP's CSV-injection list) are written with a leading `'`,
//!   so a project slug such as `-home-me-repo` opens as `'-home-me-repo`, never as a formula.
//!   The JSON answer carries the value untouched.
//! - A page of sessions names the next page in a `Link: <…>; rel="next"` header (RFC 8288).

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::console::pages::session_list::Row;
use crate::routes::usage_answers::{FiguresAnswer, QueryAnswer, SessionAnswer};

const CSV_TYPE: &str = "text/csv; charset=utf-8";

/// The weight `accept` gives a media range matching `wanted` (`type/subtype`): the most
/// specific matching range's `q`, 0 when none matches.
fn weight(accept: &str, wanted: &str) -> f32 {
    let (wanted_type, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|parameter| parameter.trim().strip_prefix("q="))
            .find_map(|value| value.trim().parse::<f32>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        let specificity = if media == wanted {
            3
        } else if media == format!("{wanted_type}/*") {
            2
        } else if media == "*/*" {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(held, _)| specificity > held) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

/// Whether the caller prefers CSV to JSON.
pub fn wants_csv(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    if accept.trim().is_empty() {
        return false;
    }
    weight(&accept, "text/csv") > weight(&accept, "application/json")
}

/// A text cell as a spreadsheet should read it (see the module's rule).
pub fn cell(text: &str) -> String {
    match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_string(),
    }
}

const FIGURE_COLUMNS: [&str; 14] = [
    "input",
    "output",
    "cacheRead",
    "cacheWrite5m",
    "cacheWrite1h",
    "totalTokens",
    "reasoning",
    "requests",
    "costUsd",
    "unpricedTokens",
    "webSearchRequests",
    "webFetchRequests",
    "serverToolCostUsd",
    "unpricedCalls",
];

fn figure_cells(figures: &FiguresAnswer) -> Vec<String> {
    let tokens = &figures.tokens;
    let tools = &figures.server_tools;
    vec![
        tokens.input.to_string(),
        tokens.output.to_string(),
        tokens.cache_read.to_string(),
        tokens.cache_write_5m.to_string(),
        tokens.cache_write_1h.to_string(),
        tokens.total.to_string(),
        tokens.reasoning.to_string(),
        figures.requests.to_string(),
        figures.cost_usd.to_string(),
        figures.unpriced_tokens.to_string(),
        tools.web_search_requests.to_string(),
        tools.web_fetch_requests.to_string(),
        tools.cost_usd.to_string(),
        tools.unpriced_calls.to_string(),
    ]
}

fn write(rows: Vec<Vec<String>>) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        // Writing to memory cannot fail short of running out of it.
        let _ = writer.write_record(&row);
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// `GET /usage` as CSV: the group key's column is named by `groupBy`.
pub fn usage_csv(answer: &QueryAnswer) -> String {
    let mut header = vec![answer.group_by.clone()];
    header.extend(FIGURE_COLUMNS.iter().map(|name| (*name).to_string()));
    let mut rows = vec![header];
    for group in &answer.groups {
        let mut row = vec![cell(&group.key)];
        row.extend(figure_cells(&group.figures));
        rows.push(row);
    }
    write(rows)
}

/// A page of `GET /usage/sessions` as CSV; hosts and client versions `;`-separated.
pub fn sessions_csv(sessions: &[SessionAnswer]) -> String {
    let mut header: Vec<String> = [
        "agent",
        "sessionId",
        "projectSlug",
        "hostIds",
        "members",
        "clientVersions",
        "firstActivityAt",
        "lastActivityAt",
        "agentCount",
        "outputUnderReported",
    ]
    .iter()
    .map(|name| (*name).to_string())
    .collect();
    header.extend(FIGURE_COLUMNS.iter().map(|name| (*name).to_string()));
    let mut rows = vec![header];
    for session in sessions {
        let mut row = vec![
            cell(&session.agent),
            cell(&session.session_id),
            cell(&session.project_slug),
            cell(&session.host_ids.join(";")),
            cell(&session.members.join(";")),
            cell(&session.client_versions.join(";")),
            session.first_activity_at.clone().unwrap_or_default(),
            session.last_activity_at.clone().unwrap_or_default(),
            session.agent_count.to_string(),
            session.output_under_reported.to_string(),
        ];
        row.extend(figure_cells(&session.figures));
        rows.push(row);
    }
    write(rows)
}

/// The console's list of sessions as CSV: what each row shows, figures as plain numbers, and a
/// last line saying so when the download stopped at its row limit.
pub fn console_sessions_csv(rows: &[Row], truncated: bool) -> String {
    let header = [
        "harness",
        "sessionId",
        "project",
        "members",
        "reportedBy",
        "liveness",
        "sessionRunId",
        "activationEpoch",
        "opened",
        "triage",
        "nudges",
        "totalTokens",
        "costUsd",
        "unpriced",
    ];
    let mut out = vec![header.iter().map(|name| (*name).to_string()).collect()];
    for row in rows {
        let hooked = !row.run_id.is_empty();
        out.push(vec![
            cell(&row.agent),
            cell(&row.session_id),
            cell(&row.project),
            cell(&row.members),
            (if hooked { "hook" } else { "transcripts" }).to_string(),
            cell(row.state),
            row.run_id.clone(),
            (if hooked {
                row.epoch.clone()
            } else {
                String::new()
            }),
            row.opened.iso.clone(),
            (if hooked {
                cell(&row.triage)
            } else {
                String::new()
            }),
            (if hooked {
                row.nudges.clone()
            } else {
                String::new()
            }),
            row.total_tokens.clone(),
            row.cost_usd.clone(),
            cell(&row.unpriced),
        ]);
    }
    if truncated {
        let mut note = vec![String::new(); header.len()];
        note[0] = "(stopped at the download's row limit: narrow the filters for the rest)".into();
        out.push(note);
    }
    write(out)
}

/// A CSV body as a download named `filename`, with the next page's link when there is one.
pub fn response(body: String, filename: &str, next: Option<String>) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CSV_TYPE));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    if let Some(link) =
        next.and_then(|link| HeaderValue::from_str(&format!("<{link}>; rel=\"next\"")).ok())
    {
        headers.insert(header::LINK, link);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_str(value).expect("header"),
        );
        headers
    }

    #[test]
    fn csv_only_when_preferred_to_json() {
        let cases = [
            ("text/csv", true),
            ("text/csv;q=0.9, application/json;q=0.5", true),
            ("application/json, text/csv", false),
            ("text/csv, application/json", false),
            ("application/json;q=0.1, text/*", true),
            ("*/*", false),
            ("text/*", true),
            ("text/html", false),
            ("TEXT/CSV", true),
            ("text/csv;q=0", false),
            ("text/csv;q=abc", true),
        ];
        for (value, expected) in cases {
            assert_eq!(wants_csv(&accept(value)), expected, "{value}");
        }
        assert!(!wants_csv(&HeaderMap::new()), "no Accept is JSON");
    }

    #[test]
    fn formula_starts_are_neutralised_and_quoting_is_the_csv_crates() {
        for (text, expected) in [
            ("-home-me-repo", "'-home-me-repo"),
            ("=SUM(A1)", "'=SUM(A1)"),
            ("+1", "'+1"),
            ("@cmd", "'@cmd"),
            ("\tx", "'\tx"),
            ("plain", "plain"),
            ("", ""),
        ] {
            assert_eq!(cell(text), expected, "{text:?}");
        }
        let body = write(vec![
            vec!["a".into(), "b".into()],
            vec!["x,y".into(), "say \"hi\"\nthere".into()],
        ]);
        assert_eq!(body, "a,b\n\"x,y\",\"say \"\"hi\"\"\nthere\"\n");
    }
}
