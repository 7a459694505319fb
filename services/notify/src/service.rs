//! The tenant-facing operations: webhooks and the delivery log. Every call runs in one
//! transaction scoped to the caller's tenant, so row-level security sees only its rows.

use std::collections::HashMap;

use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::{ApiError, ErrorCode};
use baton_kit::grpc::CallContext;

use crate::address::AddressPolicy;
use crate::signing;
use crate::store::{self, AttemptRow, DeliveryRow, WebhookRow};
use crate::webhook::{self, MAX_WEBHOOKS_PER_TENANT};

/// Largest page of ListDeliveries, and its default.
pub const MAX_DELIVERIES_PAGE: u32 = 200;
pub const DEFAULT_DELIVERIES_PAGE: u32 = 50;

/// A webhook just created, with the secret shown this once.
#[derive(Debug, Clone)]
pub struct Created {
    pub webhook: WebhookRow,
    pub secret: String,
}

/// A delivery and its attempts, oldest attempt first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryLog {
    pub delivery: DeliveryRow,
    pub attempts: Vec<AttemptRow>,
}

/// Notify's domain service.
#[derive(Debug, Clone)]
pub struct Notify {
    pool: PgPool,
    policy: AddressPolicy,
}

impl Notify {
    pub fn new(pool: PgPool, policy: AddressPolicy) -> Notify {
        Notify { pool, policy }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Validates and stores a webhook with a fresh secret.
    pub async fn create_webhook(
        &self,
        call: &CallContext,
        url: &str,
        events: &[String],
        format: Option<&str>,
    ) -> Result<Created, ApiError> {
        let webhook = webhook::validate(url, events, format, self.policy)?;
        let secret = signing::new_secret();
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        store::lock_tenant_webhooks(&mut transaction, call.tenant_id).await?;
        if store::live_webhooks(&mut transaction, call.tenant_id).await? >= MAX_WEBHOOKS_PER_TENANT
        {
            return Err(ApiError::new(
                ErrorCode::ResourceLimitExceeded,
                format!("a tenant may have at most {MAX_WEBHOOKS_PER_TENANT} webhooks"),
            ));
        }
        let row = store::insert_webhook(
            &mut transaction,
            call.tenant_id,
            Uuid::now_v7(),
            &webhook,
            &secret,
            call.now,
        )
        .await?;
        transaction.commit().await?;
        tracing::info!(webhook.id = %row.id, format = %row.format, "webhook created");
        Ok(Created {
            webhook: row,
            secret,
        })
    }

    pub async fn list_webhooks(&self, call: &CallContext) -> Result<Vec<WebhookRow>, ApiError> {
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let rows = store::list_webhooks(&mut transaction, call.tenant_id).await?;
        transaction.commit().await?;
        Ok(rows)
    }

    /// Deletes a webhook and cancels its pending deliveries.
    pub async fn delete_webhook(&self, call: &CallContext, id: Uuid) -> Result<(), ApiError> {
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        if !store::delete_webhook(&mut transaction, call.tenant_id, id, call.now).await? {
            return Err(ApiError::not_found("no such webhook"));
        }
        transaction.commit().await?;
        tracing::info!(webhook.id = %id, "webhook deleted");
        Ok(())
    }

    /// The newest deliveries (of one webhook, if named), each with its attempts.
    pub async fn list_deliveries(
        &self,
        call: &CallContext,
        webhook_id: Option<Uuid>,
        limit: Option<u32>,
    ) -> Result<Vec<DeliveryLog>, ApiError> {
        let limit = limit.unwrap_or(DEFAULT_DELIVERIES_PAGE);
        if !(1..=MAX_DELIVERIES_PAGE).contains(&limit) {
            return Err(ApiError::invalid_input(format!(
                "limit must be between 1 and {MAX_DELIVERIES_PAGE}"
            )));
        }
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let deliveries = store::list_deliveries(
            &mut transaction,
            call.tenant_id,
            webhook_id,
            i64::from(limit),
        )
        .await?;
        let ids: Vec<Uuid> = deliveries.iter().map(|delivery| delivery.id).collect();
        let attempts = store::list_attempts(&mut transaction, call.tenant_id, &ids).await?;
        transaction.commit().await?;
        let mut by_delivery: HashMap<Uuid, Vec<AttemptRow>> = HashMap::new();
        for attempt in attempts {
            by_delivery
                .entry(attempt.delivery_id)
                .or_default()
                .push(attempt);
        }
        Ok(deliveries
            .into_iter()
            .map(|delivery| DeliveryLog {
                attempts: by_delivery.remove(&delivery.id).unwrap_or_default(),
                delivery,
            })
            .collect())
    }
}
