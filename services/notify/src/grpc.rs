//! The gRPC adapter for `baton.notify.v1`.

use tonic::{Request, Response, Status};
use uuid::Uuid;

use baton_kit::clock::{Clock, to_timestamp};
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_proto::notify::v1 as proto;
use baton_proto::notify::v1::notify_server;

use crate::service::{DeliveryLog, Notify};
use crate::store::WebhookRow;

/// The `Notify` gRPC service.
#[derive(Debug, Clone)]
pub struct NotifyGrpc {
    notify: Notify,
    clock: Clock,
}

impl NotifyGrpc {
    pub fn new(notify: Notify, clock: Clock) -> NotifyGrpc {
        NotifyGrpc { notify, clock }
    }

    fn call<T>(&self, request: &Request<T>) -> Result<CallContext, Status> {
        CallContext::from_request(request, &self.clock)
    }
}

fn parse_id(field: &str, text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::invalid_input(format!("{field} must be a uuid")))
}

fn webhook(row: WebhookRow) -> proto::Webhook {
    proto::Webhook {
        id: row.id.to_string(),
        url: row.url,
        events: row.events,
        format: row.format,
        created_at: Some(to_timestamp(row.created_at)),
    }
}

fn delivery(log: DeliveryLog) -> proto::Delivery {
    proto::Delivery {
        id: log.delivery.id.to_string(),
        webhook_id: log.delivery.webhook_id.to_string(),
        event_id: log.delivery.event_id.to_string(),
        event: log.delivery.event,
        state: log.delivery.state,
        created_at: Some(to_timestamp(log.delivery.created_at)),
        next_attempt_at: log.delivery.next_attempt_at.map(to_timestamp),
        attempts: log
            .attempts
            .into_iter()
            .map(|attempt| proto::DeliveryAttempt {
                number: attempt.number.max(0) as u32,
                at: Some(to_timestamp(attempt.at)),
                duration_ms: attempt.duration_ms.max(0) as u32,
                status_code: attempt.status_code.map(|code| code.max(0) as u32),
                error: attempt.error,
            })
            .collect(),
    }
}

#[tonic::async_trait]
impl notify_server::Notify for NotifyGrpc {
    // The request holds the URL and no secret; the response's secret is never recorded.
    #[tracing::instrument(name = "notify.create_webhook", skip_all)]
    async fn create_webhook(
        &self,
        request: Request<proto::CreateWebhookRequest>,
    ) -> Result<Response<proto::CreateWebhookResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let created = self
            .notify
            .create_webhook(
                &call,
                &message.url,
                &message.events,
                message.format.as_deref(),
            )
            .await?;
        Ok(Response::new(proto::CreateWebhookResponse {
            webhook: Some(webhook(created.webhook)),
            secret: created.secret,
        }))
    }

    #[tracing::instrument(name = "notify.list_webhooks", skip_all)]
    async fn list_webhooks(
        &self,
        request: Request<proto::ListWebhooksRequest>,
    ) -> Result<Response<proto::ListWebhooksResponse>, Status> {
        let call = self.call(&request)?;
        let rows = self.notify.list_webhooks(&call).await?;
        Ok(Response::new(proto::ListWebhooksResponse {
            webhooks: rows.into_iter().map(webhook).collect(),
        }))
    }

    #[tracing::instrument(name = "notify.delete_webhook", skip_all)]
    async fn delete_webhook(
        &self,
        request: Request<proto::DeleteWebhookRequest>,
    ) -> Result<Response<proto::DeleteWebhookResponse>, Status> {
        let call = self.call(&request)?;
        let id = parse_id("id", &request.get_ref().id)?;
        self.notify.delete_webhook(&call, id).await?;
        Ok(Response::new(proto::DeleteWebhookResponse {}))
    }

    #[tracing::instrument(name = "notify.list_deliveries", skip_all)]
    async fn list_deliveries(
        &self,
        request: Request<proto::ListDeliveriesRequest>,
    ) -> Result<Response<proto::ListDeliveriesResponse>, Status> {
        let call = self.call(&request)?;
        let message = request.get_ref();
        let webhook_id = message
            .webhook_id
            .as_deref()
            .map(|id| parse_id("webhookId", id))
            .transpose()?;
        let logs = self
            .notify
            .list_deliveries(&call, webhook_id, message.limit)
            .await?;
        Ok(Response::new(proto::ListDeliveriesResponse {
            deliveries: logs.into_iter().map(delivery).collect(),
        }))
    }
}
