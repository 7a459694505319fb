//! Re-pricing after a price import: every stored usage row of a touched model, and every row
//! with server-tool calls billed by a touched provider, is priced again and, where its price
//! moved (cost, priced flag, server-tool cost or unpriced calls), updated together with its
//! rollup row, in the import's transaction (so a reader sees the old totals or the new, never
//! a mix).

use std::collections::HashMap;

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use baton_usage_model::PriceTable;

use crate::rollups::{self, Delta, Key};
use crate::row_price::RowPrice;
use crate::stored_row::{select_stored_rows, stored_row};

/// What an import touched.
#[derive(Debug, Clone, Default)]
pub struct Touched {
    /// Normalised model ids whose rows changed.
    pub models: Vec<String>,
    /// Harnesses (`agent`) whose server-tool prices changed.
    pub agents_with_server_tools: Vec<String>,
}

/// The changed rows' keys and new prices, as `unnest` columns.
#[derive(Default)]
struct Updates {
    tenant: Vec<Uuid>,
    agent: Vec<String>,
    dedup_key: Vec<String>,
    cost: Vec<String>,
    priced: Vec<bool>,
    server_tool_cost: Vec<String>,
    unpriced_calls: Vec<i64>,
}

/// Re-prices the rows `touched` names; answers how many rows changed.
pub async fn reprice(
    tx: &mut Transaction<'static, Postgres>,
    table: &PriceTable,
    touched: &Touched,
) -> Result<u64, sqlx::Error> {
    // Two index scans (`token_usage_by_model`, `token_usage_with_server_tools`) OR-ed.
    let rows = select_stored_rows!(
        "tenant_id, agent, session_id, agent_kind, project_slug, host_id, member,",
        "WHERE model_key = ANY($1) \
           OR (agent = ANY($2) AND (web_search_requests > 0 OR web_fetch_requests > 0))",
        &touched.models,
        &touched.agents_with_server_tools,
    )
    .fetch_all(&mut **tx)
    .await?;
    let mut updates = Updates::default();
    let mut deltas: HashMap<Uuid, Vec<(Key, Delta)>> = HashMap::new();
    for row in rows {
        let old = stored_row!(row).priced(&row.agent, &row.session_id);
        let price: RowPrice = crate::row_price::price(table, &old.record);
        if price == old.price {
            continue;
        }
        let key = Key {
            bucket: rollups::bucket(row.at),
            model: rollups::model_coordinate(old.record.model.as_deref()),
            project_slug: row.project_slug,
            host_id: row.host_id,
            agent_kind: row.agent_kind,
            member: row.member,
        };
        let (tokens, tools) = (&old.record.tokens, &old.record.server_tools);
        let tenant_deltas = deltas.entry(row.tenant_id).or_default();
        tenant_deltas.push((key.clone(), Delta::of(tokens, tools, &old.price).negated()));
        tenant_deltas.push((key, Delta::of(tokens, tools, &price)));
        updates.tenant.push(row.tenant_id);
        updates.agent.push(row.agent);
        updates.dedup_key.push(old.record.message_id.clone());
        updates.cost.push(price.cost.to_string());
        updates.priced.push(price.priced);
        updates
            .server_tool_cost
            .push(price.server_tool_cost.to_string());
        updates.unpriced_calls.push(price.unpriced_calls as i64);
    }
    if updates.tenant.is_empty() {
        return Ok(0);
    }
    let changed = sqlx::query!(
        "UPDATE usage.token_usage t SET cost = u.c::numeric, priced = u.p, \
           server_tool_cost = u.sc::numeric, unpriced_calls = u.uc \
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::text[], \
           $7::int8[]) AS u(tn, a, d, c, p, sc, uc) \
         WHERE t.tenant_id = u.tn AND t.agent = u.a AND t.dedup_key = u.d",
        &updates.tenant,
        &updates.agent,
        &updates.dedup_key,
        &updates.cost,
        &updates.priced,
        &updates.server_tool_cost,
        &updates.unpriced_calls,
    )
    .execute(&mut **tx)
    .await?
    .rows_affected();
    for (tenant, tenant_deltas) in deltas {
        rollups::apply(tx, tenant, &rollups::merge(tenant_deltas)).await?;
    }
    Ok(changed)
}
