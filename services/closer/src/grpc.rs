//! The gRPC adapter for `baton.closer.v1`.

use tonic::{Request, Response, Status};

use baton_kit::clock::{Clock, TEST_NOW_KEY, iso, to_timestamp};
use baton_kit::db::begin_tenant;
use baton_kit::grpc::CallContext;
use baton_kit::text;
use baton_proto::closer::v1 as proto;
use baton_proto::closer::v1::closer_server;

use crate::store;
use crate::sweep::Sweeper;

/// The `Closer` gRPC service.
#[derive(Debug, Clone)]
pub struct CloserGrpc {
    /// `None` while the kill switch is off.
    sweeper: Option<Sweeper>,
    pool: sqlx::PgPool,
    clock: Clock,
}

impl CloserGrpc {
    pub fn new(sweeper: Option<Sweeper>, pool: sqlx::PgPool, clock: Clock) -> CloserGrpc {
        CloserGrpc {
            sweeper,
            pool,
            clock,
        }
    }
}

#[tonic::async_trait]
impl closer_server::Closer for CloserGrpc {
    #[tracing::instrument(name = "closer.sweep", skip_all)]
    async fn sweep(
        &self,
        request: Request<proto::SweepRequest>,
    ) -> Result<Response<proto::SweepResponse>, Status> {
        let now = baton_kit::grpc::call_instant(&request, &self.clock)?;
        let Some(sweeper) = &self.sweeper else {
            return Ok(Response::new(proto::SweepResponse::default()));
        };
        let forwarded = request
            .metadata()
            .get(TEST_NOW_KEY)
            .is_some()
            .then(|| iso(now))
            .filter(|_| self.clock.test_mode());
        let report = sweeper
            .sweep_once(now, forwarded.as_deref())
            .await?
            .unwrap_or_default();
        Ok(Response::new(proto::SweepResponse {
            enabled: true,
            closed: report.closed as u32,
            retried: report.retried as u32,
        }))
    }

    #[tracing::instrument(name = "closer.list_passes", skip_all)]
    async fn list_passes(
        &self,
        request: Request<proto::ListPassesRequest>,
    ) -> Result<Response<proto::ListPassesResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let run_id = text::session_run_id("sessionRunId", &request.get_ref().session_run_id)?;
        let mut transaction = begin_tenant(&self.pool, call.tenant_id)
            .await
            .map_err(baton_kit::ApiError::from)?;
        let rows = store::list(&mut transaction, call.tenant_id, run_id).await?;
        transaction
            .commit()
            .await
            .map_err(baton_kit::ApiError::from)?;
        Ok(Response::new(proto::ListPassesResponse {
            passes: rows
                .into_iter()
                .map(|row| proto::Pass {
                    activation_epoch: row.activation_epoch,
                    state: row.state,
                    outcome: row.outcome,
                    resolved: row.resolved as u32,
                    rejected: row.rejected as u32,
                    failures: row.failures as u32,
                    next_attempt_at: row.next_attempt_at.map(to_timestamp),
                })
                .collect(),
        }))
    }
}
