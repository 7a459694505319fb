//! `usage.hook_deliveries`: the immutable record of hook deliveries, one identifier-only row
//! each. A delivery needs no stored session (the hook records SessionStart before any
//! transcript upload); the status evidence it carries reaches its session through
//! [`super::sessions::status_evidence`].
//!
//! Merge rule: a delivery is stored once, by its id. The hook retries a delivery it could not
//! confirm, so the same id arriving again (from any host) is a duplicate, never a new fact.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Tx;
use crate::validate::Batch;

/// Inserts the batch's deliveries, received at `now` from the batch's host; answers how many
/// were new (the rest were duplicates).
pub async fn insert(
    tx: &mut Tx,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<u32, sqlx::Error> {
    if batch.deliveries.is_empty() {
        return Ok(0);
    }
    let mut ids = Vec::new();
    // agent, session id, event.
    let mut text: [Vec<String>; 3] = Default::default();
    let mut observed = Vec::new();
    for delivery in &batch.deliveries {
        ids.push(delivery.delivery_id);
        text[0].push(delivery.agent.clone());
        text[1].push(delivery.session_id.clone());
        text[2].push(delivery.event.clone());
        observed.push(delivery.observed_at);
    }
    // Stored once by id: a delivery id already stored keeps its first row.
    let inserted = sqlx::query!(
        "INSERT INTO usage.hook_deliveries (tenant_id, delivery_id, agent, session_id, event, \
           observed_at, received_at, host_id) \
         SELECT $1, d, a, s, e, o, $7, $8 FROM unnest($2::uuid[], $3::text[], $4::text[], \
           $5::text[], $6::timestamptz[]) AS u(d, a, s, e, o) \
         ON CONFLICT DO NOTHING",
        tenant_id,
        &ids,
        &text[0],
        &text[1],
        &text[2],
        &observed,
        now,
        batch.host_id,
    )
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted as u32)
}
