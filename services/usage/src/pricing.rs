//! Dated prices in `usage.model_pricing`, and the priced figures they give.
//!
//! - Rows are the repository's price file rows (`clients/transcripts/pricing/prices.json`
//!   schema 1), stored as written, one per (model, effectiveFrom). `baton migrate` loads the
//!   bundled table; `baton pricing import FILE` adds rows. A row for a stored (model, date)
//!   replaces it only when it differs.
//! - The service prices with a [`baton_transcripts::PriceTable`] built from every stored row,
//!   cached and rebuilt when the table's fingerprint (row count and newest load time) changes.
//! - A model with no row is unpriced (cost 0, `priced = false`), never a confident $0.
//! - An import re-prices every stored usage row whose normalised model it touched, and
//!   rebuilds the rollups of the buckets those rows fall in, in one transaction.
//! - Money is an integer count of 10⁻¹⁵ USD; Postgres holds it as `numeric` and it crosses
//!   the driver as text.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::RwLock;

use baton_transcripts::pricing::{PricingError, normalize_model};
use baton_transcripts::{PriceTable, Priced};

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
        let fingerprint: Fingerprint =
            sqlx::query_as("SELECT count(*), max(loaded_at) FROM usage.model_pricing")
                .fetch_one(pool)
                .await?;
        if let Some((cached, table)) = self.inner.read().await.as_ref()
            && *cached == fingerprint
        {
            return Ok(table.clone());
        }
        let table = Arc::new(load(pool).await?);
        *self.inner.write().await = Some((fingerprint, table.clone()));
        Ok(table)
    }
}

/// Every stored row as one table.
pub async fn load<'e>(executor: impl sqlx::PgExecutor<'e>) -> Result<PriceTable, sqlx::Error> {
    let rows: Vec<(Value,)> =
        sqlx::query_as("SELECT row_json FROM usage.model_pricing ORDER BY model, effective_from")
            .fetch_all(executor)
            .await?;
    let file = serde_json::json!({
        "schema": 1,
        "rows": rows.into_iter().map(|(row,)| row).collect::<Vec<_>>(),
    });
    // Rows were validated when stored; one that no longer parses prices nothing.
    Ok(PriceTable::from_json(&file.to_string()).unwrap_or_default())
}

/// Cost and priced flag of one usage row, as stored: priced exactly when its model has a
/// row on its UTC date (a zero-token request of a priced model is priced at zero).
pub fn price(table: &PriceTable, record: &baton_transcripts::UsageRecord) -> (u128, bool) {
    let date = DateTime::from_timestamp_millis(record.timestamp_ms).map(|at| at.date_naive());
    let row = match (record.model.as_deref(), date) {
        (Some(model), Some(date)) => table.row_for(model, date),
        _ => None,
    };
    let Priced { cost, .. } = PriceTable::price_with(row, record);
    (cost.0, row.is_some())
}

/// A price file's rows, each with its model and date, after the whole file parsed.
pub fn rows_of(text: &str) -> Result<Vec<(String, NaiveDate, Value)>, PricingError> {
    PriceTable::from_json(text)?;
    let file: Value =
        serde_json::from_str(text).map_err(|error| PricingError::Format(error.to_string()))?;
    let rows = file
        .get("rows")
        .and_then(Value::as_array)
        .ok_or_else(|| PricingError::Format("rows".to_string()))?;
    rows.iter()
        .map(|row| {
            let model = row.get("model").and_then(Value::as_str);
            let date = row
                .get("effectiveFrom")
                .and_then(Value::as_str)
                .and_then(|text| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok());
            match (model, date) {
                (Some(model), Some(date)) => Ok((model.to_string(), date, row.clone())),
                _ => Err(PricingError::Format(
                    "row without model or date".to_string(),
                )),
            }
        })
        .collect()
}

/// What an import changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
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
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('baton.usage.pricing', 0))")
        .execute(&mut *transaction)
        .await?;
    let mut changed_models: Vec<String> = Vec::new();
    let mut rows_changed = 0;
    for (model, date, row) in rows {
        let written = sqlx::query(
            "INSERT INTO usage.model_pricing (model, effective_from, row_json, loaded_at) \
             VALUES ($1, $2, $3, clock_timestamp()) \
             ON CONFLICT (model, effective_from) DO UPDATE \
               SET row_json = EXCLUDED.row_json, loaded_at = EXCLUDED.loaded_at \
               WHERE usage.model_pricing.row_json IS DISTINCT FROM EXCLUDED.row_json",
        )
        .bind(&model)
        .bind(date)
        .bind(&row)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if written > 0 {
            rows_changed += written;
            changed_models.push(normalize_model(&model));
        }
    }
    changed_models.sort();
    changed_models.dedup();
    let usage_repriced = if changed_models.is_empty() {
        0
    } else {
        let table = load(&mut *transaction).await?;
        crate::reprice::reprice(&mut transaction, &table, &changed_models).await?
    };
    transaction.commit().await?;
    Ok(Imported {
        rows_changed,
        usage_repriced,
    })
}
