//! One candidate's resolve within a pass: fenced on the epoch, preceded by a live re-read of
//! the commitment, and marked on its verdict.
//!
//! A re-run of a pass whose attempt was cut by a crash can find a candidate already resolved by
//! that attempt: the attempt died between provenance's resolve and the verdict's mark, or died
//! waiting on a resolve that provenance went on to commit. Such a commitment is still this
//! pass's resolve, and its verdict says so (the pass's count is read from its verdicts).

use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use super::{PassCall, Passes};
use crate::links::MemoryRead;
use crate::verdicts;

/// How one candidate's resolve went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolve {
    /// The run's epoch moved or the run reopened: the pass stops before this resolve.
    Fenced,
    /// This attempt resolved it.
    Changed,
    /// Not resolved by this attempt: no longer open, or resolved already.
    Unchanged,
}

/// Whether the live re-read found the commitment resolved (pure).
fn found_resolved(live: Option<&MemoryRead>) -> bool {
    live.and_then(|memory| memory.commitment_status.as_deref()) == Some("resolved")
}

/// Whether the live re-read found an open commitment the pass may resolve (pure).
fn resolvable(live: Option<&MemoryRead>) -> bool {
    live.is_some_and(|memory| {
        memory.status == "open"
            && matches!(
                memory.commitment_status.as_deref(),
                Some("open" | "waiting")
            )
    })
}

impl Passes {
    /// Resolves `candidate` unless fenced or no longer open, and marks its verdict: `resolved`
    /// when this attempt resolved it, or when `rerun` and a cut attempt of this pass did.
    pub(super) async fn resolve_candidate(
        &self,
        call: &PassCall,
        candidate: Uuid,
        rerun: bool,
    ) -> Result<Resolve, ApiError> {
        let (key, outbound) = (call.key, call.outbound());
        let (epoch, closed) = self.links.epoch(&outbound, key.run_id).await?;
        if epoch != key.epoch || !closed {
            return Ok(Resolve::Fenced);
        }
        let live = self.links.memory(&outbound, candidate).await?;
        let changed = resolvable(live.as_ref())
            && self.links.resolve(&outbound, candidate, key.run_id).await?;
        let ours = changed
            || (rerun
                && found_resolved(live.as_ref())
                && self.cut_attempt_resolved(call, candidate).await?);
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        verdicts::mark(&mut transaction, key, candidate, ours, call.now).await?;
        transaction.commit().await?;
        Ok(if changed {
            Resolve::Changed
        } else {
            Resolve::Unchanged
        })
    }

    /// Whether a cut attempt of this pass resolved `candidate`: the closer's resolve stamped
    /// with the run, and no other epoch's pass of the run recorded it as its own.
    async fn cut_attempt_resolved(
        &self,
        call: &PassCall,
        candidate: Uuid,
    ) -> Result<bool, ApiError> {
        let key = call.key;
        let mut transaction = begin_tenant(&self.pool, key.tenant_id).await?;
        let elsewhere =
            verdicts::resolved_in_another_epoch(&mut transaction, key, candidate).await?;
        transaction.commit().await?;
        if elsewhere {
            return Ok(false);
        }
        self.links
            .resolved_by_closer_of(&call.outbound(), candidate, key.run_id)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(status: &str, commitment: Option<&str>) -> MemoryRead {
        MemoryRead {
            memory_type: "commitment".to_string(),
            topic: "t".to_string(),
            content: "c".to_string(),
            status: status.to_string(),
            commitment_status: commitment.map(str::to_string),
            project: None,
        }
    }

    #[test]
    fn only_an_open_commitment_is_resolvable_and_only_a_resolved_one_is_checked_as_ours() {
        let table = [
            // (memory, resolvable, found resolved)
            (Some(memory("open", Some("open"))), true, false),
            (Some(memory("open", Some("waiting"))), true, false),
            (Some(memory("open", Some("resolved"))), false, true),
            (Some(memory("archived", Some("resolved"))), false, true),
            (Some(memory("archived", Some("open"))), false, false),
            (Some(memory("open", Some("expired"))), false, false),
            (Some(memory("open", None)), false, false),
            (None, false, false),
        ];
        for (live, open, resolved) in table {
            assert_eq!(resolvable(live.as_ref()), open, "{live:?}");
            assert_eq!(found_resolved(live.as_ref()), resolved, "{live:?}");
        }
    }
}
