//! The price of one usage row under a price table (pure): its cost, whether its model was
//! priced, its server-tool cost and unpriced calls, as stored on the row.

use chrono::DateTime;

use baton_usage_model::{PriceTable, UsageRecord};

/// A usage row's stored price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowPrice {
    /// Tokens and priced server-tool calls, 10⁻¹⁵ USD.
    pub cost: u128,
    /// The model had a row on the request's UTC date (its tokens are priced).
    pub priced: bool,
    /// The part of `cost` that is server-tool calls.
    pub server_tool_cost: u128,
    /// Server-tool calls with no row for their provider and date.
    pub unpriced_calls: u64,
}

/// The price of one usage row: its tokens priced exactly when its model has a row on its UTC
/// date (a zero-token request of a priced model is priced at zero), its server-tool calls by
/// its harness's provider on that date.
pub fn price(table: &PriceTable, record: &UsageRecord) -> RowPrice {
    let date = DateTime::from_timestamp_millis(record.timestamp_ms).map(|at| at.date_naive());
    let row = match (record.model.as_deref(), date) {
        (Some(model), Some(date)) => table.row_for(model, date),
        _ => None,
    };
    let priced = table.price(record);
    RowPrice {
        cost: priced.cost.0,
        priced: row.is_some(),
        server_tool_cost: priced.server_tool_cost.0,
        unpriced_calls: priced.unpriced_calls,
    }
}
