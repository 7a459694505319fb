//! A `usage.token_usage` row read back whole, as the session tree shows it, the upload's
//! collision rule decides against it and a price import re-prices it.
//!
//! The three reads select the same columns through [`select_stored_rows!`] (one literal, as
//! sqlx's macros check it against the schema) and build a [`StoredRow`] from their record with
//! [`stored_row!`], which keeps the statement and this struct in step: a column missing from
//! the statement, or of another type, fails the build.

use chrono::{DateTime, Utc};

use baton_usage_model::UsageRecord;
use baton_usage_model::record::{Harness, Modifiers, ServerTools, Tokens};

use crate::row_price::RowPrice;
use crate::savings::PricedRow;

/// The stored columns of one usage row. Money is read as text (`numeric(40, 0)` holds
/// 10⁻¹⁵ USD beyond `i64`).
#[derive(Debug, Clone)]
pub struct StoredRow {
    pub agent_id: String,
    pub dedup_key: String,
    pub model: Option<String>,
    pub at: DateTime<Utc>,
    pub input: i64,
    pub output: i64,
    pub cache_read: i64,
    pub cache_write_5m: i64,
    pub cache_write_1h: i64,
    pub reasoning: i64,
    pub web_search_requests: i64,
    pub web_fetch_requests: i64,
    pub service_tier: Option<String>,
    pub speed: Option<String>,
    pub inference_geo: Option<String>,
    pub sidechain: bool,
    pub cost: String,
    pub priced: bool,
    pub server_tool_cost: String,
    pub unpriced_calls: i64,
}

/// `sqlx::query!` over whole `usage.token_usage` rows: `SELECT`, the read's own columns
/// `$extra` (a string literal ending in a comma, or empty), the columns [`stored_row!`] reads,
/// `FROM usage.token_usage`, then `$rest` (a string literal: the `WHERE` clause and what
/// follows it), then the statement's arguments.
macro_rules! select_stored_rows {
    ($extra:literal, $rest:literal, $($argument:expr),+ $(,)?) => {
        sqlx::query!(
            "SELECT "
                + $extra
                + r#" agent_id, dedup_key, model, at, input, output, cache_read,
                 cache_write_5m, cache_write_1h, reasoning, web_search_requests,
                 web_fetch_requests, service_tier, speed, inference_geo, sidechain,
                 cost::text AS "cost!", priced, server_tool_cost::text AS "server_tool_cost!",
                 unpriced_calls
               FROM usage.token_usage "#
                + $rest,
            $($argument),+
        )
    };
}
pub(crate) use select_stored_rows;

/// A [`StoredRow`] from the record of a [`select_stored_rows!`] statement, a local variable:
/// its columns move out (the read's own `$extra` columns stay readable afterwards).
macro_rules! stored_row {
    ($record:ident) => {{
        $crate::stored_row::StoredRow {
            agent_id: $record.agent_id,
            dedup_key: $record.dedup_key,
            model: $record.model,
            at: $record.at,
            input: $record.input,
            output: $record.output,
            cache_read: $record.cache_read,
            cache_write_5m: $record.cache_write_5m,
            cache_write_1h: $record.cache_write_1h,
            reasoning: $record.reasoning,
            web_search_requests: $record.web_search_requests,
            web_fetch_requests: $record.web_fetch_requests,
            service_tier: $record.service_tier,
            speed: $record.speed,
            inference_geo: $record.inference_geo,
            sidechain: $record.sidechain,
            cost: $record.cost,
            priced: $record.priced,
            server_tool_cost: $record.server_tool_cost,
            unpriced_calls: $record.unpriced_calls,
        }
    }};
}
pub(crate) use stored_row;

/// A stored count: the table's checks keep counts at or above zero.
fn count(value: i64) -> u64 {
    value.max(0) as u64
}

/// Stored money: `numeric(40, 0)` as text, never negative (the table's checks).
fn money(value: &str) -> u128 {
    value.parse().unwrap_or(0)
}

impl StoredRow {
    /// The row as a priced record of `agent`'s session `session_id` (the row's own harness).
    pub fn priced(&self, agent: &str, session_id: &str) -> PricedRow {
        PricedRow {
            record: UsageRecord {
                message_id: self.dedup_key.clone(),
                request_id: None,
                harness: Harness::of_agent(agent),
                session_id: session_id.to_string(),
                agent_id: (!self.agent_id.is_empty()).then(|| self.agent_id.clone()),
                model: self.model.clone(),
                timestamp_ms: self.at.timestamp_millis(),
                tokens: Tokens {
                    input: count(self.input),
                    output: count(self.output),
                    cache_read: count(self.cache_read),
                    cache_write_5m: count(self.cache_write_5m),
                    cache_write_1h: count(self.cache_write_1h),
                    reasoning: count(self.reasoning),
                },
                server_tools: ServerTools {
                    web_search: count(self.web_search_requests),
                    web_fetch: count(self.web_fetch_requests),
                },
                modifiers: Modifiers {
                    service_tier: self.service_tier.clone(),
                    speed: self.speed.clone(),
                    inference_geo: self.inference_geo.clone(),
                },
                sidechain: self.sidechain,
            },
            price: RowPrice {
                cost: money(&self.cost),
                priced: self.priced,
                server_tool_cost: money(&self.server_tool_cost),
                unpriced_calls: count(self.unpriced_calls),
            },
        }
    }
}
