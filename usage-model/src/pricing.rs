//! Pricing: a pure step over usage records, from the dated table in `pricing/prices.json`.
//!
//! - A record is priced by the newest row of its model whose `effectiveFrom` is on or before
//!   the record's UTC date, with all five rates stored per row (no multiplier is assumed).
//! - Modifiers apply per request: fast mode (`speed: "fast"`) takes the row's fast rates;
//!   otherwise a prompt (input + cache read + cache writes) above the row's long-context
//!   threshold takes the long-context rates for every token of that request; `inference_geo`
//!   multiplies by the row's factor for that value.
//! - Model ids are normalised before lookup: case, provider prefixes (`anthropic/`,
//!   `anthropic.`, `openai/`, `gemini/`, `google/`), a bracketed context tag (`[1m]`), a Bedrock version tail
//!   (`-v1:0`), an eight-digit date suffix (`-20251101`, `@20251101`), and Copilot CLI's dotted
//!   spelling of Anthropic ids (`claude-sonnet-4.5`). No family guess:
//!   a model still unknown after that is unpriced.
//! - **Halt gate**: a model with no row is never $0; its tokens are counted as unpriced and
//!   shown beside every dollar figure. `<synthetic>` costs 0 through its explicit zero row.
//! - Money is summed as integers (10⁻¹⁵ USD), so totals do not depend on summation order.
//! - **Server tools** (web search, web fetch) are billed per call, not per token: the table's
//!   `serverTools` rows give a dated price per thousand calls for each provider and tool. A
//!   record's calls are priced by the provider of its harness (Claude Code → `anthropic`,
//!   Codex → `openai`, Gemini CLI → `google`) on its UTC date; calls with no row are counted as unpriced calls, never
//!   $0. Their cost is part of the record's cost and also shown on its own.
//! - **Copilot CLI** records name the model that served them (`gpt-5.2`, `claude-sonnet-4.5`,
//!   `gemini-3-pro-preview`) and are priced by that model's row whatever the route. For a
//!   bring-your-own-key request that is what the provider bills. A request served by GitHub's
//!   own Copilot service is billed in premium requests, not tokens: its figure is the same
//!   models' API list price, an equivalent rather than GitHub's bill, and the record says so by
//!   its service tier `copilot` (set by the transcript reader, `baton_transcripts::copilot::usage`).

use std::collections::HashMap;

use chrono::NaiveDate;
use serde::Deserialize;

use crate::record::{Harness, ServerTools, Tokens, UsageRecord};

/// The table shipped with Baton.
pub const BUNDLED: &str = include_str!("../pricing/prices.json");

/// Money in 10⁻¹⁵ USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(pub u128);

impl Money {
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e15
    }
}

impl std::ops::AddAssign for Money {
    fn add_assign(&mut self, other: Money) {
        self.0 += other.0;
    }
}

/// A record's price: what could be priced, and the tokens and calls that could not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Priced {
    /// Everything priced: tokens and server-tool calls.
    pub cost: Money,
    pub unpriced_tokens: u64,
    /// The part of `cost` that is server-tool calls.
    pub server_tool_cost: Money,
    /// Server-tool calls with no price row for their provider and date.
    pub unpriced_calls: u64,
}

impl std::ops::AddAssign for Priced {
    fn add_assign(&mut self, other: Priced) {
        self.cost += other.cost;
        self.unpriced_tokens += other.unpriced_tokens;
        self.server_tool_cost += other.server_tool_cost;
        self.unpriced_calls += other.unpriced_calls;
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    schema: u32,
    rows: Vec<RowFile>,
    #[serde(default, rename = "serverTools")]
    server_tools: Vec<ServerToolRowFile>,
}

/// A dated per-call price of one provider's server tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServerToolRowFile {
    provider: String,
    /// `web_search` or `web_fetch`.
    tool: String,
    effective_from: NaiveDate,
    usd_per_thousand: f64,
    source: String,
    source_date: String,
    #[serde(default)]
    note: String,
}

/// The server tools a record can use, as named in the table.
pub const WEB_SEARCH: &str = "web_search";
pub const WEB_FETCH: &str = "web_fetch";

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RowFile {
    model: String,
    provider: String,
    effective_from: NaiveDate,
    #[serde(flatten)]
    rates: RatesFile,
    long_context: Option<LongContextFile>,
    fast: Option<RatesFile>,
    #[serde(default)]
    geo: HashMap<String, f64>,
    source: String,
    source_date: String,
    #[serde(default)]
    note: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RatesFile {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write_5m: f64,
    cache_write_1h: f64,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LongContextFile {
    threshold_tokens: u64,
    #[serde(flatten)]
    rates: RatesFile,
}

/// The five rates in 10⁻¹² USD per token (USD per million tokens × 10⁶); multiplied by a
/// geo factor in thousandths, a cost comes out in 10⁻¹⁵ USD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rates([u64; 5]);

impl Rates {
    fn from_file(file: RatesFile) -> Result<Rates, PricingError> {
        let scale = |usd_per_million: f64| -> Result<u64, PricingError> {
            if !usd_per_million.is_finite() || usd_per_million < 0.0 {
                return Err(PricingError::Invalid(format!("rate {usd_per_million}")));
            }
            Ok((usd_per_million * 1e6).round() as u64)
        };
        Ok(Rates([
            scale(file.input)?,
            scale(file.output)?,
            scale(file.cache_read)?,
            scale(file.cache_write_5m)?,
            scale(file.cache_write_1h)?,
        ]))
    }

    fn cost(&self, tokens: &Tokens, geo_permille: u64) -> Money {
        let counts = [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write_5m,
            tokens.cache_write_1h,
        ];
        let picos: u128 = counts
            .iter()
            .zip(self.0)
            .map(|(count, rate)| u128::from(*count) * u128::from(rate))
            .sum();
        Money(picos * u128::from(geo_permille))
    }
}

/// One dated row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub model: String,
    pub provider: String,
    pub effective_from: NaiveDate,
    rates: Rates,
    long_context: Option<(u64, Rates)>,
    fast: Option<Rates>,
    geo_permille: HashMap<String, u64>,
}

/// A price table file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PricingError {
    #[error("price table is not valid JSON of schema 1: {0}")]
    Format(String),
    #[error("price table has an invalid value: {0}")]
    Invalid(String),
}

/// The rows by normalised model id, each model's rows oldest first.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    by_model: HashMap<String, Vec<Row>>,
    /// Per-call prices in 10⁻¹⁵ USD by (provider, tool), oldest first.
    server_tools: HashMap<(String, String), Vec<(NaiveDate, u64)>>,
}

/// The provider that bills a harness's server-tool calls.
pub fn provider_of(harness: Harness) -> &'static str {
    match harness {
        Harness::ClaudeCode => "anthropic",
        Harness::Codex => "openai",
        Harness::Gemini => "google",
        // Copilot CLI records no server-tool calls; none is priced under this name.
        Harness::Copilot => "github",
    }
}

impl PriceTable {
    /// The table compiled into the binary.
    pub fn bundled() -> PriceTable {
        PriceTable::from_json(BUNDLED).expect("the bundled price table is valid")
    }

    /// Reads a table file (the repository's format; see `pricing/README.md`).
    pub fn from_json(text: &str) -> Result<PriceTable, PricingError> {
        let mut table = PriceTable::default();
        table.extend_json(text)?;
        Ok(table)
    }

    /// Adds the rows of another table file; a row for the same model and date replaces the
    /// earlier one.
    pub fn extend_json(&mut self, text: &str) -> Result<(), PricingError> {
        let file: TableFile =
            serde_json::from_str(text).map_err(|e| PricingError::Format(e.to_string()))?;
        if file.schema != 1 {
            return Err(PricingError::Format(format!("schema {}", file.schema)));
        }
        for row in file.rows {
            let _ = (&row.source, &row.source_date, &row.note);
            let geo_permille = row
                .geo
                .iter()
                .map(|(name, factor)| {
                    if !factor.is_finite() || *factor <= 0.0 {
                        return Err(PricingError::Invalid(format!("geo factor {factor}")));
                    }
                    Ok((name.clone(), (factor * 1000.0).round() as u64))
                })
                .collect::<Result<_, _>>()?;
            let parsed = Row {
                model: row.model.clone(),
                provider: row.provider,
                effective_from: row.effective_from,
                rates: Rates::from_file(row.rates)?,
                long_context: match row.long_context {
                    Some(lc) => Some((lc.threshold_tokens, Rates::from_file(lc.rates)?)),
                    None => None,
                },
                fast: row.fast.map(Rates::from_file).transpose()?,
                geo_permille,
            };
            let rows = self
                .by_model
                .entry(normalize_model(&row.model))
                .or_default();
            rows.retain(|existing| existing.effective_from != parsed.effective_from);
            rows.push(parsed);
            rows.sort_by_key(|r| r.effective_from);
        }
        for row in file.server_tools {
            let _ = (&row.source, &row.source_date, &row.note);
            if ![WEB_SEARCH, WEB_FETCH].contains(&row.tool.as_str()) {
                return Err(PricingError::Invalid(format!("server tool {}", row.tool)));
            }
            if !row.usd_per_thousand.is_finite() || row.usd_per_thousand < 0.0 {
                return Err(PricingError::Invalid(format!(
                    "server tool price {}",
                    row.usd_per_thousand
                )));
            }
            // USD per thousand calls → 10⁻¹⁵ USD per call.
            let per_call = (row.usd_per_thousand * 1e12).round() as u64;
            let rows = self
                .server_tools
                .entry((row.provider, row.tool))
                .or_default();
            rows.retain(|(from, _)| *from != row.effective_from);
            rows.push((row.effective_from, per_call));
            rows.sort_by_key(|(from, _)| *from);
        }
        Ok(())
    }

    /// The price of one call of a provider's server tool on `date`, in 10⁻¹⁵ USD.
    pub fn server_tool_rate(&self, provider: &str, tool: &str, date: NaiveDate) -> Option<u64> {
        self.server_tools
            .get(&(provider.to_string(), tool.to_string()))?
            .iter()
            .rev()
            .find(|(from, _)| *from <= date)
            .map(|(_, rate)| *rate)
    }

    /// Prices a record's server-tool calls: their cost, and the calls with no row.
    pub fn price_server_tools(
        &self,
        harness: Harness,
        tools: &ServerTools,
        date: NaiveDate,
    ) -> Priced {
        let provider = provider_of(harness);
        let mut priced = Priced::default();
        for (tool, calls) in [(WEB_SEARCH, tools.web_search), (WEB_FETCH, tools.web_fetch)] {
            if calls == 0 {
                continue;
            }
            match self.server_tool_rate(provider, tool, date) {
                Some(rate) => {
                    let cost = Money(u128::from(calls) * u128::from(rate));
                    priced.cost += cost;
                    priced.server_tool_cost += cost;
                }
                None => priced.unpriced_calls += calls,
            }
        }
        priced
    }

    /// The row that prices `model` on `date`, if any.
    pub fn row_for(&self, model: &str, date: NaiveDate) -> Option<&Row> {
        let rows = self
            .by_model
            .get(model)
            .or_else(|| self.by_model.get(&normalize_model(model)))?;
        rows.iter().rev().find(|row| row.effective_from <= date)
    }

    /// Prices one record.
    pub fn price(&self, record: &UsageRecord) -> Priced {
        let date =
            chrono::DateTime::from_timestamp_millis(record.timestamp_ms).map(|at| at.date_naive());
        let row = match (record.model.as_deref(), date) {
            (Some(model), Some(date)) => self.row_for(model, date),
            _ => None,
        };
        let mut priced = PriceTable::price_with(row, record);
        priced += self.price_calls(record);
        priced
    }

    /// Prices a record's server-tool calls on its UTC date; without a date they are unpriced.
    pub fn price_calls(&self, record: &UsageRecord) -> Priced {
        if record.server_tools.is_empty() {
            return Priced::default();
        }
        match chrono::DateTime::from_timestamp_millis(record.timestamp_ms) {
            Some(at) => {
                self.price_server_tools(record.harness, &record.server_tools, at.date_naive())
            }
            None => Priced {
                unpriced_calls: record.server_tools.web_search + record.server_tools.web_fetch,
                ..Priced::default()
            },
        }
    }

    /// Prices one record's tokens by a row already looked up (`row_for` of its model and UTC
    /// date); `None` leaves them unpriced. Server-tool calls are priced apart
    /// ([`PriceTable::price_server_tools`]).
    pub fn price_with(row: Option<&Row>, record: &UsageRecord) -> Priced {
        let Some(row) = row else {
            return Priced {
                unpriced_tokens: record.tokens.total(),
                ..Priced::default()
            };
        };
        let fast = record.modifiers.speed.as_deref() == Some("fast");
        let rates = match (fast, row.fast, row.long_context) {
            (true, Some(fast_rates), _) => fast_rates,
            (_, _, Some((threshold, long))) if record.tokens.prompt() > threshold => long,
            _ => row.rates,
        };
        let geo = record
            .modifiers
            .inference_geo
            .as_deref()
            .and_then(|geo| row.geo_permille.get(geo))
            .copied()
            .unwrap_or(1000);
        Priced {
            cost: rates.cost(&record.tokens, geo),
            ..Priced::default()
        }
    }
}

/// The id a model is looked up by.
pub fn normalize_model(model: &str) -> String {
    let mut id = model.trim().to_ascii_lowercase();
    for prefix in ["anthropic/", "anthropic.", "openai/", "gemini/", "google/"] {
        if let Some(rest) = id.strip_prefix(prefix) {
            id = rest.to_string();
        }
    }
    if let Some(open) = id.find('[')
        && id.ends_with(']')
    {
        id.truncate(open);
    }
    // Copilot CLI spells Anthropic's ids with dots (`claude-sonnet-4.5`); Anthropic's own ids
    // never contain one, so the dotted spelling is the same model.
    if id.starts_with("claude-") {
        id = id.replace('.', "-");
    }
    if let Some(rest) = id
        .strip_suffix("-v1:0")
        .or_else(|| id.strip_suffix("-v2:0"))
    {
        id = rest.to_string();
    }
    for separator in ['-', '@'] {
        if let Some(at) = id.rfind(separator) {
            let tail = &id[at + 1..];
            if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
                id.truncate(at);
            }
        }
    }
    id
}

#[cfg(test)]
mod tests;
