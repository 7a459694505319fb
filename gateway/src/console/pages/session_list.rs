//! One page of the one list of sessions: the hook-reported sessions (registry, by opening) and
//! the sessions known only from uploaded transcripts (usage, by first activity) merged by
//! [`session_merge`], each session once, with triage's status and usage's figures per row.
//! Read by the Sessions page and by its CSV download.

use std::collections::HashMap;

use baton_kit::clock::from_timestamp;
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;
use baton_proto::usage::v1 as usage;

use crate::console::filters::{self, Filters};
use crate::console::pages::fleet::state_of;
use crate::console::pages::session_sources::{self as sources, Key, Window};
use crate::console::session_merge::{self, Entry, Fetched, Resume, Stream};
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::state::AppState;

/// One row as the list shows it.
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
    /// All tokens as a plain number (empty when none were uploaded or usage did not answer).
    pub total_tokens: String,
    /// The members who reported it, or `unattributed`.
    pub members: String,
    /// Why it is flagged as running away now (`spend`, `unattended`), empty when not.
    pub runaway: String,
}

/// Members as the list shows them: their names, or `unattributed` when none had one.
pub fn members_text(members: &[String]) -> String {
    if members.is_empty() {
        baton_kit::member::UNATTRIBUTED.to_string()
    } else {
        members.join(", ")
    }
}

/// A page of the list: its rows, where the next page starts and which figures could not be read.
pub struct MergedPage {
    pub rows: Vec<Row>,
    pub next: Option<Resume>,
    pub missing: Vec<&'static str>,
}

/// A source that refused the filters or could not answer.
pub struct Refusal {
    pub source: &'static str,
    pub status: tonic::Status,
}

pub fn state_filter(name: Option<&str>) -> registry::SessionState {
    match name {
        Some("live") => registry::SessionState::Live,
        Some("idle") => registry::SessionState::Idle,
        Some("disconnected") => registry::SessionState::Disconnected,
        Some("closed") => registry::SessionState::Closed,
        _ => registry::SessionState::Unspecified,
    }
}

/// Up to `limit` rows of the list from `resume`, filtered by `filters`.
pub async fn merged_page(
    state: &AppState,
    viewer: &Viewer,
    filters: &Filters,
    resume: &Resume,
    limit: u32,
) -> Result<MergedPage, Refusal> {
    let (opened_from, opened_to) = filters::range(filters.from, filters.to, viewer.zone);
    let window = Window {
        filters,
        opened_from,
        opened_to,
        state: state_filter(filters.liveness.as_deref()),
        limit,
    };
    // Only hook-reported sessions have a liveness to filter on.
    let transcript_stream = if filters.liveness.is_some() {
        Stream::Done
    } else {
        resume.transcripts.clone()
    };
    let (hooks, transcripts) = tokio::join!(
        sources::hook_sessions(state, viewer, &window, &resume.hooks),
        sources::transcript_sessions(state, viewer, &window, &transcript_stream)
    );
    let hooks = hooks.map_err(|status| Refusal {
        source: "Registry",
        status,
    })?;
    let mut missing = Vec::new();
    let (transcripts, transcripts_read) = match transcripts {
        Ok(transcripts) => (transcripts, true),
        Err(status)
            if baton_kit::error::ErrorCode::from_status(&status)
                == baton_kit::error::ErrorCode::InvalidInput =>
        {
            return Err(Refusal {
                source: "Usage",
                status,
            });
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
    let hooked = sources::hook_runs(state, viewer, transcript_keys)
        .await
        .map_err(|status| Refusal {
            source: "Registry",
            status,
        })?;
    let (entries, next) = session_merge::merge(
        limit as usize,
        resume,
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
        sources::triage_states(state, viewer, ids),
        sources::usage_figures(state, viewer, keys)
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
            Entry::Hook(summary) => hook_row(viewer, summary, triaged.as_ref(), figures.as_ref()),
            Entry::Transcript(summary) => Some(transcript_row(viewer, summary)),
        })
        .collect();
    Ok(MergedPage {
        rows,
        next,
        missing,
    })
}

/// All tokens of `figures`, as a plain number.
fn total_of(usage: Option<Option<&usage::Figures>>) -> String {
    usage
        .flatten()
        .and_then(|figures| figures.tokens.as_ref())
        .map(|tokens| tokens.total.to_string())
        .unwrap_or_default()
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
    figures: Option<&HashMap<Key, usage::SessionSummary>>,
) -> Option<Row> {
    let session = summary.session.as_ref()?;
    let (_, label, class) = state_of(summary.state);
    let opened = session
        .opened_at
        .as_ref()
        .and_then(from_timestamp)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
    let run = triaged.and_then(|states| states.get(&session.session_run_id));
    let summary_of = figures
        .and_then(|figures| figures.get(&(session.agent.clone(), session.session_id.clone())));
    let usage = figures.map(|_| summary_of.and_then(|summary| summary.figures.as_ref()));
    let runaway = summary_of
        .map(|summary| summary.runaway.join(", "))
        .unwrap_or_default();
    let (tokens, cost, cost_usd, unpriced) = figure_columns(usage);
    let total_tokens = total_of(usage);
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
        total_tokens,
        members: members_text(&summary.members),
        runaway,
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
    let total_tokens = total_of(Some(summary.figures.as_ref()));
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
        total_tokens,
        members: members_text(&summary.members),
        runaway: summary.runaway.join(", "),
    }
}
