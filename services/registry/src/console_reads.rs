//! The console's list reads: ListSessions and ListMachines. Each runs in one tenant
//! transaction (row-level security as every read), reads its rows, then every listed
//! session's episodes in ONE `= ANY` query, and derives states with the same function
//! GetLiveness uses ([`Registry::state_of`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use crate::console_store::{self, Listed, SessionScan};
use crate::cursor::Cursor;
use crate::episodes::{self, Episode, SessionEpisode};
use crate::liveness::State;
use crate::machines::{self, Machine, SeenSession};
use crate::service::Registry;
use crate::session::Session;
use crate::session_list::{self, SessionQuery};

/// One session of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// Without briefed memories.
    pub session: Session,
    pub state: State,
    /// The host of the newest episode, when a sidecar ever reported.
    pub host_id: Option<String>,
    pub follows: Option<Uuid>,
    /// The members whose keys reported the session, first seen first.
    pub members: Vec<String>,
}

/// One page of ListSessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPage {
    pub sessions: Vec<SessionSummary>,
    /// Absent on the last page.
    pub next_cursor: Option<Cursor>,
}

/// The answer of ListMachines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineList {
    pub machines: Vec<Machine>,
    /// The read stopped at [`machines::MAX_EPISODES`]: older machines may be missing.
    pub truncated: bool,
}

/// Episodes per session, each list newest first as the query returned them.
fn by_session(rows: Vec<SessionEpisode>) -> HashMap<Uuid, Vec<Episode>> {
    let mut grouped: HashMap<Uuid, Vec<Episode>> = HashMap::new();
    for row in rows {
        grouped
            .entry(row.session_run_id)
            .or_default()
            .push(row.episode);
    }
    grouped
}

impl Registry {
    /// One page of the tenant's sessions, newest opened first.
    pub async fn list_sessions(
        &self,
        tenant_id: Uuid,
        query: &SessionQuery,
        now: DateTime<Utc>,
    ) -> Result<SessionPage, ApiError> {
        let scan_bound = session_list::scan_bound(query);
        let scan = SessionScan {
            bounds: session_list::bounds(query),
            project: query.project.as_deref(),
            agent: query.agent.as_deref(),
            member: query.member.as_deref(),
            rows: session_list::rows_to_read(query),
        };
        let mut transaction = begin_tenant(self.pool(), tenant_id).await?;
        let rows = console_store::sessions_page(&mut transaction, tenant_id, &scan).await?;
        // The row past the scan bound only says whether more follow: its episodes are not read.
        let scanned: Vec<Uuid> = rows
            .iter()
            .take(scan_bound)
            .map(|listed| listed.session.id)
            .collect();
        let episodes = by_session(
            episodes::episodes_of_sessions(&mut transaction, tenant_id, &scanned).await?,
        );
        transaction.commit().await?;
        let summaries: Vec<SessionSummary> = rows
            .into_iter()
            .map(|listed| self.summary(listed, &episodes, now))
            .collect();
        let (sessions, next_cursor) = session_list::page(
            summaries,
            scan_bound,
            query.limit as usize,
            |summary| Cursor {
                opened_at: summary.session.opened_at,
                id: summary.session.id,
            },
            |summary| query.state.is_none_or(|wanted| summary.state == wanted),
        );
        Ok(SessionPage {
            sessions,
            next_cursor,
        })
    }

    /// One listed session with its state at `now` and newest host, from its episodes in
    /// `episodes` (none when absent).
    fn summary(
        &self,
        listed: Listed,
        episodes: &HashMap<Uuid, Vec<Episode>>,
        now: DateTime<Utc>,
    ) -> SessionSummary {
        let own = episodes
            .get(&listed.session.id)
            .map_or(&[][..], Vec::as_slice);
        SessionSummary {
            state: self.state_of(&listed.session, own, now),
            host_id: own.first().map(|episode| episode.host_id.clone()),
            follows: listed.follows,
            members: listed.members,
            session: listed.session,
        }
    }

    /// The sessions of these natural keys this tenant's hooks reported, each with its derived
    /// state at `now`; unknown keys are left out. `keys` is already deduplicated and bounded.
    pub async fn find_sessions(
        &self,
        tenant_id: Uuid,
        keys: &[(String, String)],
        now: DateTime<Utc>,
    ) -> Result<Vec<SessionSummary>, ApiError> {
        let (agents, session_ids): (Vec<String>, Vec<String>) = keys.iter().cloned().unzip();
        let mut transaction = begin_tenant(self.pool(), tenant_id).await?;
        let rows =
            console_store::sessions_by_keys(&mut transaction, tenant_id, &agents, &session_ids)
                .await?;
        let ids: Vec<Uuid> = rows.iter().map(|listed| listed.session.id).collect();
        let episodes =
            by_session(episodes::episodes_of_sessions(&mut transaction, tenant_id, &ids).await?);
        transaction.commit().await?;
        Ok(rows
            .into_iter()
            .map(|listed| self.summary(listed, &episodes, now))
            .collect())
    }

    /// The tenant's machines that pulsed at or after `since`, most recently pulsed first.
    pub async fn list_machines(
        &self,
        tenant_id: Uuid,
        since: DateTime<Utc>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<MachineList, ApiError> {
        let bound = machines::MAX_EPISODES;
        let mut transaction = begin_tenant(self.pool(), tenant_id).await?;
        let mut rows = console_store::pulses_since(
            &mut transaction,
            tenant_id,
            since,
            i64::try_from(bound + 1).unwrap_or(i64::MAX),
        )
        .await?;
        let truncated = rows.len() > bound;
        rows.truncate(bound);
        let mut sessions: HashMap<Uuid, Session> = HashMap::new();
        for row in &rows {
            sessions
                .entry(row.session.id)
                .or_insert_with(|| row.session.clone());
        }
        let ids: Vec<Uuid> = sessions.keys().copied().collect();
        // ALL of each session's episodes, not only those on one host or in the window.
        let episodes =
            by_session(episodes::episodes_of_sessions(&mut transaction, tenant_id, &ids).await?);
        transaction.commit().await?;
        let seen: HashMap<Uuid, SeenSession> = sessions
            .into_iter()
            .map(|(id, session)| {
                let own = episodes.get(&id).map_or(&[][..], Vec::as_slice);
                let state = self.state_of(&session, own, now);
                (
                    id,
                    SeenSession {
                        agent: session.agent,
                        session_id: session.session_id,
                        project: session.project,
                        opened_at: session.opened_at,
                        state,
                    },
                )
            })
            .collect();
        let pulses: Vec<_> = rows.into_iter().map(|row| row.pulse).collect();
        Ok(MachineList {
            machines: machines::machines(&pulses, &seen, limit as usize),
            truncated,
        })
    }
}
