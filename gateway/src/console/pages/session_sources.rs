//! The reads behind the one list of sessions: a page of hook-reported sessions (registry), a
//! page of transcript-known sessions (usage, newest first activity first), which of those
//! registry also knows, and the per-row figures of triage and usage. Each read says whether it
//! answered; the page decides what a missing answer means.

use std::collections::HashMap;

use baton_kit::clock::{from_timestamp, to_timestamp};
use baton_proto::registry::v1 as registry;
use baton_proto::triage::v1 as triage;
use baton_proto::usage::v1 as usage;
use chrono::{DateTime, Utc};

use crate::console::filters::Filters;
use crate::console::session_merge::{Fetched, Listed, SortKey, Stream};
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

/// A natural key, `(agent, session id)`.
pub type Key = (String, String);

/// The filters both sources apply, already cut into instants in the viewer's zone.
pub struct Window<'a> {
    pub filters: &'a Filters,
    pub opened_from: Option<DateTime<Utc>>,
    pub opened_to: Option<DateTime<Utc>>,
    pub state: registry::SessionState,
    pub limit: u32,
}

fn cursor_of(stream: &Stream) -> Option<String> {
    match stream {
        Stream::After(cursor) => Some(cursor.clone()),
        Stream::Start | Stream::Done => None,
    }
}

fn instant(timestamp: Option<&baton_proto::Timestamp>) -> DateTime<Utc> {
    timestamp
        .and_then(from_timestamp)
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// One page of registry's sessions from `stream`, newest opened first.
pub async fn hook_sessions(
    state: &AppState,
    viewer: &Viewer,
    window: &Window<'_>,
    stream: &Stream,
) -> Result<Fetched<registry::SessionSummary>, tonic::Status> {
    if *stream == Stream::Done {
        return Ok(Fetched::done());
    }
    let request = registry::ListSessionsRequest {
        project: window.filters.project.clone(),
        agent: window.filters.harness.clone(),
        state: window.state.into(),
        opened_from: window.opened_from.map(to_timestamp),
        opened_to: window.opened_to.map(to_timestamp),
        limit: window.limit,
        cursor: cursor_of(stream),
        member: window.filters.member.clone(),
    };
    let listed = rpc!(state.registry.list_sessions(&viewer.call, request))?;
    let rows = listed
        .sessions
        .into_iter()
        .filter_map(|summary| {
            let session = summary.session.as_ref()?;
            Some(Listed {
                key: SortKey {
                    at: instant(session.opened_at.as_ref()),
                    agent: session.agent.clone(),
                    session_id: session.session_id.clone(),
                },
                position: summary.position.clone(),
                item: summary,
            })
        })
        .collect();
    Ok(Fetched {
        rows,
        next: listed.next_cursor,
    })
}

/// One page of usage's sessions from `stream`, newest first activity first, inside the same
/// opened window (a transcript-only session "opened" at its first activity).
pub async fn transcript_sessions(
    state: &AppState,
    viewer: &Viewer,
    window: &Window<'_>,
    stream: &Stream,
) -> Result<Fetched<usage::SessionSummary>, tonic::Status> {
    if *stream == Stream::Done {
        return Ok(Fetched::done());
    }
    let request = usage::ListSessionsRequest {
        from: window.opened_from.map(to_timestamp),
        to: window.opened_to.map(to_timestamp),
        project: window.filters.project.clone(),
        agent: window.filters.harness.clone(),
        host_id: None,
        limit: Some(window.limit),
        cursor: cursor_of(stream),
        order: usage::SessionOrder::FirstActivity.into(),
        member: window.filters.member.clone(),
        runaway: false,
    };
    let listed = rpc!(state.usage.list_sessions(&viewer.call, request))?;
    let rows = listed
        .sessions
        .into_iter()
        .map(|summary| Listed {
            key: SortKey {
                at: instant(summary.first_activity_at.as_ref()),
                agent: summary.agent.clone(),
                session_id: summary.session_id.clone(),
            },
            position: summary.position.clone(),
            item: summary,
        })
        .collect();
    Ok(Fetched {
        rows,
        next: listed.next_cursor,
    })
}

/// The run of each of `keys` a hook reported (registry knows it); the others are absent.
pub async fn hook_runs(
    state: &AppState,
    viewer: &Viewer,
    keys: Vec<Key>,
) -> Result<HashMap<Key, String>, tonic::Status> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let request = registry::FindSessionsRequest {
        keys: keys
            .into_iter()
            .map(|(agent, session_id)| registry::SessionKey { agent, session_id })
            .collect(),
    };
    let found = rpc!(state.registry.find_sessions(&viewer.call, request))?;
    Ok(found
        .sessions
        .into_iter()
        .filter_map(|summary| summary.session)
        .map(|session| ((session.agent, session.session_id), session.session_run_id))
        .collect())
}

/// Triage's state of each run; `None` when triage cannot answer.
pub async fn triage_states(
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
    match rpc!(state.triage.get_states(&viewer.call, request)) {
        Ok(answer) => Some(
            answer
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

/// Usage's summary (figures, runaway flags) of each session; `None` when usage cannot answer.
pub async fn usage_figures(
    state: &AppState,
    viewer: &Viewer,
    keys: Vec<Key>,
) -> Option<HashMap<Key, usage::SessionSummary>> {
    if keys.is_empty() {
        return Some(HashMap::new());
    }
    let request = usage::SessionFiguresRequest {
        sessions: keys
            .into_iter()
            .map(|(agent, session_id)| usage::SessionRef { agent, session_id })
            .collect(),
    };
    match rpc!(state.usage.session_figures(&viewer.call, request)) {
        Ok(answer) => Some(
            answer
                .sessions
                .into_iter()
                .map(|summary| ((summary.agent.clone(), summary.session_id.clone()), summary))
                .collect(),
        ),
        Err(status) => {
            tracing::warn!(code = ?status.code(), "console: usage figures unavailable");
            None
        }
    }
}
