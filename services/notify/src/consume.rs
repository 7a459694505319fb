//! Reacting to `usage.budget.crossed` and `usage.runaway.flagged`: in one transaction of the
//! message's tenant, one `pending` delivery per live webhook subscribed to the event, its body
//! rendered in the webhook's format. The message is acknowledged once that transaction
//! commits; the worker sends the deliveries afterwards.
//!
//! Idempotent on the envelope id without an inbox table: a delivery is unique per (webhook,
//! event id) (`deliveries_once`), so a redelivered message inserts nothing new. (A webhook
//! created between the first delivery and a redelivery of a message does receive it: it did
//! subscribe to that event, and the redelivery is the broker's at-least-once promise.) A
//! message notify cannot read is returned until the queue's delivery limit dead-letters it.

use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::Notify as Wake;
use uuid::Uuid;

use baton_kit::bus::consumer::{Disposition, Received};
use baton_kit::db::begin_tenant;
use baton_proto::messages::Envelope;

use crate::render::{self, Alert};
use crate::store::{self, NewDelivery};
use crate::webhook::{EventType, Format};

/// Handles one bus delivery.
pub async fn handle(pool: PgPool, wake: Arc<Wake>, received: Received) -> Disposition {
    let envelope = match received.envelope {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(error = %error, prior = received.prior_deliveries, "unreadable message");
            return Disposition::Requeue;
        }
    };
    let Some(event) = EventType::from_routing_key(&envelope.kind) else {
        // Not an alert notify delivers (a binding added later, say): nothing to do.
        return Disposition::Ack;
    };
    let alert = match Alert::parse(event, &envelope) {
        Ok(alert) => alert,
        Err(error) => {
            tracing::warn!(error = %error, prior = received.prior_deliveries, "unreadable alert");
            return Disposition::Requeue;
        }
    };
    match record(&pool, event, &envelope, &alert).await {
        Ok(created) => {
            if created > 0 {
                wake.notify_one();
            }
            tracing::debug!(event = event.as_str(), created, "alert recorded");
            Disposition::Ack
        }
        Err(error) => {
            tracing::warn!(error = %error, "could not record an alert's deliveries; message returned");
            Disposition::Requeue
        }
    }
}

/// Inserts the alert's deliveries; how many were new.
pub async fn record(
    pool: &PgPool,
    event: EventType,
    envelope: &Envelope,
    alert: &Alert,
) -> Result<usize, sqlx::Error> {
    let mut transaction = begin_tenant(pool, envelope.tenant_id).await?;
    let subscribers = store::subscribers(&mut transaction, envelope.tenant_id, event).await?;
    let now = chrono::Utc::now();
    let mut created = 0;
    for (webhook_id, format) in subscribers {
        let body = render::body(Format::from_stored(&format), event, envelope, alert);
        let delivery = NewDelivery {
            id: Uuid::now_v7(),
            webhook_id,
            event_id: envelope.id,
            event,
            body: &body,
            now,
        };
        if store::insert_delivery(&mut transaction, envelope.tenant_id, &delivery).await? {
            created += 1;
        }
    }
    transaction.commit().await?;
    Ok(created)
}
