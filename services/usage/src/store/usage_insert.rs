//! The `usage.token_usage` statement: a batch's rows as `unnest` columns, inserted in one
//! statement under one of two conflict clauses. The usage writer (`store/usage.rs`) first writes with
//! [`Conflict::Skip`] (a key no row holds is inserted, a held key left alone) and, once the
//! collision rule has decided the held keys against their locked rows, writes the survivors
//! with [`Conflict::Replace`].

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::Tx;
use crate::keys::UsageKey;
use crate::rollups::{Delta, Key};
use crate::row_price::RowPrice;
use crate::validate::Batch;
use crate::validate::Usage;

/// A row to write: the uploaded fact, where it counts and its price.
pub(super) struct Write<'a> {
    pub(super) row: &'a Usage,
    pub(super) key: Key,
    pub(super) price: RowPrice,
}

impl Write<'_> {
    pub(super) fn delta(&self) -> Delta {
        Delta::of(&self.row.tokens, &self.row.server_tools, &self.price)
    }
}

/// The `unnest` columns of the rows to write, borrowing the rows' text (a 1,000-row batch
/// would otherwise copy some 10,000 strings only to encode them).
#[derive(Default)]
struct Columns<'w> {
    /// agent, dedup key, session id, agent id, agent kind, project slug.
    text: [Vec<&'w str>; 6],
    /// model, service tier, speed, inference geo.
    optional: [Vec<Option<&'w str>>; 4],
    /// The normalised model (computed per row).
    model_key: Vec<Option<String>>,
    at: Vec<DateTime<Utc>>,
    /// input, output, cache read, cache write 5m, cache write 1h, reasoning, web search
    /// requests, web fetch requests, unpriced calls.
    counts: [Vec<i64>; 9],
    sidechain: Vec<bool>,
    priced: Vec<bool>,
    /// cost, server-tool cost (10⁻¹⁵ USD as text).
    money: [Vec<String>; 2],
}

impl<'w> Columns<'w> {
    fn of(writes: &'w [Write<'_>]) -> Columns<'w> {
        let mut columns = Columns::default();
        for write in writes {
            columns.push(write);
        }
        columns
    }

    fn push(&mut self, write: &'w Write<'_>) {
        let Write { row, key, price } = write;
        let text = [
            row.agent.as_str(),
            &row.dedup_key,
            &row.session_id,
            &row.agent_id,
            &key.agent_kind,
            &key.project_slug,
        ];
        for (column, value) in self.text.iter_mut().zip(text) {
            column.push(value);
        }
        let optional = [
            row.model.as_deref(),
            row.modifiers.service_tier.as_deref(),
            row.modifiers.speed.as_deref(),
            row.modifiers.inference_geo.as_deref(),
        ];
        for (column, value) in self.optional.iter_mut().zip(optional) {
            column.push(value);
        }
        self.model_key.push(
            row.model
                .as_deref()
                .map(baton_usage_model::pricing::normalize_model),
        );
        self.at.push(row.at);
        let counts = [
            row.tokens.input,
            row.tokens.output,
            row.tokens.cache_read,
            row.tokens.cache_write_5m,
            row.tokens.cache_write_1h,
            row.tokens.reasoning,
            row.server_tools.web_search,
            row.server_tools.web_fetch,
            price.unpriced_calls,
        ];
        for (column, count) in self.counts.iter_mut().zip(counts) {
            column.push(count as i64);
        }
        self.sidechain.push(row.sidechain);
        self.priced.push(price.priced);
        self.money[0].push(price.cost.to_string());
        self.money[1].push(price.server_tool_cost.to_string());
    }
}

/// What a written row does to a stored row holding its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conflict {
    /// Leave it (the row is not inserted, and not returned).
    Skip,
    /// Take every column of the written row (the caller holds the stored row's lock).
    Replace,
}

/// The statement that writes a batch's usage rows, closed by the conflict clause `$conflict` (a
/// string literal), its 28 parameters bound from the batch and its columns. `query_as` with
/// [`UsageKey`] for a clause that answers the keys written, `query` for the plain insert.
macro_rules! insert_usage {
    ($query:ident $(, $answer:ty)?; $conflict:literal, $tenant_id:expr, $batch:expr, $columns:expr) => {
        sqlx::$query!(
            $($answer,)?
            "INSERT INTO usage.token_usage AS t (tenant_id, agent, dedup_key, session_id, \
               agent_id, agent_kind, project_slug, host_id, model, model_key, at, input, output, \
               cache_read, cache_write_5m, cache_write_1h, service_tier, speed, inference_geo, \
               sidechain, cost, priced, reasoning, web_search_requests, web_fetch_requests, \
               server_tool_cost, unpriced_calls, member) \
             SELECT $1, a, d, s, i, k, p, $2, m, mk, at, n1, n2, n3, n4, n5, st, sp, g, sc, \
               c::numeric, pr, rs, ws, wf, stc::numeric, uc, $28::text \
             FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
               $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::int8[], \
               $13::int8[], $14::int8[], $15::int8[], $16::int8[], $17::text[], $18::text[], \
               $19::text[], $20::bool[], $21::text[], $22::bool[], $23::int8[], $24::int8[], \
               $25::int8[], $26::text[], $27::int8[]) \
               AS u(a, d, s, i, k, p, m, mk, at, n1, n2, n3, n4, n5, st, sp, g, sc, c, pr, rs, \
                 ws, wf, stc, uc) "
                + $conflict,
            $tenant_id,
            $batch.host_id,
            &$columns.text[0] as &[&str],
            &$columns.text[1] as &[&str],
            &$columns.text[2] as &[&str],
            &$columns.text[3] as &[&str],
            &$columns.text[4] as &[&str],
            &$columns.text[5] as &[&str],
            &$columns.optional[0] as &[Option<&str>],
            &$columns.model_key as &[Option<String>],
            &$columns.at,
            &$columns.counts[0],
            &$columns.counts[1],
            &$columns.counts[2],
            &$columns.counts[3],
            &$columns.counts[4],
            &$columns.optional[1] as &[Option<&str>],
            &$columns.optional[2] as &[Option<&str>],
            &$columns.optional[3] as &[Option<&str>],
            &$columns.sidechain,
            &$columns.money[0],
            &$columns.priced,
            &$columns.counts[5],
            &$columns.counts[6],
            &$columns.counts[7],
            &$columns.money[1],
            &$columns.counts[8],
            $batch.member,
        )
    };
}

/// Writes `writes` in one plain statement: no conflict clause, nothing answered. A key another
/// row holds fails the statement as a whole (a unique violation of `token_usage_pkey`, which
/// [`held_key`] tells apart), after waiting for a concurrent upload that holds it uncommitted.
pub(super) async fn insert_fresh(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    batch: &Batch,
    writes: &[Write<'_>],
) -> Result<(), sqlx::Error> {
    let columns = Columns::of(writes);
    insert_usage!(query; "", tenant_id, batch, columns)
        .execute(connection)
        .await?;
    Ok(())
}

/// Whether [`insert_fresh`] failed because a row already holds one of its keys.
pub(super) fn held_key(error: &sqlx::Error) -> bool {
    baton_kit::db::is_unique_violation(error, "token_usage_pkey")
}

/// The keys a [`write`] wrote, sorted.
pub(super) struct WrittenKeys(Vec<UsageKey>);

impl WrittenKeys {
    pub(super) fn contains(&self, key: &UsageKey) -> bool {
        self.0.binary_search(key).is_ok()
    }
}

/// Writes `writes` in one statement; the keys it inserted (or replaced).
pub(super) async fn write(
    tx: &mut Tx,
    tenant_id: Uuid,
    batch: &Batch,
    writes: &[Write<'_>],
    conflict: Conflict,
) -> Result<WrittenKeys, sqlx::Error> {
    if writes.is_empty() {
        return Ok(WrittenKeys(Vec::new()));
    }
    let columns = Columns::of(writes);
    let mut keys =
        match conflict {
            Conflict::Skip => insert_usage!(
                query_as, UsageKey; "ON CONFLICT (tenant_id, agent, dedup_key) DO NOTHING RETURNING agent, dedup_key",
                tenant_id,
                batch,
                columns
            )
            .fetch_all(&mut **tx)
            .await?,
            // A replacement takes the survivor's copy whole: every column, its tokens (reasoning
            // included), server-tool calls and their price, and its host and member (attribution
            // follows the copy, see `store/usage.rs`).
            Conflict::Replace => {
                insert_usage!(
                    query_as, UsageKey; "ON CONFLICT (tenant_id, agent, dedup_key) DO UPDATE SET \
               session_id = EXCLUDED.session_id, agent_id = EXCLUDED.agent_id, \
               agent_kind = EXCLUDED.agent_kind, project_slug = EXCLUDED.project_slug, \
               host_id = EXCLUDED.host_id, member = EXCLUDED.member, model = EXCLUDED.model, \
               model_key = EXCLUDED.model_key, at = EXCLUDED.at, input = EXCLUDED.input, \
               output = EXCLUDED.output, cache_read = EXCLUDED.cache_read, \
               cache_write_5m = EXCLUDED.cache_write_5m, cache_write_1h = EXCLUDED.cache_write_1h, \
               service_tier = EXCLUDED.service_tier, speed = EXCLUDED.speed, \
               inference_geo = EXCLUDED.inference_geo, sidechain = EXCLUDED.sidechain, \
               cost = EXCLUDED.cost, priced = EXCLUDED.priced, reasoning = EXCLUDED.reasoning, \
               web_search_requests = EXCLUDED.web_search_requests, \
               web_fetch_requests = EXCLUDED.web_fetch_requests, \
               server_tool_cost = EXCLUDED.server_tool_cost, \
               unpriced_calls = EXCLUDED.unpriced_calls \
             RETURNING agent, dedup_key",
                    tenant_id,
                    batch,
                    columns
                )
                .fetch_all(&mut **tx)
                .await?
            }
        };
    keys.sort_unstable();
    Ok(WrittenKeys(keys))
}
