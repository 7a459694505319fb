//! What triage does for the closer (CONTRACT Part 2 table H: claim and finish), fenced on the
//! attempt id here and on the epoch through registry.

use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;

use crate::decide::RunState;
use crate::service::Triage;
use crate::status::Status;
use crate::store;

/// The closer's view of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunForClose {
    pub state: RunState,
    pub holder: Option<String>,
}

/// How a claim went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Won(Uuid),
    /// The attempt moved or the status is not claimable.
    Lost,
    /// Registry no longer shows the run closed at the observed epoch.
    Fenced,
}

impl Triage {
    /// The stored state (never seen: idle) and the holder of its attempt.
    pub async fn run_for_close(
        &self,
        call: &CallContext,
        run_id: Uuid,
    ) -> Result<RunForClose, ApiError> {
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        let state = store::find(&mut transaction, call.tenant_id, run_id).await?;
        let holder = store::holder(&mut transaction, call.tenant_id, run_id).await?;
        transaction.commit().await?;
        Ok(RunForClose {
            state: state.unwrap_or_else(RunState::never_seen),
            holder,
        })
    }

    /// Claims the run for a closer pass at `epoch`.
    pub async fn claim_for_close(
        &self,
        call: &CallContext,
        run_id: Uuid,
        epoch: i64,
        observed_attempt: Option<Uuid>,
    ) -> Result<Claim, ApiError> {
        if !self.closed_at(call, run_id, epoch).await? {
            return Ok(Claim::Fenced);
        }
        let attempt = Uuid::now_v7();
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        store::ensure(&mut transaction, call.tenant_id, run_id, call.now).await?;
        let pass = store::ClosePass {
            tenant_id: call.tenant_id,
            run_id,
            epoch,
        };
        let won = store::claim(&mut transaction, pass, observed_attempt, attempt, call.now).await?;
        transaction.commit().await?;
        Ok(if won {
            Claim::Won(attempt)
        } else {
            Claim::Lost
        })
    }

    /// Writes the pass's verdict: completed (or overflowed when the listing was truncated) and
    /// the watermark of the post-resolve listing. `None` when fenced (nothing written).
    pub async fn finish_close(
        &self,
        call: &CallContext,
        run_id: Uuid,
        attempt: Uuid,
        epoch: i64,
        visible: &[Uuid],
        truncated: bool,
    ) -> Result<Option<Status>, ApiError> {
        if !self.closed_at(call, run_id, epoch).await? {
            return Ok(None);
        }
        let status = if truncated {
            Status::Overflowed
        } else {
            Status::Completed
        };
        let watermark = &visible[..visible.len().min(crate::links::CEILING as usize)];
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        let pass = store::ClosePass {
            tenant_id: call.tenant_id,
            run_id,
            epoch,
        };
        let written =
            store::finish_close(&mut transaction, pass, attempt, status, watermark, call.now)
                .await?;
        transaction.commit().await?;
        Ok(written.then_some(status))
    }

    /// Whether registry shows the run closed at exactly `epoch`.
    async fn closed_at(
        &self,
        call: &CallContext,
        run_id: Uuid,
        epoch: i64,
    ) -> Result<bool, ApiError> {
        let session = self
            .links()
            .session_by_id(&call.onward(self.clock()), run_id)
            .await?;
        Ok(session.epoch == epoch && session.closed)
    }
}
