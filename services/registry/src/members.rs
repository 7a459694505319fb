//! Attribution of sessions to members: the people whose keys reported them. The gateway sends
//! the key's member with every open, heartbeat and pulse (`x-baton-member`); after the call's
//! own work, the session's run records the member once (`agent_sessions.members`, at most
//! [`MAX_MEMBERS`], first seen first).
//!
//! Attribution is not part of the lifecycle decision: it is written after the call's
//! transaction, by one idempotent statement, so the hot heartbeat path keeps its single batched
//! statement. Each replica remembers which (run, member) pairs it has written and skips them,
//! so a member's steady heartbeats cost nothing after the first; a failed write is logged and
//! retried by the next call of that member (the call itself has succeeded).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;

/// Most members one session records.
pub const MAX_MEMBERS: usize = 32;
/// Pairs a replica remembers before it starts over (a forgotten pair costs one no-op write).
const REMEMBERED: usize = 100_000;

/// Records members on sessions, once per (run, member) per replica.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    written: Arc<Mutex<HashSet<(Uuid, Uuid, String)>>>,
}

impl Attribution {
    fn remembered(&self, key: &(Uuid, Uuid, String)) -> bool {
        self.written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    }

    fn remember(&self, key: (Uuid, Uuid, String)) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if written.len() >= REMEMBERED {
            written.clear();
        }
        written.insert(key);
    }

    /// Records `member` on the run `id` of `tenant_id` unless this replica already did.
    pub async fn record(&self, pool: &PgPool, tenant_id: Uuid, id: Uuid, member: Option<&str>) {
        let Some(member) = member else { return };
        let key = (tenant_id, id, member.to_string());
        if self.remembered(&key) {
            return;
        }
        match write(pool, tenant_id, id, member).await {
            Ok(()) => self.remember(key),
            Err(error) => {
                tracing::warn!(error = %error, "registry: session member not recorded");
            }
        }
    }
}

/// Appends `member` to the run's members when absent and under the bound.
#[tracing::instrument(name = "db.registry.add_member", skip_all)]
async fn write(pool: &PgPool, tenant_id: Uuid, id: Uuid, member: &str) -> Result<(), sqlx::Error> {
    let mut transaction = begin_tenant(pool, tenant_id).await?;
    sqlx::query!(
        "UPDATE registry.agent_sessions SET members = members || $3::text \
         WHERE tenant_id = $1 AND id = $2 AND NOT ($3 = ANY(members)) \
           AND cardinality(members) < $4",
        tenant_id,
        id,
        member,
        MAX_MEMBERS as i32,
    )
    .execute(&mut *transaction)
    .await?;
    transaction.commit().await
}
