//! The gRPC adapter for `baton.usage.v1`: reads the call's tenant and "now", checks the
//! request at the boundary and maps answers to the wire.

use std::time::Duration;

use sqlx::PgPool;
use tonic::{Request, Response, Status};

use baton_kit::clock::{Clock, from_timestamp, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_kit::member::member_of;
use baton_kit::text;
use baton_proto::Timestamp;
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server;

use crate::budgets::service as budgets;
use crate::metrics::{self, Accepted, Instruments, UploadMeasure};
use crate::pricing::PriceCache;
use crate::query::{self, GroupBy};
use crate::sessions::{self, Cursor, Filter};
use crate::{session_figures, tree, upload, validate};

/// The `Usage` gRPC service.
#[derive(Debug, Clone)]
pub struct UsageGrpc {
    pool: PgPool,
    prices: PriceCache,
    clock: Clock,
    watchdog: chrono::Duration,
    /// Wakes the outbox relay when an upload enqueued a message.
    relay: Option<std::sync::Arc<tokio::sync::Notify>>,
}

impl UsageGrpc {
    pub fn new(pool: PgPool, clock: Clock, watchdog: Duration) -> UsageGrpc {
        UsageGrpc {
            pool,
            prices: PriceCache::default(),
            clock,
            watchdog: chrono::Duration::from_std(watchdog).unwrap_or(chrono::Duration::MAX),
            relay: None,
        }
    }

    /// Wakes `relay` whenever an upload's commit wrote an outbox message.
    pub fn with_relay(mut self, relay: std::sync::Arc<tokio::sync::Notify>) -> UsageGrpc {
        self.relay = Some(relay);
        self
    }

    fn call<T>(&self, request: &Request<T>) -> Result<CallContext, Status> {
        CallContext::from_request(request, &self.clock)
    }

    /// Checks and stores one batch, telling `measure` when the store work begins.
    async fn store_batch(
        &self,
        request: &Request<proto::UploadBatchRequest>,
        measure: &mut UploadMeasure<'_>,
    ) -> Result<(upload::Uploaded, Accepted), Status> {
        let call = self.call(request)?;
        // The member of the key that uploads, as the gateway resolved it (absent: none).
        let member = member_of(request)?;
        let batch = validate::batch(request.get_ref(), member, call.now)?;
        measure.store_begins();
        let table = self.prices.table(&self.pool).await.map_err(db)?;
        let done = upload::upload(&self.pool, &table, call.tenant_id, call.now, &batch).await?;
        if done.budget_crossings + done.runaway_flags > 0
            && let Some(relay) = &self.relay
        {
            relay.notify_one();
        }
        let accepted = Accepted {
            rows: batch.usage.len(),
            ingest_delay: done
                .newest_usage_at
                .map(|at| metrics::ingest_delay_seconds(at, call.now)),
        };
        Ok((done, accepted))
    }
}

fn instant(
    field: &str,
    value: Option<&Timestamp>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    value
        .map(|value| {
            from_timestamp(value)
                .ok_or_else(|| ApiError::invalid_input(format!("{field} must be a valid instant")))
        })
        .transpose()
}

fn db(error: sqlx::Error) -> Status {
    ApiError::from(error).into()
}

#[tonic::async_trait]
impl usage_server::Usage for UsageGrpc {
    #[tracing::instrument(name = "usage.upload_batch", skip_all)]
    async fn upload_batch(
        &self,
        request: Request<proto::UploadBatchRequest>,
    ) -> Result<Response<proto::UploadBatchResponse>, Status> {
        let mut measure = UploadMeasure::begin(Instruments::usage());
        let stored = self.store_batch(&request, &mut measure).await;
        measure.settle(stored.as_ref().map(|(_, accepted)| accepted));
        let (done, _) = stored?;
        Ok(Response::new(proto::UploadBatchResponse {
            sessions: done.sessions,
            agents: done.agents,
            edges_inserted: done.edges_inserted,
            usage_inserted: done.usage_inserted,
            usage_replaced: done.usage_replaced,
            usage_unchanged: done.usage_unchanged,
            deliveries_inserted: done.deliveries_inserted,
            deliveries_duplicate: done.deliveries_duplicate,
        }))
    }

    #[tracing::instrument(name = "usage.query_usage", skip_all)]
    async fn query_usage(
        &self,
        request: Request<proto::QueryUsageRequest>,
    ) -> Result<Response<proto::QueryUsageResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let group_by = GroupBy::parse(&message.group_by)?;
        let zone = query::zone(message.timezone.as_deref())?;
        let (from, to) = query::range(
            instant("from", message.from.as_ref())?,
            instant("to", message.to.as_ref())?,
            call.now,
        )?;
        let groups = query::query(&self.pool, call.tenant_id, group_by, &zone, from, to).await?;
        let mut total = crate::figures::Sums::default();
        for group in groups.values() {
            total.merge(&group.sums);
        }
        Ok(Response::new(proto::QueryUsageResponse {
            group_by: group_by.as_str().to_string(),
            timezone: zone.name().to_string(),
            from: Some(to_timestamp(from)),
            to: Some(to_timestamp(to)),
            groups: groups
                .iter()
                .map(|(key, group)| proto::UsageGroup {
                    key: key.clone(),
                    figures: Some(group.sums.figures()),
                    by_model: if message.split_by_model {
                        group
                            .by_model
                            .iter()
                            .map(|(model, sums)| proto::ModelFigures {
                                model: model.clone(),
                                figures: Some(sums.figures()),
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
            total: Some(total.figures()),
        }))
    }

    #[tracing::instrument(name = "usage.get_tree", skip_all)]
    async fn get_tree(
        &self,
        request: Request<proto::GetTreeRequest>,
    ) -> Result<Response<proto::GetTreeResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let agent = text::agent(&message.agent)?;
        let session_id = text::session_id(&message.session_id)?;
        let stored = tree::load(&self.pool, call.tenant_id, &agent, &session_id)
            .await?
            .ok_or_else(|| ApiError::not_found("no usage stored for this session"))?;
        let table = self.prices.table(&self.pool).await.map_err(db)?;
        Ok(Response::new(tree::assemble(
            &stored,
            &table,
            call.now,
            self.watchdog,
        )))
    }

    #[tracing::instrument(name = "usage.session_figures", skip_all, fields(answered))]
    async fn session_figures(
        &self,
        request: Request<proto::SessionFiguresRequest>,
    ) -> Result<Response<proto::SessionFiguresResponse>, Status> {
        let call = self.call(&request)?;
        let keys = session_figures::requested(&request.get_ref().sessions)?;
        let answer = session_figures::figures(&self.pool, call.tenant_id, &keys).await?;
        tracing::Span::current().record("answered", answer.sessions.len());
        Ok(Response::new(answer))
    }

    #[tracing::instrument(name = "usage.list_sessions", skip_all)]
    async fn list_sessions(
        &self,
        request: Request<proto::ListSessionsRequest>,
    ) -> Result<Response<proto::ListSessionsResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let order = sessions::Order::of(message.order)?;
        let (from, to) = sessions::window(
            order,
            instant("from", message.from.as_ref())?,
            instant("to", message.to.as_ref())?,
            call.now,
        )?;
        let filter = Filter {
            order,
            from,
            to,
            project: message.project.as_deref().map(text::project).transpose()?,
            agent: message.agent.as_deref().map(text::agent).transpose()?,
            host_id: message
                .host_id
                .as_deref()
                .map(|host| validate::id("hostId", host, 128))
                .transpose()?,
            member: message
                .member
                .as_deref()
                .map(sessions::MemberFilter::parse)
                .transpose()?,
            runaway: message.runaway,
            limit: sessions::limit(message.limit)?,
            after: message.cursor.as_deref().map(Cursor::decode).transpose()?,
        };
        Ok(Response::new(
            sessions::list(&self.pool, call.tenant_id, &filter).await?,
        ))
    }

    #[tracing::instrument(name = "usage.create_budget", skip_all)]
    async fn create_budget(
        &self,
        request: Request<proto::CreateBudgetRequest>,
    ) -> Result<Response<proto::Budget>, Status> {
        let call = self.call(&request)?;
        let budget = budgets::budget_of(request.get_ref(), uuid::Uuid::now_v7(), call.now)?;
        Ok(Response::new(
            budgets::create(&self.pool, call.tenant_id, &budget, call.now).await?,
        ))
    }

    #[tracing::instrument(name = "usage.list_budgets", skip_all)]
    async fn list_budgets(
        &self,
        request: Request<proto::ListBudgetsRequest>,
    ) -> Result<Response<proto::ListBudgetsResponse>, Status> {
        let call = self.call(&request)?;
        Ok(Response::new(proto::ListBudgetsResponse {
            budgets: budgets::list(&self.pool, call.tenant_id, call.now).await?,
        }))
    }

    #[tracing::instrument(name = "usage.delete_budget", skip_all)]
    async fn delete_budget(
        &self,
        request: Request<proto::DeleteBudgetRequest>,
    ) -> Result<Response<proto::DeleteBudgetResponse>, Status> {
        let call = self.call(&request)?;
        budgets::delete(&self.pool, call.tenant_id, &request.get_ref().id).await?;
        Ok(Response::new(proto::DeleteBudgetResponse {}))
    }

    #[tracing::instrument(name = "usage.get_runaway_policy", skip_all)]
    async fn get_runaway_policy(
        &self,
        request: Request<proto::GetRunawayPolicyRequest>,
    ) -> Result<Response<proto::RunawayPolicy>, Status> {
        let call = self.call(&request)?;
        Ok(Response::new(
            crate::runaway::service::get(&self.pool, call.tenant_id).await?,
        ))
    }

    #[tracing::instrument(name = "usage.set_runaway_policy", skip_all)]
    async fn set_runaway_policy(
        &self,
        request: Request<proto::RunawayPolicy>,
    ) -> Result<Response<proto::RunawayPolicy>, Status> {
        let call = self.call(&request)?;
        let policy = crate::runaway::service::policy_of(request.get_ref())?;
        Ok(Response::new(
            crate::runaway::service::set(&self.pool, call.tenant_id, &policy, call.now).await?,
        ))
    }
}
