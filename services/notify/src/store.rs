//! Notify's persistence: one function per statement, each taking the caller's connection (a
//! tenant transaction, except the cross-tenant scheduling reads on the maintenance pool).

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::webhook::{EventType, Format, NewWebhook};

/// A webhook as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRow {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub created_at: DateTime<Utc>,
}

/// Serialises webhook creation per tenant, so the per-tenant limit holds under concurrency.
#[tracing::instrument(name = "db.notify.lock_tenant_webhooks", skip_all)]
pub async fn lock_tenant_webhooks(
    connection: &mut PgConnection,
    tenant_id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('notify.webhooks:' || $1::text, 0))",
        tenant_id.to_string(),
    )
    .execute(connection)
    .await?;
    Ok(())
}

#[tracing::instrument(name = "db.notify.live_webhooks", skip_all)]
pub async fn live_webhooks(
    connection: &mut PgConnection,
    tenant_id: Uuid,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM notify.webhooks
           WHERE tenant_id = $1 AND deleted_at IS NULL"#,
        tenant_id,
    )
    .fetch_one(connection)
    .await
}

#[tracing::instrument(name = "db.notify.insert_webhook", skip_all)]
pub async fn insert_webhook(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    webhook: &NewWebhook,
    secret: &str,
    now: DateTime<Utc>,
) -> Result<WebhookRow, sqlx::Error> {
    let events: Vec<&str> = webhook.events.iter().map(|event| event.as_str()).collect();
    sqlx::query_as!(
        WebhookRow,
        "INSERT INTO notify.webhooks (tenant_id, id, url, events, format, secret, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING id, url, events, format, created_at",
        tenant_id,
        id,
        &webhook.url,
        &events as &[&str],
        webhook.format.as_str(),
        secret,
        now,
    )
    .fetch_one(connection)
    .await
}

#[tracing::instrument(name = "db.notify.list_webhooks", skip_all)]
pub async fn list_webhooks(
    connection: &mut PgConnection,
    tenant_id: Uuid,
) -> Result<Vec<WebhookRow>, sqlx::Error> {
    sqlx::query_as!(
        WebhookRow,
        "SELECT id, url, events, format, created_at FROM notify.webhooks \
         WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id",
        tenant_id,
    )
    .fetch_all(connection)
    .await
}

/// Marks a live webhook deleted, forgets its secret and cancels its pending deliveries.
/// False when the tenant has no such live webhook.
#[tracing::instrument(name = "db.notify.delete_webhook", skip_all)]
pub async fn delete_webhook(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query!(
        "UPDATE notify.webhooks SET deleted_at = $3, secret = NULL \
         WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL",
        tenant_id,
        id,
        now,
    )
    .execute(&mut *connection)
    .await?
    .rows_affected()
        == 1;
    if deleted {
        sqlx::query!(
            "UPDATE notify.deliveries SET state = 'cancelled', next_attempt_at = NULL, settled_at = $3 \
             WHERE tenant_id = $1 AND webhook_id = $2 AND state = 'pending'",
        tenant_id,
        id,
        now,
    )
        .execute(connection)
        .await?;
    }
    Ok(deleted)
}

/// The tenant's live webhooks subscribed to `event`: (id, format).
#[tracing::instrument(name = "db.notify.subscribers", skip_all)]
pub async fn subscribers(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    event: EventType,
) -> Result<Vec<(Uuid, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT id, format FROM notify.webhooks \
         WHERE tenant_id = $1 AND deleted_at IS NULL AND $2 = ANY(events) ORDER BY id",
        tenant_id,
        event.as_str(),
    )
    .fetch_all(connection)
    .await?;
    Ok(rows.into_iter().map(|row| (row.id, row.format)).collect())
}

/// A delivery to create.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    pub id: Uuid,
    pub webhook_id: Uuid,
    pub event_id: Uuid,
    pub event: EventType,
    pub body: &'a str,
    pub now: DateTime<Utc>,
}

/// Inserts a delivery due now; false when this webhook already has one for this event (a
/// redelivered message).
#[tracing::instrument(name = "db.notify.insert_delivery", skip_all)]
pub async fn insert_delivery(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    delivery: &NewDelivery<'_>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO notify.deliveries \
           (tenant_id, id, webhook_id, event_id, event, body, state, attempts, next_attempt_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7) \
         ON CONFLICT ON CONSTRAINT deliveries_once DO NOTHING",
        tenant_id,
        delivery.id,
        delivery.webhook_id,
        delivery.event_id,
        delivery.event.as_str(),
        delivery.body,
        delivery.now,
    )
    .execute(connection)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// A delivery taken by a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimedId {
    pub tenant_id: Uuid,
    pub id: Uuid,
}

/// Takes up to `limit` due deliveries of any tenant (maintenance pool): their next attempt is
/// pushed `lease` ahead, so no other worker takes them while this one sends; if this worker
/// dies, they come due again when the lease lapses. `SKIP LOCKED`: concurrent workers take
/// disjoint sets without waiting on each other.
#[tracing::instrument(name = "db.notify.claim_due", skip_all)]
pub async fn claim_due(
    maintenance: &PgPool,
    now: DateTime<Utc>,
    lease: Duration,
    limit: i64,
) -> Result<Vec<ClaimedId>, sqlx::Error> {
    let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
    sqlx::query_as!(
        ClaimedId,
        "UPDATE notify.deliveries AS delivery SET next_attempt_at = $2 \
         FROM (SELECT tenant_id, id FROM notify.deliveries \
               WHERE state = 'pending' AND next_attempt_at <= $1 \
               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) AS due \
         WHERE delivery.tenant_id = due.tenant_id AND delivery.id = due.id \
         RETURNING delivery.tenant_id, delivery.id",
        now,
        until,
        limit,
    )
    .fetch_all(maintenance)
    .await
}

/// What an attempt needs, read in the delivery's tenant.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: Uuid,
    pub event: String,
    pub body: String,
    pub attempts: i32,
    pub url: String,
    /// Absent once the webhook is deleted.
    pub secret: Option<String>,
}

/// The pending delivery with its webhook; `None` when it is no longer pending.
#[tracing::instrument(name = "db.notify.load_claimed", skip_all)]
pub async fn load_claimed(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<Claimed>, sqlx::Error> {
    sqlx::query_as!(
        Claimed,
        "SELECT delivery.id, delivery.event, delivery.body, delivery.attempts, webhook.url, webhook.secret \
         FROM notify.deliveries AS delivery \
         JOIN notify.webhooks AS webhook \
           ON webhook.tenant_id = delivery.tenant_id AND webhook.id = delivery.webhook_id \
         WHERE delivery.tenant_id = $1 AND delivery.id = $2 AND delivery.state = 'pending'",
        tenant_id,
        id,
    )
    .fetch_optional(connection)
    .await
}

/// One attempt, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub delivery_id: Uuid,
    pub number: i32,
    pub at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

#[tracing::instrument(name = "db.notify.insert_attempt", skip_all)]
pub async fn insert_attempt(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    attempt: &AttemptRow,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO notify.attempts (tenant_id, delivery_id, number, at, duration_ms, status_code, error) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        tenant_id,
        attempt.delivery_id,
        attempt.number,
        attempt.at,
        attempt.duration_ms,
        attempt.status_code,
        attempt.error.as_deref(),
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// Where a delivery goes after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Delivered,
    /// Failed, with another attempt at this instant.
    RetryAt(DateTime<Utc>),
    /// Failed, attempts exhausted.
    Failed,
}

/// Applies an attempt's result, provided the delivery is still pending with the attempt
/// count this worker read (a compare-and-set: a second worker that took the same delivery
/// after a lapsed lease records nothing). False when the compare failed.
#[tracing::instrument(name = "db.notify.settle", skip_all)]
pub async fn settle(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    id: Uuid,
    attempts_before: i32,
    next: Next,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (state, next_attempt_at, settled_at) = match next {
        Next::Delivered => ("delivered", None, Some(now)),
        Next::RetryAt(at) => ("pending", Some(at), None),
        Next::Failed => ("failed", None, Some(now)),
    };
    let updated = sqlx::query!(
        "UPDATE notify.deliveries \
         SET state = $4, attempts = attempts + 1, next_attempt_at = $5, settled_at = $6 \
         WHERE tenant_id = $1 AND id = $2 AND state = 'pending' AND attempts = $3",
        tenant_id,
        id,
        attempts_before,
        state,
        next_attempt_at,
        settled_at,
    )
    .execute(connection)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

/// A delivery as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub webhook_id: Uuid,
    pub event_id: Uuid,
    pub event: String,
    pub state: String,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

#[tracing::instrument(name = "db.notify.list_deliveries", skip_all)]
pub async fn list_deliveries(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    webhook_id: Option<Uuid>,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    sqlx::query_as!(
        DeliveryRow,
        "SELECT id, webhook_id, event_id, event, state, created_at, next_attempt_at \
         FROM notify.deliveries \
         WHERE tenant_id = $1 AND ($2::uuid IS NULL OR webhook_id = $2) \
         ORDER BY created_at DESC, id DESC LIMIT $3",
        tenant_id,
        webhook_id,
        limit,
    )
    .fetch_all(connection)
    .await
}

#[tracing::instrument(name = "db.notify.list_attempts", skip_all)]
pub async fn list_attempts(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    delivery_ids: &[Uuid],
) -> Result<Vec<AttemptRow>, sqlx::Error> {
    sqlx::query_as!(
        AttemptRow,
        "SELECT delivery_id, number, at, duration_ms, status_code, error FROM notify.attempts \
         WHERE tenant_id = $1 AND delivery_id = ANY($2) ORDER BY delivery_id, number",
        tenant_id,
        delivery_ids,
    )
    .fetch_all(connection)
    .await
}

/// Pending deliveries of every tenant (maintenance pool): (all pending, those already
/// retried at least once).
#[tracing::instrument(name = "db.notify.backlog", skip_all)]
pub async fn backlog(maintenance: &PgPool) -> Result<(i64, i64), sqlx::Error> {
    let counts = sqlx::query!(
        r#"SELECT count(*) AS "pending!", count(*) FILTER (WHERE attempts > 0) AS "retried!"
           FROM notify.deliveries WHERE state = 'pending'"#,
    )
    .fetch_one(maintenance)
    .await?;
    Ok((counts.pending, counts.retried))
}

impl Format {
    /// The stored format; an unknown value (a later release's) reads as Baton's JSON.
    pub fn from_stored(text: &str) -> Format {
        Format::parse(text).unwrap_or(Format::Baton)
    }
}
