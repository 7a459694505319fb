//! An upload's usage rows: each decided against the stored row of its dedup key by the
//! collision rule ([`crate::decide`]), priced (tokens by the model's dated row, server-tool
//! calls by the harness's provider's dated rows), written with one bulk statement, and its
//! rollup deltas (the old row's contribution out, the new one's in) applied, all in the
//! upload's transaction.
//!
//! A replaced row takes every column of the survivor: its tokens (reasoning included), its
//! server-tool calls and their price, so the stored row is always the surviving copy whole.
//!
//! Attribution follows the copy, not the first upload: a row's `host_id` and `member` are
//! those of the upload whose copy is stored. A re-upload of the same fact by another host or
//! member that the collision rule leaves unchanged leaves the row (and its rollups) with the
//! first uploader; one that replaces the row moves it, host and member together, to the
//! replacing upload, and its rollup contribution with it. (The session still counts every
//! host and member that reported it, `upload`.)

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, Row};
use uuid::Uuid;

use baton_transcripts::{PriceTable, UsageRecord};

use crate::decide::{Fate, decide};
use crate::rollups::{self, Delta, Key};
use crate::row_price::RowPrice;
use crate::store::Tx;
use crate::tree::PRICED_ROW_COLUMNS;
use crate::validate::{AgentKey, Batch, Usage};

/// What became of a batch's usage rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub inserted: u32,
    pub replaced: u32,
    pub unchanged: u32,
    /// The latest `at` among the rows inserted or replaced (what reached the rollups).
    pub newest_written_at: Option<DateTime<Utc>>,
}

/// A stored usage row as the collision rule and the rollups see it.
struct Stored {
    record: UsageRecord,
    key: Key,
    delta: Delta,
}

/// A row to write: the uploaded fact, where it counts and its price.
struct Write<'a> {
    row: &'a Usage,
    key: Key,
    price: RowPrice,
}

/// Decides, prices and writes the batch's usage rows with their rollup deltas.
///
/// No lock serialises uploads: every row is first inserted where no row holds its key
/// (`ON CONFLICT DO NOTHING`, which waits for a concurrent transaction inserting the same key
/// and then skips it); the keys another row already holds are then read `FOR UPDATE` and
/// decided by the collision rule against the locked row, so two uploads sharing a key see each
/// other's committed copy and the rollups count it once. Rows are written in key order, so
/// concurrent uploads take the locks they share in the same order. A key that was held at
/// insert time and gone at the locked read (retention deleted it in between) is tried again.
pub async fn write(
    tx: &mut Tx,
    table: &PriceTable,
    tenant_id: Uuid,
    batch: &Batch,
) -> Result<Written, sqlx::Error> {
    let mut written = Written::default();
    if batch.usage.is_empty() {
        return Ok(written);
    }
    let coordinates = coordinates(tx, tenant_id, batch).await?;
    let mut pending: Vec<Write<'_>> = batch
        .usage
        .iter()
        .map(|row| prepare(table, &coordinates, batch, row))
        .collect();
    pending.sort_by(|a, b| (&a.row.agent, &a.row.dedup_key).cmp(&(&b.row.agent, &b.row.dedup_key)));
    let mut deltas: Vec<(Key, Delta)> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        if pending.is_empty() {
            break;
        }
        let inserted = write_usage(tx, tenant_id, batch, &pending, Conflict::Skip).await?;
        let mut held = Vec::new();
        for write in pending {
            if inserted.contains(&(write.row.agent.as_str(), write.row.dedup_key.as_str())) {
                written.inserted += 1;
                written.newest_written_at = written.newest_written_at.max(Some(write.row.at));
                deltas.push((write.key.clone(), write.delta()));
            } else {
                held.push(write);
            }
        }
        pending = Vec::new();
        if held.is_empty() {
            break;
        }
        let stored = stored_rows(tx, tenant_id, &held).await?;
        let mut replacing = Vec::new();
        for write in held {
            let Some(existing) =
                stored.get(&(write.row.agent.clone(), write.row.dedup_key.clone()))
            else {
                pending.push(write);
                continue;
            };
            match decide(&write.row.record(), Some(&existing.record)) {
                Fate::Unchanged | Fate::Insert => written.unchanged += 1,
                Fate::Replace => {
                    written.replaced += 1;
                    written.newest_written_at = written.newest_written_at.max(Some(write.row.at));
                    deltas.push((existing.key.clone(), existing.delta.negated()));
                    deltas.push((write.key.clone(), write.delta()));
                    replacing.push(write);
                }
            }
        }
        write_usage(tx, tenant_id, batch, &replacing, Conflict::Replace).await?;
    }
    if !pending.is_empty() {
        // Deleted under us round after round: refuse rather than guess; the client resends.
        return Err(sqlx::Error::RowNotFound);
    }
    rollups::apply(tx, tenant_id, &rollups::merge(deltas)).await?;
    Ok(written)
}

/// Insert-then-lock rounds before a key that keeps vanishing fails the upload.
const MAX_ROUNDS: usize = 3;

/// A row priced and placed: where it counts (its session's project, its agent's kind, the
/// uploading host and member).
fn prepare<'a>(
    table: &PriceTable,
    coordinates: &HashMap<AgentKey, (String, String)>,
    batch: &Batch,
    row: &'a Usage,
) -> Write<'a> {
    let (project, kind) = coordinates
        .get(&(
            row.agent.clone(),
            row.session_id.clone(),
            row.agent_id.clone(),
        ))
        .cloned()
        .unwrap_or_default();
    let price = crate::row_price::price(table, &row.record());
    let key = Key {
        bucket: rollups::bucket(row.at),
        model: rollups::model_coordinate(row.model.as_deref()),
        project_slug: project,
        host_id: batch.host_id.clone(),
        agent_kind: kind,
        member: batch.member.clone(),
    };
    Write { row, key, price }
}

impl Write<'_> {
    fn delta(&self) -> Delta {
        Delta::of(&self.row.tokens, &self.row.server_tools, &self.price)
    }
}

/// The stored rows holding the keys of `writes`, locked until the upload commits, in key order.
async fn stored_rows(
    tx: &mut Tx,
    tenant_id: Uuid,
    writes: &[Write<'_>],
) -> Result<HashMap<(String, String), Stored>, sqlx::Error> {
    // `= ANY` on the primary key's columns, not a join with `unnest`: the join's plan depends on
    // statistics, and before the first ANALYZE of a growing table the planner took a nested
    // loop over a sequential scan (seconds per batch at 20k rows). This is an index scan
    // whatever the statistics say; it may return a stored key under another agent of the
    // batch, which the caller never looks up (and which stays locked until commit, harmlessly).
    let mut distinct_agents: Vec<&str> = writes.iter().map(|w| w.row.agent.as_str()).collect();
    distinct_agents.sort_unstable();
    distinct_agents.dedup();
    let keys: Vec<&str> = writes.iter().map(|w| w.row.dedup_key.as_str()).collect();
    let statement = format!(
        "SELECT agent, session_id, agent_kind, project_slug, host_id, member, \
           {PRICED_ROW_COLUMNS} \
         FROM usage.token_usage \
         WHERE tenant_id = $1 AND agent = ANY($2::text[]) AND dedup_key = ANY($3::text[]) \
         ORDER BY agent, dedup_key FOR UPDATE"
    );
    let rows = sqlx::query(AssertSqlSafe(statement))
        .bind(tenant_id)
        .bind(&distinct_agents)
        .bind(&keys)
        .fetch_all(&mut **tx)
        .await?;
    let mut stored = HashMap::with_capacity(rows.len());
    for row in rows {
        let agent: String = row.try_get("agent")?;
        let session_id: String = row.try_get("session_id")?;
        let priced = crate::tree::priced_row(&row, &agent, &session_id)?;
        let key = Key {
            bucket: rollups::bucket(row.try_get("at")?),
            model: rollups::model_coordinate(priced.record.model.as_deref()),
            project_slug: row.try_get("project_slug")?,
            host_id: row.try_get("host_id")?,
            agent_kind: row.try_get("agent_kind")?,
            member: row.try_get("member")?,
        };
        let record = priced.record;
        let delta = Delta::of(&record.tokens, &record.server_tools, &priced.price);
        stored.insert(
            (agent, record.message_id.clone()),
            Stored { record, key, delta },
        );
    }
    Ok(stored)
}

/// Each usage row's project slug and agent kind (the main agent is `main` by definition).
async fn coordinates(
    tx: &mut Tx,
    tenant_id: Uuid,
    batch: &Batch,
) -> Result<HashMap<AgentKey, (String, String)>, sqlx::Error> {
    let mut keys: Vec<AgentKey> = batch
        .usage
        .iter()
        .map(|row| {
            (
                row.agent.clone(),
                row.session_id.clone(),
                row.agent_id.clone(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    let mut columns: [Vec<String>; 3] = Default::default();
    for (agent, session, id) in keys {
        columns[0].push(agent);
        columns[1].push(session);
        columns[2].push(id);
    }
    let rows: Vec<(String, String, String, String, Option<String>)> = sqlx::query_as(
        "SELECT k.agent, k.session_id, k.agent_id, s.project_slug, a.kind \
         FROM unnest($2::text[], $3::text[], $4::text[]) AS k(agent, session_id, agent_id) \
         JOIN usage.sessions s ON s.tenant_id = $1 AND s.agent = k.agent \
           AND s.session_id = k.session_id \
         LEFT JOIN usage.agents a ON a.tenant_id = $1 AND a.agent = k.agent \
           AND a.session_id = k.session_id AND a.agent_id = k.agent_id",
    )
    .bind(tenant_id)
    .bind(&columns[0])
    .bind(&columns[1])
    .bind(&columns[2])
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(agent, session, id, project, kind)| {
            let kind =
                kind.unwrap_or_else(|| if id.is_empty() { "main" } else { "subagent" }.to_string());
            ((agent, session, id), (project, kind))
        })
        .collect())
}

/// The `unnest` columns of the rows to write.
#[derive(Default)]
struct Columns {
    /// agent, dedup key, session id, agent id, agent kind, project slug.
    text: [Vec<String>; 6],
    /// model, model key, service tier, speed, inference geo.
    optional: [Vec<Option<String>>; 5],
    at: Vec<chrono::DateTime<chrono::Utc>>,
    /// input, output, cache read, cache write 5m, cache write 1h, reasoning, web search
    /// requests, web fetch requests, unpriced calls.
    counts: [Vec<i64>; 9],
    sidechain: Vec<bool>,
    priced: Vec<bool>,
    /// cost, server-tool cost (10⁻¹⁵ USD as text).
    money: [Vec<String>; 2],
}

impl Columns {
    fn push(&mut self, write: &Write<'_>) {
        let Write { row, key, price } = write;
        let text = [
            &row.agent,
            &row.dedup_key,
            &row.session_id,
            &row.agent_id,
            &key.agent_kind,
            &key.project_slug,
        ];
        for (column, value) in self.text.iter_mut().zip(text) {
            column.push(value.clone());
        }
        let optional = [
            row.model.clone(),
            row.model
                .as_deref()
                .map(baton_transcripts::pricing::normalize_model),
            row.modifiers.service_tier.clone(),
            row.modifiers.speed.clone(),
            row.modifiers.inference_geo.clone(),
        ];
        for (column, value) in self.optional.iter_mut().zip(optional) {
            column.push(value);
        }
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
enum Conflict {
    /// Leave it (the row is not inserted, and not returned).
    Skip,
    /// Take every column of the written row (the caller holds the stored row's lock).
    Replace,
}

const INSERT_USAGE: &str = "INSERT INTO usage.token_usage AS t (tenant_id, agent, dedup_key, \
       session_id, agent_id, agent_kind, project_slug, host_id, model, model_key, at, input, \
       output, cache_read, cache_write_5m, cache_write_1h, service_tier, speed, inference_geo, \
       sidechain, cost, priced, reasoning, web_search_requests, web_fetch_requests, \
       server_tool_cost, unpriced_calls, member) \
     SELECT $1, a, d, s, i, k, p, $2, m, mk, at, n1, n2, n3, n4, n5, st, sp, g, sc, \
       c::numeric, pr, rs, ws, wf, stc::numeric, uc, $28::text \
     FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
       $9::text[], $10::text[], $11::timestamptz[], $12::int8[], $13::int8[], $14::int8[], \
       $15::int8[], $16::int8[], $17::text[], $18::text[], $19::text[], $20::bool[], \
       $21::text[], $22::bool[], $23::int8[], $24::int8[], $25::int8[], $26::text[], \
       $27::int8[]) \
       AS u(a, d, s, i, k, p, m, mk, at, n1, n2, n3, n4, n5, st, sp, g, sc, c, pr, rs, ws, \
         wf, stc, uc) ";

const ON_CONFLICT_SKIP: &str =
    "ON CONFLICT (tenant_id, agent, dedup_key) DO NOTHING RETURNING agent, dedup_key";

/// The survivor's copy whole, its host and member included (see the module's attribution rule).
const ON_CONFLICT_REPLACE: &str = "ON CONFLICT (tenant_id, agent, dedup_key) DO UPDATE SET \
       session_id = EXCLUDED.session_id, agent_id = EXCLUDED.agent_id, \
       agent_kind = EXCLUDED.agent_kind, project_slug = EXCLUDED.project_slug, \
       host_id = EXCLUDED.host_id, member = EXCLUDED.member, model = EXCLUDED.model, \
       model_key = EXCLUDED.model_key, \
       at = EXCLUDED.at, input = EXCLUDED.input, output = EXCLUDED.output, \
       cache_read = EXCLUDED.cache_read, cache_write_5m = EXCLUDED.cache_write_5m, \
       cache_write_1h = EXCLUDED.cache_write_1h, service_tier = EXCLUDED.service_tier, \
       speed = EXCLUDED.speed, inference_geo = EXCLUDED.inference_geo, \
       sidechain = EXCLUDED.sidechain, cost = EXCLUDED.cost, priced = EXCLUDED.priced, \
       reasoning = EXCLUDED.reasoning, web_search_requests = EXCLUDED.web_search_requests, \
       web_fetch_requests = EXCLUDED.web_fetch_requests, \
       server_tool_cost = EXCLUDED.server_tool_cost, unpriced_calls = EXCLUDED.unpriced_calls \
     RETURNING agent, dedup_key";

/// The keys a [`write_usage`] wrote, sorted.
struct WrittenKeys(Vec<(String, String)>);

impl WrittenKeys {
    fn contains(&self, key: &(&str, &str)) -> bool {
        self.0
            .binary_search_by(|(agent, dedup)| (agent.as_str(), dedup.as_str()).cmp(key))
            .is_ok()
    }
}

/// Writes `writes` in one statement; the keys it inserted (or replaced).
async fn write_usage(
    tx: &mut Tx,
    tenant_id: Uuid,
    batch: &Batch,
    writes: &[Write<'_>],
    conflict: Conflict,
) -> Result<WrittenKeys, sqlx::Error> {
    if writes.is_empty() {
        return Ok(WrittenKeys(Vec::new()));
    }
    let mut columns = Columns::default();
    for write in writes {
        columns.push(write);
    }
    let statement = match conflict {
        Conflict::Skip => [INSERT_USAGE, ON_CONFLICT_SKIP].concat(),
        Conflict::Replace => [INSERT_USAGE, ON_CONFLICT_REPLACE].concat(),
    };
    let mut keys: Vec<(String, String)> = sqlx::query_as(AssertSqlSafe(statement))
        .bind(tenant_id)
        .bind(&batch.host_id)
        .bind(&columns.text[0])
        .bind(&columns.text[1])
        .bind(&columns.text[2])
        .bind(&columns.text[3])
        .bind(&columns.text[4])
        .bind(&columns.text[5])
        .bind(&columns.optional[0])
        .bind(&columns.optional[1])
        .bind(&columns.at)
        .bind(&columns.counts[0])
        .bind(&columns.counts[1])
        .bind(&columns.counts[2])
        .bind(&columns.counts[3])
        .bind(&columns.counts[4])
        .bind(&columns.optional[2])
        .bind(&columns.optional[3])
        .bind(&columns.optional[4])
        .bind(&columns.sidechain)
        .bind(&columns.money[0])
        .bind(&columns.priced)
        .bind(&columns.counts[5])
        .bind(&columns.counts[6])
        .bind(&columns.counts[7])
        .bind(&columns.money[1])
        .bind(&columns.counts[8])
        .bind(&batch.member)
        .fetch_all(&mut **tx)
        .await?;
    keys.sort_unstable();
    Ok(WrittenKeys(keys))
}
