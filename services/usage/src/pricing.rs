//! Dated prices in `usage.model_pricing` and `usage.server_tool_pricing`, and the priced
//! figures they give.
//!
//! - Rows are the repository's price file rows (`usage-model/pricing/prices.json`
//!   schema 1), stored as written: model rows one per (model, effectiveFrom), `serverTools`
//!   rows one per (provider, tool, effectiveFrom). `baton migrate` loads the bundled table;
//!   `baton pricing import FILE` adds rows. A row for a stored key replaces it only when it
//!   differs.
//! - The service prices with a [`baton_usage_model::PriceTable`] built from every stored row,
//!   cached and rebuilt when the tables' fingerprint (row count and newest load time) changes.
//! - A model with no row is unpriced (cost 0, `priced = false`), never a confident $0; a
//!   server-tool call with no row for its provider and date is an unpriced call, likewise.
//! - An import re-prices every stored usage row whose normalised model it touched, and every
//!   row with calls of a server tool whose provider it touched, and rebuilds the rollups of
//!   the buckets those rows fall in, in one transaction.
//! - Money is an integer count of 10⁻¹⁵ USD; Postgres holds it as `numeric` and it crosses
//!   the driver as text.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::RwLock;

use baton_usage_model::pricing::{PricingError, normalize_model, provider_of};
use baton_usage_model::{Harness, PriceTable};

/// The price table as the service last read it.
#[derive(Debug, Clone, Default)]
pub struct PriceCache {
    inner: Arc<RwLock<Option<Cached>>>,
}

/// Row count and newest load time: any import changes one of them.
type Fingerprint = (i64, Option<DateTime<Utc>>);
type Cached = (Fingerprint, Arc<PriceTable>);

impl PriceCache {
    /// The current table, rebuilt from the database when it changed since the last read.
    pub async fn table(&self, pool: &PgPool) -> Result<Arc<PriceTable>, sqlx::Error> {
        let row = sqlx::query!(
            r#"SELECT (SELECT count(*) FROM usage.model_pricing)
                 + (SELECT count(*) FROM usage.server_tool_pricing) AS "rows!",
               GREATEST((SELECT max(loaded_at) FROM usage.model_pricing),
                 (SELECT max(loaded_at) FROM usage.server_tool_pricing)) AS newest"#,
        )
        .fetch_one(pool)
        .await?;
        let fingerprint: Fingerprint = (row.rows, row.newest);
        if let Some((cached, table)) = self.inner.read().await.as_ref()
            && *cached == fingerprint
        {
            return Ok(table.clone());
        }
        let mut connection = pool.acquire().await?;
        let table = Arc::new(load(&mut connection).await?);
        *self.inner.write().await = Some((fingerprint, table.clone()));
        Ok(table)
    }
}

/// Every stored row as one table.
pub async fn load(connection: &mut sqlx::PgConnection) -> Result<PriceTable, sqlx::Error> {
    let rows: Vec<Value> = sqlx::query_scalar!(
        "SELECT row_json FROM usage.model_pricing ORDER BY model, effective_from"
    )
    .fetch_all(&mut *connection)
    .await?;
    let tools: Vec<Value> = sqlx::query_scalar!(
        "SELECT row_json FROM usage.server_tool_pricing ORDER BY provider, tool, effective_from",
    )
    .fetch_all(&mut *connection)
    .await?;
    let file = serde_json::json!({
        "schema": 1,
        "rows": rows,
        "serverTools": tools,
    });
    // Rows were validated when stored; one that no longer parses prices nothing.
    Ok(PriceTable::from_json(&file.to_string()).unwrap_or_default())
}

/// The harnesses (`agent` on the wire) whose server-tool calls `provider` bills.
pub fn agents_billed_by(provider: &str) -> Vec<&'static str> {
    Harness::ALL
        .into_iter()
        .filter(|harness| provider_of(*harness) == provider)
        .map(Harness::as_str)
        .collect()
}

/// A price file's rows, each with its key, after the whole file parsed.
#[derive(Debug, Clone, Default)]
pub struct FileRows {
    /// (model, effectiveFrom, row).
    pub models: Vec<(String, NaiveDate, Value)>,
    /// (provider, tool, effectiveFrom, row) of the `serverTools` array.
    pub server_tools: Vec<(String, String, NaiveDate, Value)>,
}

fn text_of<'a>(row: &'a Value, key: &str) -> Option<&'a str> {
    row.get(key).and_then(Value::as_str)
}

fn date_of(row: &Value) -> Option<NaiveDate> {
    text_of(row, "effectiveFrom").and_then(|text| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
}

fn array_of<'a>(file: &'a Value, key: &str) -> &'a [Value] {
    file.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Splits a price file into its keyed rows, after checking the whole file parses as a table.
pub fn rows_of(text: &str) -> Result<FileRows, PricingError> {
    PriceTable::from_json(text)?;
    let file: Value =
        serde_json::from_str(text).map_err(|error| PricingError::Format(error.to_string()))?;
    let models = array_of(&file, "rows")
        .iter()
        .map(|row| match (text_of(row, "model"), date_of(row)) {
            (Some(model), Some(date)) => Ok((model.to_string(), date, row.clone())),
            _ => Err(PricingError::Format(
                "row without model or date".to_string(),
            )),
        })
        .collect::<Result<_, _>>()?;
    let server_tools = array_of(&file, "serverTools")
        .iter()
        .map(
            |row| match (text_of(row, "provider"), text_of(row, "tool"), date_of(row)) {
                (Some(provider), Some(tool), Some(date)) => {
                    Ok((provider.to_string(), tool.to_string(), date, row.clone()))
                }
                _ => Err(PricingError::Format(
                    "serverTools row without provider, tool or date".to_string(),
                )),
            },
        )
        .collect::<Result<_, _>>()?;
    Ok(FileRows {
        models,
        server_tools,
    })
}

/// What an import changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    /// Model and server-tool rows written (new or changed).
    pub rows_changed: u64,
    pub usage_repriced: u64,
}

/// Errors of an import.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Pricing(#[from] PricingError),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// Stores a price file's rows (new or changed only) and re-prices what they affect. Runs with
/// the migrating (admin) connection: it reads and writes every tenant's usage.
pub async fn import(pool: &PgPool, text: &str) -> Result<Imported, ImportError> {
    let rows = rows_of(text)?;
    let mut transaction = pool.begin().await?;
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended('baton.usage.pricing', 0))")
        .execute(&mut *transaction)
        .await?;
    let mut changed_models: Vec<String> = Vec::new();
    let mut changed_agents: Vec<&'static str> = Vec::new();
    let mut rows_changed = 0;
    for (model, date, row) in rows.models {
        let written = sqlx::query!(
            "INSERT INTO usage.model_pricing (model, effective_from, row_json, loaded_at) \
             VALUES ($1, $2, $3, clock_timestamp()) \
             ON CONFLICT (model, effective_from) DO UPDATE \
               SET row_json = EXCLUDED.row_json, loaded_at = EXCLUDED.loaded_at \
               WHERE usage.model_pricing.row_json IS DISTINCT FROM EXCLUDED.row_json",
            &model,
            date,
            &row,
        )
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if written > 0 {
            rows_changed += written;
            changed_models.push(normalize_model(&model));
        }
    }
    for (provider, tool, date, row) in rows.server_tools {
        let written = sqlx::query!(
            "INSERT INTO usage.server_tool_pricing (provider, tool, effective_from, row_json, \
               loaded_at) \
             VALUES ($1, $2, $3, $4, clock_timestamp()) \
             ON CONFLICT (provider, tool, effective_from) DO UPDATE \
               SET row_json = EXCLUDED.row_json, loaded_at = EXCLUDED.loaded_at \
               WHERE usage.server_tool_pricing.row_json IS DISTINCT FROM EXCLUDED.row_json",
            &provider,
            &tool,
            date,
            &row,
        )
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if written > 0 {
            rows_changed += written;
            changed_agents.extend(agents_billed_by(&provider));
        }
    }
    changed_models.sort();
    changed_models.dedup();
    changed_agents.sort_unstable();
    changed_agents.dedup();
    let usage_repriced = if changed_models.is_empty() && changed_agents.is_empty() {
        0
    } else {
        let table = load(&mut transaction).await?;
        let touched = crate::reprice::Touched {
            models: changed_models,
            agents_with_server_tools: changed_agents.into_iter().map(str::to_string).collect(),
        };
        crate::reprice::reprice(&mut transaction, &table, &touched).await?
    };
    transaction.commit().await?;
    Ok(Imported {
        rows_changed,
        usage_repriced,
    })
}
