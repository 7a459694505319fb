//! Re-pricing after a price import: every stored usage row of a touched model is priced again
//! and, where its cost or priced flag moved, updated together with its rollup row, in the
//! import's transaction (so a reader sees the old totals or the new, never a mix).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use baton_transcripts::PriceTable;

use crate::rollups::{self, Delta, Key};

/// The changed rows' keys and new prices, as `unnest` columns.
type Updates = (Vec<Uuid>, Vec<String>, Vec<String>, Vec<String>, Vec<bool>);

/// Re-prices the rows of `models` (normalised ids); answers how many rows changed.
pub async fn reprice(
    tx: &mut Transaction<'static, Postgres>,
    table: &PriceTable,
    models: &[String],
) -> Result<u64, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT tenant_id, agent, dedup_key, session_id, agent_id, agent_kind, project_slug, \
           host_id, model, at, input, output, cache_read, cache_write_5m, cache_write_1h, \
           service_tier, speed, inference_geo, sidechain, cost::text AS cost, priced \
         FROM usage.token_usage WHERE model_key = ANY($1)",
    )
    .bind(models)
    .fetch_all(&mut **tx)
    .await?;
    let mut updates = Updates::default();
    let mut deltas: HashMap<Uuid, Vec<(Key, Delta)>> = HashMap::new();
    for row in &rows {
        let tenant: Uuid = row.try_get("tenant_id")?;
        let agent: String = row.try_get("agent")?;
        let session_id: String = row.try_get("session_id")?;
        let old = crate::tree::priced_row(row, &agent, &session_id)?;
        let (cost, priced) = crate::pricing::price(table, &old.record);
        if (cost, priced) == (old.cost, old.priced) {
            continue;
        }
        let at: DateTime<Utc> = row.try_get("at")?;
        let key = Key {
            bucket: rollups::bucket(at),
            model: rollups::model_coordinate(old.record.model.as_deref()),
            project_slug: row.try_get("project_slug")?,
            host_id: row.try_get("host_id")?,
            agent_kind: row.try_get("agent_kind")?,
        };
        let tenant_deltas = deltas.entry(tenant).or_default();
        tenant_deltas.push((
            key.clone(),
            Delta::of(&old.record.tokens, old.cost, old.priced).negated(),
        ));
        tenant_deltas.push((key, Delta::of(&old.record.tokens, cost, priced)));
        updates.0.push(tenant);
        updates.1.push(agent);
        updates.2.push(old.record.message_id.clone());
        updates.3.push(cost.to_string());
        updates.4.push(priced);
    }
    if updates.0.is_empty() {
        return Ok(0);
    }
    let changed = sqlx::query(
        "UPDATE usage.token_usage t SET cost = u.c::numeric, priced = u.p \
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[]) AS u(tn, a, d, c, p) \
         WHERE t.tenant_id = u.tn AND t.agent = u.a AND t.dedup_key = u.d",
    )
    .bind(&updates.0)
    .bind(&updates.1)
    .bind(&updates.2)
    .bind(&updates.3)
    .bind(&updates.4)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    for (tenant, tenant_deltas) in deltas {
        rollups::apply(tx, tenant, &rollups::merge(tenant_deltas)).await?;
    }
    Ok(changed)
}
