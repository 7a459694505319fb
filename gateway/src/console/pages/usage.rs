//! Usage: cost and tokens per day, week or month stacked by model, per project and per machine,
//! for a chosen range of days (at most 400, the service's bound) in a chosen zone; every dollar figure beside its unpriced tokens, and the
//! costliest sessions with their delegation savings, labelled as the estimates they are.
//!
//! The charts are Chart.js bars fed from a `data-chart` attribute (no inline script); the same
//! figures are in tables beside them, which is what a screen reader or a colour-blind reader
//! uses.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{Days, NaiveDate};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::json;

use baton_kit::clock::to_timestamp;
use baton_proto::registry::v1 as registry;
use baton_proto::usage::v1 as usage;

use crate::console::colours;
use crate::console::filters::start_of;
use crate::console::page::{self, Choice, Chrome};
use crate::console::view;
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

mod budgets;
mod export;

pub use budgets::BudgetRow;
pub use export::{ExportQuery, export};

/// Longest range the page reads, in days (the usage query's own bound).
const MAX_DAYS: u64 = 400;
/// Longest range charted day by day; a longer one is charted by week unless asked otherwise.
const MAX_DAILY: u64 = 92;
/// Costliest sessions listed with their savings.
const TOP_SESSIONS: usize = 10;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    from: Option<String>,
    to: Option<String>,
    tz: Option<String>,
    /// `day`, `week` or `month`; absent = day up to [`MAX_DAILY`] days, week beyond.
    by: Option<String>,
}

/// How the chart and the period table cut the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Week,
    Month,
}

impl Period {
    pub const NAMES: [&'static str; 3] = ["day", "week", "month"];

    /// The usage query's `groupBy`, and the word the page uses.
    pub fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    fn of(name: &str) -> Option<Period> {
        match name {
            "day" => Some(Period::Day),
            "week" => Some(Period::Week),
            "month" => Some(Period::Month),
            _ => None,
        }
    }
}

/// The validated range: first and last day (inclusive) and the zone they are cut in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub zone: Tz,
    pub period: Period,
}

/// Reads the form: absent fields default to the 30 days ending today in the viewer's zone.
pub fn range(
    query: &UsageQuery,
    viewer_zone: Tz,
    today_utc: chrono::DateTime<chrono::Utc>,
) -> Result<Range, String> {
    let present = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    let zone = match present(&query.tz) {
        Some(name) => name
            .parse::<Tz>()
            .map_err(|_| "tz is not a time zone this page knows".to_string())?,
        None => viewer_zone,
    };
    let day = |name: &str, value: Option<String>| {
        value
            .map(|text| {
                NaiveDate::parse_from_str(&text, "%Y-%m-%d")
                    .map_err(|_| format!("{name} must be a date like 2026-12-01"))
            })
            .transpose()
    };
    let today = today_utc.with_timezone(&zone).date_naive();
    let to = day("to", present(&query.to))?.unwrap_or(today);
    let from = match day("from", present(&query.from))? {
        Some(from) => from,
        None => to.checked_sub_days(Days::new(29)).unwrap_or(to),
    };
    if from > to {
        return Err("from must not be after to".to_string());
    }
    let days = (to - from).num_days() as u64 + 1;
    if days > MAX_DAYS {
        return Err(format!("choose at most {MAX_DAYS} days"));
    }
    let period = match present(&query.by) {
        None if days > MAX_DAILY => Period::Week,
        None => Period::Day,
        Some(name) => {
            Period::of(&name).ok_or_else(|| "by must be day, week or month".to_string())?
        }
    };
    if period == Period::Day && days > MAX_DAILY {
        return Err(format!(
            "choose at most {MAX_DAILY} days day by day, or show them by week or month"
        ));
    }
    Ok(Range {
        from,
        to,
        zone,
        period,
    })
}

/// Every period of the range, as the service keys them: days `YYYY-MM-DD`, ISO weeks by their
/// Monday's `YYYY-MM-DD`, months `YYYY-MM`.
pub fn periods(range: &Range) -> Vec<String> {
    let days = range.from.iter_days().take_while(|day| *day <= range.to);
    let mut keys: Vec<String> = match range.period {
        Period::Day => days.map(|day| day.to_string()).collect(),
        Period::Week => days
            .map(|day| day.week(chrono::Weekday::Mon).first_day().to_string())
            .collect(),
        Period::Month => days.map(|day| day.format("%Y-%m").to_string()).collect(),
    };
    keys.dedup();
    keys
}

/// Chart.js data for days stacked by model: one dataset per model, a value per day (0 where
/// the model did nothing that day).
pub fn stacked(
    days: &[String],
    groups: &[usage::UsageGroup],
    value: impl Fn(&usage::Figures) -> f64,
) -> serde_json::Value {
    let mut models: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for group in groups {
        let Some(position) = days.iter().position(|day| *day == group.key) else {
            continue;
        };
        for model in &group.by_model {
            let series = models
                .entry(model.model.as_str())
                .or_insert_with(|| vec![0.0; days.len()]);
            series[position] += model.figures.as_ref().map_or(0.0, &value);
        }
    }
    json!({
        "labels": days,
        "datasets": models
            .into_iter()
            .enumerate()
            .map(|(index, (model, data))| {
                let colour = colours::series_colour(index);
                json!({"label": model, "data": data, "backgroundColor": colour,
                    "borderColor": colour})
            })
            .collect::<Vec<_>>(),
    })
}

pub struct FigureRow {
    pub key: String,
    pub cost: String,
    pub cost_usd: String,
    pub unpriced: String,
    pub tokens: String,
    pub link: Option<String>,
    pub savings: String,
}

fn tokens_of(figures: &usage::Figures) -> u64 {
    figures.tokens.as_ref().map_or(0, |tokens| tokens.total)
}

fn figure_row(key: String, figures: &usage::Figures) -> FigureRow {
    let text = view::figure_text(figures);
    FigureRow {
        key,
        cost: text.cost,
        cost_usd: text.cost_usd,
        unpriced: text.unpriced,
        tokens: text.tokens,
        link: None,
        savings: String::new(),
    }
}

#[derive(Template)]
#[template(path = "console/usage.html")]
pub struct UsagePage {
    pub chrome: Chrome,
    pub from: String,
    pub to: String,
    pub zone: String,
    pub zones: Vec<Choice>,
    /// The period the chart and its table are cut by.
    pub period: &'static str,
    /// The range's query string, for the tables' CSV downloads.
    pub export_query: String,
    pub periods: Vec<Choice>,
    pub error: Option<String>,
    pub total: Option<FigureRow>,
    pub cost_chart: String,
    pub token_chart: String,
    pub days: Vec<FigureRow>,
    pub projects: Vec<FigureRow>,
    pub machines: Vec<FigureRow>,
    /// Per member (`unattributed`: keys without a member).
    pub members: Vec<FigureRow>,
    /// The tenant's budgets in their current periods (`None`: usage could not list them).
    pub budgets: Option<Vec<BudgetRow>>,
    pub sessions: Vec<FigureRow>,
    pub savings_total: String,
}

fn zone_choices(current: &str) -> Vec<Choice> {
    let names: Vec<&'static str> = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| zone.name())
        .collect();
    page::choices(&names, current)
}

fn blank(viewer: &Viewer, query: &UsageQuery, error: Option<String>) -> UsagePage {
    let zone = query
        .tz
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| viewer.zone.name().to_string());
    UsagePage {
        chrome: Chrome::new(viewer, "usage", "Usage"),
        from: query.from.clone().unwrap_or_default(),
        to: query.to.clone().unwrap_or_default(),
        zones: zone_choices(&zone),
        zone,
        period: "day",
        export_query: String::new(),
        periods: page::choices(&Period::NAMES, query.by.as_deref().unwrap_or_default()),
        error,
        total: None,
        cost_chart: String::new(),
        token_chart: String::new(),
        days: Vec::new(),
        projects: Vec::new(),
        machines: Vec::new(),
        members: Vec::new(),
        budgets: Some(Vec::new()),
        sessions: Vec::new(),
        savings_total: String::new(),
    }
}

async fn grouped(
    state: &AppState,
    viewer: &Viewer,
    range: &Range,
    group_by: &str,
) -> Result<usage::QueryUsageResponse, tonic::Status> {
    let end = range.to.checked_add_days(Days::new(1)).unwrap_or(range.to);
    let request = usage::QueryUsageRequest {
        from: Some(to_timestamp(start_of(range.from, range.zone))),
        to: Some(to_timestamp(start_of(end, range.zone))),
        group_by: group_by.to_string(),
        timezone: Some(range.zone.name().to_string()),
        split_by_model: Period::of(group_by).is_some(),
    };
    rpc!(state.usage.query_usage(&viewer.call, request))
}

/// The costliest sessions of the range with their savings and a link to each.
async fn top_sessions(
    state: &AppState,
    viewer: &Viewer,
    groups: &[usage::UsageGroup],
) -> (Vec<FigureRow>, f64) {
    let mut ranked: Vec<&usage::UsageGroup> = groups.iter().collect();
    ranked.sort_by(|a, b| {
        let cost = |group: &usage::UsageGroup| group.figures.as_ref().map_or(0.0, |f| f.cost_usd);
        cost(b).total_cmp(&cost(a))
    });
    let mut rows = Vec::new();
    let mut savings_total = 0.0;
    for group in ranked.into_iter().take(TOP_SESSIONS) {
        let figures = group.figures.clone().unwrap_or_default();
        let mut row = figure_row(group.key.clone(), &figures);
        if let Some((agent, session_id)) = group.key.split_once('/') {
            let lookup = registry::GetSessionRequest {
                lookup: Some(registry::get_session_request::Lookup::Key(
                    registry::SessionKey {
                        agent: agent.to_string(),
                        session_id: session_id.to_string(),
                    },
                )),
            };
            let tree = usage::GetTreeRequest {
                agent: agent.to_string(),
                session_id: session_id.to_string(),
            };
            let (mut registry, mut usage_client) = (state.registry.clone(), state.usage.clone());
            let (run, tree) = tokio::join!(
                registry.get_session(state.outbound.request(&viewer.call, lookup)),
                usage_client.get_tree(state.outbound.request(&viewer.call, tree)),
            );
            row.link = run
                .ok()
                .and_then(|answer| answer.into_inner().session)
                .map(|session| format!("/console/sessions/{}", session.session_run_id))
                .or_else(|| Some(super::transcript_session::link(agent, session_id)));
            row.savings = match tree
                .ok()
                .and_then(|answer| answer.into_inner().delegation_savings)
            {
                Some(savings) => {
                    savings_total += savings.savings_usd;
                    format!("{} (estimate)", view::usd(savings.savings_usd))
                }
                None => "—".to_string(),
            };
        }
        rows.push(row);
    }
    (rows, savings_total)
}

fn rows(answer: &usage::QueryUsageResponse) -> Vec<FigureRow> {
    let mut rows: Vec<(&usage::UsageGroup, f64)> = answer
        .groups
        .iter()
        .map(|group| (group, group.figures.as_ref().map_or(0.0, |f| f.cost_usd)))
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.key.cmp(&b.0.key)));
    rows.into_iter()
        .map(|(group, _)| {
            figure_row(
                group.key.clone(),
                &group.figures.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// `GET /console/usage`.
pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    query: Result<Query<UsageQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        let page = blank(
            &viewer,
            &UsageQuery::default(),
            Some("Those are not fields this page knows.".into()),
        );
        return page::render(StatusCode::BAD_REQUEST, &page);
    };
    let range = match range(&query, viewer.zone, viewer.now) {
        Ok(range) => range,
        Err(message) => {
            return page::render(
                StatusCode::BAD_REQUEST,
                &blank(&viewer, &query, Some(message)),
            );
        }
    };
    // One figure read per grouping; the page needs them all, so the first failure answers.
    let read = tokio::try_join!(
        grouped(&state, &viewer, &range, range.period.name()),
        grouped(&state, &viewer, &range, "project"),
        grouped(&state, &viewer, &range, "host"),
        grouped(&state, &viewer, &range, "member"),
        grouped(&state, &viewer, &range, "session"),
    );
    let (by_day, by_project, by_host, by_member, by_session) = match read {
        Ok(read) => read,
        Err(status) => return page::from_status(&viewer, "usage", &status),
    };
    let day_names = periods(&range);
    let cost_chart = stacked(&day_names, &by_day.groups, |figures| figures.cost_usd);
    let token_chart = stacked(&day_names, &by_day.groups, |figures| {
        tokens_of(figures) as f64
    });
    let (sessions, savings_total) = top_sessions(&state, &viewer, &by_session.groups).await;
    let budgets = budgets::current(&state, &viewer).await;
    let mut page = blank(&viewer, &query, None);
    page.from = range.from.to_string();
    page.to = range.to.to_string();
    page.zone = range.zone.name().to_string();
    page.zones = zone_choices(&page.zone);
    page.export_query = format!(
        "from={}&to={}&tz={}&by={}",
        range.from,
        range.to,
        url::form_urlencoded::byte_serialize(range.zone.name().as_bytes()).collect::<String>(),
        range.period.name()
    );
    page.period = range.period.name();
    page.periods = page::choices(&Period::NAMES, range.period.name());
    page.total = by_day
        .total
        .as_ref()
        .map(|total| figure_row("Total".to_string(), total));
    page.cost_chart = cost_chart.to_string();
    page.token_chart = token_chart.to_string();
    page.days = by_day
        .groups
        .iter()
        .map(|group| {
            figure_row(
                group.key.clone(),
                &group.figures.clone().unwrap_or_default(),
            )
        })
        .collect();
    page.projects = rows(&by_project);
    page.machines = rows(&by_host);
    page.members = rows(&by_member);
    page.budgets = budgets;
    page.sessions = sessions;
    page.savings_total = view::usd(savings_total);
    page::render(StatusCode::OK, &page)
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
