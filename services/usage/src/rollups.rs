//! The rollups: per tenant × 15-minute UTC bucket × model × project × host × agent kind ×
//! member (`""` = unattributed), the five token sums and reasoning, requests, cost and
//! unpriced tokens, server-tool calls of each tool with their cost and the unpriced calls.
//!
//! - Fifteen minutes because every real zone's UTC offset is a multiple of it, so a day cut
//!   in any IANA zone is a whole number of buckets and a day read from the rollups is exact.
//! - Model is the normalised id (`""` for a row without a model, read as `unknown`).
//! - They change only by [`Delta`]s applied in the transaction that changes `token_usage`:
//!   a new row adds its contribution, a replacement subtracts the old row's and adds the
//!   new one's, a re-price moves cost, unpriced tokens and server-tool cost and unpriced calls. Deltas are summed per key in Rust
//!   ([`merge`], pure) and written with one statement.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use baton_usage_model::pricing::normalize_model;
use baton_usage_model::record::{ServerTools, Tokens};

use crate::row_price::RowPrice;

/// Width of a bucket in seconds.
pub const BUCKET_SECONDS: i64 = 900;

/// The bucket an instant falls in.
pub fn bucket(at: DateTime<Utc>) -> DateTime<Utc> {
    let seconds = at.timestamp();
    DateTime::from_timestamp(seconds - seconds.rem_euclid(BUCKET_SECONDS), 0).unwrap_or(at)
}

/// A rollup row's model coordinate.
pub fn model_coordinate(model: Option<&str>) -> String {
    model.map(normalize_model).unwrap_or_default()
}

/// Where a usage row counts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub bucket: DateTime<Utc>,
    pub model: String,
    pub project_slug: String,
    pub host_id: String,
    pub agent_kind: String,
    /// The member of the upload whose copy of the row is stored (`""` = unattributed).
    pub member: String,
}

/// What a usage row adds to (or, negated, takes from) its rollup row; also the unit every
/// figure is summed from (`figures::Sums::add`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delta {
    /// input, output, cache read, cache write 5m, cache write 1h.
    pub tokens: [i64; 5],
    /// Part of `tokens[1]` (output), never added to a total.
    pub reasoning: i64,
    pub requests: i64,
    /// Tokens and priced server-tool calls, 10⁻¹⁵ USD.
    pub cost: i128,
    pub unpriced_tokens: i64,
    /// Server-tool calls: web search, web fetch.
    pub server_tools: [i64; 2],
    /// The part of `cost` that is server-tool calls.
    pub server_tool_cost: i128,
    pub unpriced_calls: i64,
}

impl Delta {
    /// One stored row's contribution.
    pub fn of(tokens: &Tokens, server_tools: &ServerTools, price: &RowPrice) -> Delta {
        let counts = [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write_5m,
            tokens.cache_write_1h,
        ]
        .map(|count| count as i64);
        Delta {
            tokens: counts,
            reasoning: tokens.reasoning as i64,
            requests: 1,
            cost: price.cost as i128,
            unpriced_tokens: if price.priced { 0 } else { counts.iter().sum() },
            server_tools: [server_tools.web_search, server_tools.web_fetch].map(|n| n as i64),
            server_tool_cost: price.server_tool_cost as i128,
            unpriced_calls: price.unpriced_calls as i64,
        }
    }

    pub fn negated(self) -> Delta {
        Delta {
            tokens: self.tokens.map(|count| -count),
            reasoning: -self.reasoning,
            requests: -self.requests,
            cost: -self.cost,
            unpriced_tokens: -self.unpriced_tokens,
            server_tools: self.server_tools.map(|count| -count),
            server_tool_cost: -self.server_tool_cost,
            unpriced_calls: -self.unpriced_calls,
        }
    }

    pub fn add(&mut self, other: Delta) {
        for (mine, theirs) in self.tokens.iter_mut().zip(other.tokens) {
            *mine += theirs;
        }
        self.reasoning += other.reasoning;
        self.requests += other.requests;
        self.cost += other.cost;
        self.unpriced_tokens += other.unpriced_tokens;
        for (mine, theirs) in self.server_tools.iter_mut().zip(other.server_tools) {
            *mine += theirs;
        }
        self.server_tool_cost += other.server_tool_cost;
        self.unpriced_calls += other.unpriced_calls;
    }

    fn is_zero(&self) -> bool {
        *self == Delta::default()
    }
}

/// Sums deltas per key, dropping the ones that cancel out.
pub fn merge(deltas: impl IntoIterator<Item = (Key, Delta)>) -> BTreeMap<Key, Delta> {
    let mut merged: BTreeMap<Key, Delta> = BTreeMap::new();
    for (key, delta) in deltas {
        merged.entry(key).or_default().add(delta);
    }
    merged.retain(|_, delta| !delta.is_zero());
    merged
}

/// Applies merged deltas to one tenant's rollups.
pub async fn apply(
    transaction: &mut Transaction<'static, Postgres>,
    tenant_id: Uuid,
    merged: &BTreeMap<Key, Delta>,
) -> Result<(), sqlx::Error> {
    if merged.is_empty() {
        return Ok(());
    }
    let mut columns = Columns::default();
    for (key, delta) in merged {
        columns.push(key, delta);
    }
    sqlx::query!(
        "INSERT INTO usage.rollups AS r (tenant_id, bucket, model, project_slug, host_id, \
           agent_kind, member, input, output, cache_read, cache_write_5m, cache_write_1h, \
           requests, cost, unpriced_tokens, reasoning, web_search_requests, web_fetch_requests, \
           server_tool_cost, unpriced_calls) \
         SELECT $1, b, m, p, h, k, mb, i, o, cr, c5, c1, n, c::numeric, u, rs, ws, wf, \
           sc::numeric, uc \
         FROM unnest($2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], \
           $7::text[], $8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], \
           $13::int8[], $14::text[], $15::int8[], $16::int8[], $17::int8[], $18::int8[], \
           $19::text[], $20::int8[]) \
           AS d(b, m, p, h, k, mb, i, o, cr, c5, c1, n, c, u, rs, ws, wf, sc, uc) \
         ON CONFLICT (tenant_id, bucket, model, project_slug, host_id, agent_kind, member) \
         DO UPDATE SET \
           input = r.input + EXCLUDED.input, output = r.output + EXCLUDED.output, \
           cache_read = r.cache_read + EXCLUDED.cache_read, \
           cache_write_5m = r.cache_write_5m + EXCLUDED.cache_write_5m, \
           cache_write_1h = r.cache_write_1h + EXCLUDED.cache_write_1h, \
           requests = r.requests + EXCLUDED.requests, cost = r.cost + EXCLUDED.cost, \
           unpriced_tokens = r.unpriced_tokens + EXCLUDED.unpriced_tokens, \
           reasoning = r.reasoning + EXCLUDED.reasoning, \
           web_search_requests = r.web_search_requests + EXCLUDED.web_search_requests, \
           web_fetch_requests = r.web_fetch_requests + EXCLUDED.web_fetch_requests, \
           server_tool_cost = r.server_tool_cost + EXCLUDED.server_tool_cost, \
           unpriced_calls = r.unpriced_calls + EXCLUDED.unpriced_calls",
        tenant_id,
        &columns.bucket,
        &columns.model,
        &columns.project,
        &columns.host,
        &columns.kind,
        &columns.member,
        &columns.tokens[0],
        &columns.tokens[1],
        &columns.tokens[2],
        &columns.tokens[3],
        &columns.tokens[4],
        &columns.requests,
        &columns.cost,
        &columns.unpriced,
        &columns.reasoning,
        &columns.server_tools[0],
        &columns.server_tools[1],
        &columns.server_tool_cost,
        &columns.unpriced_calls,
    )
    .execute(&mut **transaction)
    .await?;
    Ok(())
}

#[derive(Default)]
struct Columns {
    bucket: Vec<DateTime<Utc>>,
    model: Vec<String>,
    project: Vec<String>,
    host: Vec<String>,
    kind: Vec<String>,
    member: Vec<String>,
    tokens: [Vec<i64>; 5],
    requests: Vec<i64>,
    cost: Vec<String>,
    unpriced: Vec<i64>,
    reasoning: Vec<i64>,
    server_tools: [Vec<i64>; 2],
    server_tool_cost: Vec<String>,
    unpriced_calls: Vec<i64>,
}

impl Columns {
    fn push(&mut self, key: &Key, delta: &Delta) {
        self.bucket.push(key.bucket);
        self.model.push(key.model.clone());
        self.project.push(key.project_slug.clone());
        self.host.push(key.host_id.clone());
        self.kind.push(key.agent_kind.clone());
        self.member.push(key.member.clone());
        for (column, count) in self.tokens.iter_mut().zip(delta.tokens) {
            column.push(count);
        }
        self.requests.push(delta.requests);
        self.cost.push(delta.cost.to_string());
        self.unpriced.push(delta.unpriced_tokens);
        self.reasoning.push(delta.reasoning);
        for (column, count) in self.server_tools.iter_mut().zip(delta.server_tools) {
            column.push(count);
        }
        self.server_tool_cost
            .push(delta.server_tool_cost.to_string());
        self.unpriced_calls.push(delta.unpriced_calls);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(bucket: &str, model: &str) -> Key {
        Key {
            bucket: bucket.parse().expect("instant"),
            model: model.to_string(),
            project_slug: "p".to_string(),
            host_id: "h".to_string(),
            agent_kind: "main".to_string(),
            member: String::new(),
        }
    }

    #[test]
    fn buckets_are_fifteen_utc_minutes() {
        let table = [
            ("2026-03-01T10:14:59.999Z", "2026-03-01T10:00:00Z"),
            ("2026-03-01T10:15:00Z", "2026-03-01T10:15:00Z"),
            ("2026-03-01T23:59:59Z", "2026-03-01T23:45:00Z"),
            ("1999-12-31T23:59:00Z", "1999-12-31T23:45:00Z"),
        ];
        for (at, expected) in table {
            let at: DateTime<Utc> = at.parse().expect("instant");
            assert_eq!(bucket(at), expected.parse::<DateTime<Utc>>().expect("x"));
        }
    }

    #[test]
    fn a_replacement_moves_only_the_difference_and_cancelling_deltas_vanish() {
        let small = Tokens {
            input: 10,
            output: 5,
            ..Tokens::default()
        };
        let large = Tokens { output: 9, ..small };
        let price = |cost| RowPrice {
            cost,
            priced: true,
            ..RowPrice::default()
        };
        let none = ServerTools::default();
        let old = Delta::of(&small, &none, &price(100));
        let new = Delta::of(&large, &none, &price(140));
        let merged = merge([
            (key("2026-03-01T10:00:00Z", "m"), old.negated()),
            (key("2026-03-01T10:00:00Z", "m"), new),
            (key("2026-03-01T11:00:00Z", "m"), old),
            (key("2026-03-01T11:00:00Z", "m"), old.negated()),
        ]);
        assert_eq!(merged.len(), 1);
        let moved = merged.values().next().expect("one");
        assert_eq!(moved.tokens, [0, 4, 0, 0, 0]);
        assert_eq!((moved.requests, moved.cost), (0, 40));
    }

    #[test]
    fn unpriced_rows_count_every_token_as_unpriced() {
        let tokens = Tokens {
            input: 3,
            output: 4,
            cache_read: 5,
            cache_write_5m: 6,
            cache_write_1h: 7,
            reasoning: 0,
        };
        let none = ServerTools::default();
        let unpriced = RowPrice::default();
        let priced = RowPrice {
            cost: 9,
            priced: true,
            ..RowPrice::default()
        };
        assert_eq!(Delta::of(&tokens, &none, &unpriced).unpriced_tokens, 25);
        assert_eq!(Delta::of(&tokens, &none, &priced).unpriced_tokens, 0);
        assert_eq!(model_coordinate(None), "");
        assert_eq!(
            model_coordinate(Some("claude-opus-4-5-20251101")),
            "claude-opus-4-5"
        );
    }
}
