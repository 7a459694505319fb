//! Sidecar pulses and the liveness derived from them: recording a pulse, reading a session's
//! state with its episodes and `/clear` neighbours, and the one function every state comes from.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use super::Registry;
use crate::decide;
use crate::episodes::{self, Episode, Pulse};
use crate::liveness::{self, State};
use crate::session::Session;
use crate::store;

/// A session's liveness read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessRead {
    pub session: Session,
    pub state: State,
    pub follows: Option<Uuid>,
    /// The newest session that follows this one (its `/clear` successor).
    pub followed_by: Option<Uuid>,
    pub episodes: Vec<Episode>,
}

impl Registry {
    /// Records a sidecar pulse for the session with this natural key, at its observation time
    /// (clamped to `[opened_at, now]`), and answers the session's state after it. Never touches the lease.
    pub async fn pulse(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        pulse: &Pulse,
        observed_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(Uuid, State), ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::find_by_key(&mut transaction, tenant_id, agent, session_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that agent and sessionId"))?;
        let at = observed_at.map_or(now, |observed| {
            decide::pulse_instant(observed, row.opened_at, now)
        });
        if !episodes::record_pulse(&mut transaction, tenant_id, row.id, pulse, at).await? {
            return Err(ApiError::conflict(
                "episodeId already belongs to another session",
            ));
        }
        let episodes = episodes::episodes_of(&mut transaction, tenant_id, row.id).await?;
        transaction.commit().await?;
        Ok((row.id, self.state_of(&row, &episodes, now)))
    }

    /// A session's derived liveness, episodes, predecessor and successor (read-only).
    pub async fn liveness(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<LivenessRead, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let session = store::find_by_id(&mut transaction, tenant_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that sessionRunId"))?;
        let episodes = episodes::episodes_of(&mut transaction, tenant_id, id).await?;
        let follows = episodes::follows_of(&mut transaction, tenant_id, id).await?;
        let followed_by = episodes::followed_by(&mut transaction, tenant_id, id).await?;
        transaction.commit().await?;
        Ok(LivenessRead {
            state: self.state_of(&session, &episodes, now),
            session,
            follows,
            followed_by,
            episodes,
        })
    }

    /// A session's derived state from its newest episodes ([`episodes::MAX_EPISODES_READ`]), at
    /// `now`, with this registry's lease and liveness window. Every read that shows a state
    /// derives it here, so a list and GetLiveness never disagree.
    pub(crate) fn state_of(
        &self,
        session: &Session,
        episodes: &[Episode],
        now: DateTime<Utc>,
    ) -> State {
        let times: Vec<_> = episodes.iter().map(Episode::times).collect();
        liveness::derive(session, self.lease, &times, self.window, now)
    }
}
