//! The registry's operations: validate nothing (the adapter did), decide with the pure
//! functions of [`crate::decide`], apply under the row lock, commit once.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::Notify;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use crate::decide::{
    self, AttachDecision, CloseDecision, HeartbeatDecision, OpenCommand, OpenDecision,
};
use crate::episodes;
use crate::live_batch::LiveRefresher;
use crate::liveness;
use crate::messages;
use crate::session::{Lease, Session};
use crate::store::{self, LiveRefresh};

mod pulses;

pub use pulses::LivenessRead;

/// The registry's state: its pool, lease, the heartbeat batcher, and the outbox relay to wake
/// after a commit that wrote a message.
#[derive(Debug, Clone)]
pub struct Registry {
    pool: PgPool,
    lease: Lease,
    window: chrono::Duration,
    live: LiveRefresher,
    relay: Option<Arc<Notify>>,
}

/// The answer to an open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub session: Session,
    pub created: bool,
    pub reopened: bool,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beat {
    pub id: Uuid,
    pub activation_epoch: i64,
    pub last_seen_at: DateTime<Utc>,
    pub resurrected: bool,
}

/// The answer to an attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    pub id: Uuid,
    pub attached: bool,
    pub resurrected: bool,
    pub activation_epoch: i64,
}

/// The answer to a close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub id: Uuid,
    pub activation_epoch: i64,
    pub closed_at: DateTime<Utc>,
    pub already_closed: bool,
}

impl Registry {
    /// Starts the heartbeat batcher on the current runtime.
    pub fn new(pool: PgPool, lease: Lease) -> Registry {
        Registry {
            live: LiveRefresher::start(pool.clone()),
            pool,
            lease,
            window: chrono::Duration::from_std(liveness::DEFAULT_WINDOW)
                .unwrap_or(chrono::Duration::seconds(120)),
            relay: None,
        }
    }

    /// Sets the liveness window (a killed client reads disconnected within it).
    pub fn with_liveness_window(mut self, window: std::time::Duration) -> Registry {
        if let Ok(window) = chrono::Duration::from_std(window) {
            self.window = window;
        }
        self
    }

    /// Wakes `relay` whenever a commit wrote an outbox message.
    pub fn with_relay(mut self, relay: Arc<Notify>) -> Registry {
        self.relay = Some(relay);
        self
    }

    fn published(&self) {
        if let Some(relay) = &self.relay {
            relay.notify_one();
        }
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub fn lease(&self) -> Lease {
        self.lease
    }

    /// Table A. The tenant+project advisory lock is taken first (on the row's frozen project
    /// when the row exists), then the row lock; the insert races resolve through the unique
    /// natural key, after which the loser decides against the winner's row.
    pub async fn open(
        &self,
        tenant_id: Uuid,
        command: &OpenCommand,
        now: DateTime<Utc>,
    ) -> Result<Opened, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let existing_project = store::project_of(
            &mut transaction,
            tenant_id,
            &command.agent,
            &command.session_id,
        )
        .await?;
        let lock_project = match &existing_project {
            Some(project) => project.as_deref(),
            None => command.project.as_deref(),
        };
        store::lock_project(&mut transaction, tenant_id, lock_project).await?;
        if existing_project.is_none() {
            let fresh = decide::new_session(Uuid::now_v7(), command, now);
            if let Some(inserted) =
                store::insert_if_absent(&mut transaction, tenant_id, &fresh).await?
            {
                if let Some(follows) = &command.follows_session_id {
                    episodes::link_follows(
                        &mut transaction,
                        tenant_id,
                        inserted.id,
                        &command.agent,
                        follows,
                    )
                    .await?;
                }
                transaction.commit().await?;
                return Ok(Opened {
                    session: inserted,
                    created: true,
                    reopened: false,
                });
            }
        }
        let row = store::lock_by_key(
            &mut transaction,
            tenant_id,
            &command.agent,
            &command.session_id,
        )
        .await?
        .ok_or_else(|| ApiError::internal("session row vanished under its lock"))?;
        let decision = decide::decide_open(Some(&row), command, now, self.lease);
        if decision == OpenDecision::Conflict {
            return Err(ApiError::conflict(
                "session already open with a different project, scope or selector",
            ));
        }
        let next = decide::transition_open(&row, decision, command, now);
        store::update(&mut transaction, tenant_id, &next).await?;
        let reopened = matches!(decision, OpenDecision::Reopen { .. });
        if reopened {
            messages::resurrected(&mut transaction, tenant_id, &next, now).await?;
        }
        transaction.commit().await?;
        if reopened {
            self.published();
        }
        Ok(Opened {
            session: next,
            created: false,
            reopened: matches!(decision, OpenDecision::Reopen { .. }),
        })
    }

    /// Table B. A live row is refreshed through the batcher (one statement for a whole batch); anything else (absent, closed, stale,
    /// or closed between the two) takes the locked path and resurrects exactly once.
    pub async fn heartbeat(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        excerpt: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Beat, ApiError> {
        let live = LiveRefresh {
            tenant_id,
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            now,
            cutoff: now - self.lease.duration,
            excerpt: excerpt.map(str::to_string),
        };
        if let Some(refreshed) = self.live.refresh(live).await? {
            return Ok(Beat {
                id: refreshed.id,
                activation_epoch: refreshed.activation_epoch,
                last_seen_at: refreshed.last_seen_at,
                resurrected: false,
            });
        }
        self.locked_heartbeat(tenant_id, agent, session_id, excerpt, None, now)
            .await
    }

    /// A heartbeat replayed from a hook's spool, always on the locked path: it is decided at
    /// its clamped observation instant, a replay from before the row's close changes nothing,
    /// and its excerpt is kept only when nothing newer was seen.
    pub async fn replayed_heartbeat(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        excerpt: Option<&str>,
        observed_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Beat, ApiError> {
        self.locked_heartbeat(
            tenant_id,
            agent,
            session_id,
            excerpt,
            Some(observed_at),
            now,
        )
        .await
    }

    /// Table B under the row lock, for a live heartbeat (`observed_at` absent) or a replay.
    async fn locked_heartbeat(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        excerpt: Option<&str>,
        observed_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Beat, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::lock_by_key(&mut transaction, tenant_id, agent, session_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that agent and sessionId"))?;
        let (at, decision) = match observed_at {
            None => (now, decide::decide_heartbeat(&row, now, self.lease)),
            Some(observed) => {
                let at = decide::replay_instant(observed, row.last_seen_at, now);
                (at, decide::decide_replayed_heartbeat(&row, at, self.lease))
            }
        };
        let next = decide::transition_heartbeat(&row, decision, at);
        if decision != HeartbeatDecision::Superseded {
            store::update(&mut transaction, tenant_id, &next).await?;
            let newest = observed_at.is_none_or(|observed| observed >= row.last_seen_at);
            if let Some(excerpt) = excerpt.filter(|_| newest) {
                store::set_excerpt(&mut transaction, tenant_id, row.id, excerpt).await?;
            }
        }
        let resurrected = decision == HeartbeatDecision::Resurrect;
        if resurrected {
            messages::resurrected(&mut transaction, tenant_id, &next, now).await?;
        }
        transaction.commit().await?;
        if resurrected {
            self.published();
        }
        Ok(Beat {
            id: next.id,
            activation_epoch: next.activation_epoch,
            last_seen_at: next.last_seen_at,
            resurrected,
        })
    }

    /// Table C.
    pub async fn close(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Closed, ApiError> {
        self.close_observed(tenant_id, agent, session_id, None, now)
            .await
    }

    /// Table C; a replayed close (`observed_at`) stamps its observation instant clamped to
    /// `[last_seen_at, now]`.
    pub async fn close_observed(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
        observed_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Closed, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::lock_by_key(&mut transaction, tenant_id, agent, session_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that agent and sessionId"))?;
        let decision = decide::decide_close(&row);
        let at = observed_at.map_or(now, |observed| {
            decide::replay_instant(observed, row.last_seen_at, now)
        });
        let next = decide::transition_close(&row, decision, at);
        let stamped = decision == CloseDecision::Stamp;
        if stamped {
            store::update(&mut transaction, tenant_id, &next).await?;
            messages::closed(&mut transaction, tenant_id, &next, self.lease, now).await?;
        }
        transaction.commit().await?;
        if stamped {
            self.published();
        }
        Ok(Closed {
            id: next.id,
            activation_epoch: next.activation_epoch,
            closed_at: next.closed_at.unwrap_or(now),
            already_closed: decision == CloseDecision::AlreadyClosed,
        })
    }

    /// Table E for a write carrying a run id: NOT_FOUND for an unknown or foreign run, else the
    /// attach decision applied under the row lock.
    pub async fn attach_write(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Attached, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::lock_by_id(&mut transaction, tenant_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that sessionRunId"))?;
        let decision = decide::decide_attach(&row, now, self.lease);
        let next = decide::transition_attach(&row, decision, now);
        if decision != AttachDecision::Unattributed {
            store::update(&mut transaction, tenant_id, &next).await?;
        }
        let resurrected = decision == AttachDecision::Resurrect;
        if resurrected {
            messages::resurrected(&mut transaction, tenant_id, &next, now).await?;
        }
        transaction.commit().await?;
        if resurrected {
            self.published();
        }
        Ok(Attached {
            id: next.id,
            attached: decision != AttachDecision::Unattributed,
            resurrected: decision == AttachDecision::Resurrect,
            activation_epoch: next.activation_epoch,
        })
    }

    /// The single-open default (table E, rows without an id): under the tenant+project advisory
    /// lock that `open` also takes, the one leased-open run of the project gets its lease
    /// floored and is returned; zero or several runs return `None`.
    pub async fn sole_open_session(
        &self,
        tenant_id: Uuid,
        project: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<Uuid>, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        store::lock_project(&mut transaction, tenant_id, project).await?;
        let open = store::lock_open_of_project(
            &mut transaction,
            tenant_id,
            project,
            now - self.lease.duration,
        )
        .await?;
        let [only] = open.as_slice() else {
            transaction.commit().await?;
            return Ok(None);
        };
        let next = decide::transition_attach(only, AttachDecision::Floor, now);
        store::update(&mut transaction, tenant_id, &next).await?;
        transaction.commit().await?;
        Ok(Some(next.id))
    }

    /// A row by run id (read-only: no lease refresh).
    pub async fn get_by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Session, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::find_by_id(&mut transaction, tenant_id, id).await?;
        transaction.commit().await?;
        row.ok_or_else(|| ApiError::not_found("no session with that sessionRunId"))
    }

    /// A row and its excerpt, for the closer (read-only).
    pub async fn read_for_close(
        &self,
        tenant_id: Uuid,
        id: Uuid,
    ) -> Result<(Session, Option<String>), ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::find_by_id(&mut transaction, tenant_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found("no session with that sessionRunId"))?;
        let excerpt = store::excerpt(&mut transaction, tenant_id, id).await?;
        transaction.commit().await?;
        Ok((row, excerpt))
    }

    /// Clears the excerpt once the closer's verdict is durable: only while the row is still
    /// closed at `epoch`.
    pub async fn consume_excerpt(
        &self,
        tenant_id: Uuid,
        id: Uuid,
        epoch: i64,
    ) -> Result<bool, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let cleared = store::consume_excerpt(&mut transaction, tenant_id, id, epoch).await?;
        transaction.commit().await?;
        Ok(cleared)
    }

    /// A row by natural key (read-only: no lease refresh).
    pub async fn get_by_key(
        &self,
        tenant_id: Uuid,
        agent: &str,
        session_id: &str,
    ) -> Result<Session, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = store::find_by_key(&mut transaction, tenant_id, agent, session_id).await?;
        transaction.commit().await?;
        row.ok_or_else(|| ApiError::not_found("no session with that agent and sessionId"))
    }
}
