//! The sums every figure read takes from stored usage: one select list per source
//! (`token_usage` rows as `t`, rollup rows as `r`), read into one [`Aggregated`] and turned
//! into the [`Delta`] that figures are summed from. One definition, so a group, a session
//! summary and a rollup can never sum the same rows two ways.

use crate::rollups::Delta;

/// The sums of `usage.token_usage t` rows, after the statement's group columns.
pub const USAGE_SUMS: &str = "sum(t.input)::int8 AS input, sum(t.output)::int8 AS output, \
    sum(t.cache_read)::int8 AS cache_read, sum(t.cache_write_5m)::int8 AS cache_write_5m, \
    sum(t.cache_write_1h)::int8 AS cache_write_1h, sum(t.reasoning)::int8 AS reasoning, \
    count(*)::int8 AS requests, sum(t.cost)::text AS cost, \
    sum(CASE WHEN t.priced THEN 0 ELSE t.input + t.output + t.cache_read \
      + t.cache_write_5m + t.cache_write_1h END)::int8 AS unpriced_tokens, \
    sum(t.web_search_requests)::int8 AS web_search_requests, \
    sum(t.web_fetch_requests)::int8 AS web_fetch_requests, \
    sum(t.server_tool_cost)::text AS server_tool_cost, \
    sum(t.unpriced_calls)::int8 AS unpriced_calls";

/// The sums of `usage.rollups r` rows, after the statement's group columns.
pub const ROLLUP_SUMS: &str = "sum(r.input)::int8 AS input, sum(r.output)::int8 AS output, \
    sum(r.cache_read)::int8 AS cache_read, sum(r.cache_write_5m)::int8 AS cache_write_5m, \
    sum(r.cache_write_1h)::int8 AS cache_write_1h, sum(r.reasoning)::int8 AS reasoning, \
    sum(r.requests)::int8 AS requests, sum(r.cost)::text AS cost, \
    sum(r.unpriced_tokens)::int8 AS unpriced_tokens, \
    sum(r.web_search_requests)::int8 AS web_search_requests, \
    sum(r.web_fetch_requests)::int8 AS web_fetch_requests, \
    sum(r.server_tool_cost)::text AS server_tool_cost, \
    sum(r.unpriced_calls)::int8 AS unpriced_calls";

/// One group's sums as [`USAGE_SUMS`] or [`ROLLUP_SUMS`] select them. Money crosses the driver
/// as text (`numeric` of 10⁻¹⁵ USD).
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct Aggregated {
    pub input: i64,
    pub output: i64,
    pub cache_read: i64,
    pub cache_write_5m: i64,
    pub cache_write_1h: i64,
    pub reasoning: i64,
    pub requests: i64,
    pub cost: Option<String>,
    pub unpriced_tokens: i64,
    pub web_search_requests: i64,
    pub web_fetch_requests: i64,
    pub server_tool_cost: Option<String>,
    pub unpriced_calls: i64,
}

fn money(text: Option<&str>) -> i128 {
    text.and_then(|text| text.parse::<i128>().ok()).unwrap_or(0)
}

impl Aggregated {
    /// The group's sums in the shape figures add up.
    pub fn delta(&self) -> Delta {
        Delta {
            tokens: [
                self.input,
                self.output,
                self.cache_read,
                self.cache_write_5m,
                self.cache_write_1h,
            ],
            reasoning: self.reasoning,
            requests: self.requests,
            cost: money(self.cost.as_deref()),
            unpriced_tokens: self.unpriced_tokens,
            server_tools: [self.web_search_requests, self.web_fetch_requests],
            server_tool_cost: money(self.server_tool_cost.as_deref()),
            unpriced_calls: self.unpriced_calls,
        }
    }
}
