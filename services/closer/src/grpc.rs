//! The gRPC adapter for `baton.closer.v1`.

use tonic::{Request, Response, Status};

use baton_kit::clock::{Clock, TEST_NOW_KEY, iso, to_timestamp};
use baton_kit::db::begin_tenant;
use baton_kit::grpc::CallContext;
use baton_kit::text;
use baton_proto::closer::v1 as proto;
use baton_proto::closer::v1::closer_server;

use crate::links::Links;
use crate::store::{self, PassRow};
use crate::sweep::Sweeper;
use crate::undo::{self, Trail};
use crate::verdicts::{self, VerdictRow};

/// The `Closer` gRPC service.
#[derive(Debug, Clone)]
pub struct CloserGrpc {
    /// `None` while the kill switch is off.
    sweeper: Option<Sweeper>,
    pool: sqlx::PgPool,
    links: Links,
    clock: Clock,
}

impl CloserGrpc {
    pub fn new(
        sweeper: Option<Sweeper>,
        pool: sqlx::PgPool,
        links: Links,
        clock: Clock,
    ) -> CloserGrpc {
        CloserGrpc {
            sweeper,
            pool,
            links,
            clock,
        }
    }
}

/// A stored evidence item as sent (the stored shape is the closer's own; an item it cannot
/// read is left out rather than failing the listing).
fn evidence_of(evidence: &serde_json::Value) -> Vec<proto::Evidence> {
    evidence
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(proto::Evidence {
                        quote: item["quote"].as_str()?.to_string(),
                        source: item["source"].as_str()?.to_string(),
                        memory_id: item["memoryId"].as_str().map(str::to_string),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn verdict_of(row: VerdictRow, run_id: uuid::Uuid, trails: &[Trail]) -> proto::Verdict {
    let undone_at = (row.verdict == "resolved")
        .then(|| trails.iter().find(|trail| trail.memory_id == row.memory_id))
        .flatten()
        .and_then(|trail| undo::undone_at(&trail.events, run_id, row.resolved_at));
    proto::Verdict {
        memory_id: row.memory_id.to_string(),
        verdict: row.verdict,
        reason: row.reason,
        judge: row.judge,
        evidence: evidence_of(&row.evidence),
        resolved_at: row.resolved_at.map(to_timestamp),
        undone: undone_at.is_some(),
        undone_at: undone_at.map(to_timestamp),
    }
}

fn pass_of(row: PassRow, verdicts: Vec<proto::Verdict>) -> proto::Pass {
    proto::Pass {
        activation_epoch: row.activation_epoch,
        state: row.state,
        outcome: row.outcome,
        resolved: row.resolved as u32,
        rejected: row.rejected as u32,
        failures: row.failures as u32,
        next_attempt_at: row.next_attempt_at.map(to_timestamp),
        verdicts,
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
        let verdict_rows = verdicts::list(&mut transaction, call.tenant_id, run_id).await?;
        transaction
            .commit()
            .await
            .map_err(baton_kit::ApiError::from)?;
        let resolved: Vec<uuid::Uuid> = verdict_rows
            .iter()
            .filter(|row| row.verdict == "resolved")
            .map(|row| row.memory_id)
            .collect();
        let trails = if resolved.is_empty() {
            Vec::new()
        } else {
            self.links
                .trails(&call.onward(&self.clock), &resolved)
                .await?
        };
        let mut by_epoch: Vec<(i64, Vec<proto::Verdict>)> = Vec::new();
        for row in verdict_rows {
            let epoch = row.activation_epoch;
            let verdict = verdict_of(row, run_id, &trails);
            match by_epoch.iter_mut().find(|(each, _)| *each == epoch) {
                Some((_, list)) => list.push(verdict),
                None => by_epoch.push((epoch, vec![verdict])),
            }
        }
        Ok(Response::new(proto::ListPassesResponse {
            passes: rows
                .into_iter()
                .map(|row| {
                    let verdicts = by_epoch
                        .iter_mut()
                        .find(|(epoch, _)| *epoch == row.activation_epoch)
                        .map(|(_, list)| std::mem::take(list))
                        .unwrap_or_default();
                    pass_of(row, verdicts)
                })
                .collect(),
        }))
    }

    #[tracing::instrument(name = "closer.report", skip_all)]
    async fn report(
        &self,
        request: Request<proto::ReportRequest>,
    ) -> Result<Response<proto::ReportResponse>, Status> {
        let call = CallContext::from_request(&request, &self.clock)?;
        let since = baton_kit::clock::required_since("since", request.get_ref().since.as_ref())?;
        let report =
            crate::report::gather(&self.pool, &self.links, &call.onward(&self.clock), since)
                .await?;
        Ok(Response::new(report))
    }
}
