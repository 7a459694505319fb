//! `UploadBatch`: one checked batch written in one tenant transaction.
//!
//! Order: reference checks (`not_found`, nothing written), sessions (and the stored sessions
//! the batch reports to), agents, edges, usage with its rollup deltas, deliveries, then the
//! status evidence the deliveries carry, then budgets and runaway checks over what moved. Each
//! step is one table's bulk statement in [`crate::store`], where its merge rules are written
//! and documented.
//!
//! Concurrency: no lock serialises a tenant's uploads (a per-tenant lock made four machines of
//! one tenant upload one at a time). Every merge is a row-level upsert that commutes, and the
//! collision rule runs against usage rows locked `FOR UPDATE` ([`crate::store::usage::write`]).
//! Rows are written in key order so concurrent uploads lock what they share in one order;
//! should two still wait on each other (Postgres reports a deadlock and rolls one back, or a
//! serialization failure), the rolled-back upload runs again from the start, up to
//! [`ATTEMPTS`] times, so a caller never sees a conflict that a retry would have resolved.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_usage_model::PriceTable;

use crate::keys::SessionKey;
use crate::store::{self, Tx, db_error};
use crate::validate::Batch;

/// What an upload did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uploaded {
    pub sessions: u32,
    pub agents: u32,
    pub edges_inserted: u32,
    pub usage_inserted: u32,
    pub usage_replaced: u32,
    pub usage_unchanged: u32,
    pub deliveries_inserted: u32,
    pub deliveries_duplicate: u32,
    /// The latest activity instant among the usage rows this upload inserted or replaced:
    /// how far the rollups (written in this transaction) trail the activity they count.
    pub newest_usage_at: Option<DateTime<Utc>>,
    /// Budget thresholds this upload crossed (each with its message in the outbox).
    pub budget_crossings: u32,
    /// Runaway episodes this upload opened (each with its message in the outbox).
    pub runaway_flags: u32,
}

/// Times an upload runs when Postgres rolls it back for a deadlock or serialization failure.
pub const ATTEMPTS: usize = 4;

/// Writes a batch for `tenant_id`, received at `now`.
pub async fn upload(
    pool: &PgPool,
    table: &PriceTable,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<Uploaded, ApiError> {
    let mut attempt = 1;
    loop {
        match upload_once(pool, table, tenant_id, now, batch).await {
            Err(Failure::Database(error)) if attempt < ATTEMPTS && retryable(&error) => {
                attempt += 1;
                tracing::info!(
                    attempt,
                    "usage upload rolled back by a lock conflict, run again"
                );
            }
            Err(Failure::Database(error)) => return Err(db_error(error)),
            Err(Failure::Refused(error)) => return Err(error),
            Ok(uploaded) => return Ok(uploaded),
        }
    }
}

/// Why one attempt failed: a refusal to report as is, or a database error (maybe retryable).
enum Failure {
    Refused(ApiError),
    Database(sqlx::Error),
}

impl From<sqlx::Error> for Failure {
    fn from(error: sqlx::Error) -> Self {
        Failure::Database(error)
    }
}

/// Deadlock detected (40P01) or serialization failure (40001): the transaction was rolled back
/// and running it again is safe.
fn retryable(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|error| error.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}

async fn upload_once(
    pool: &PgPool,
    table: &PriceTable,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    batch: &Batch,
) -> Result<Uploaded, Failure> {
    let mut tx = begin_tenant(pool, tenant_id).await?;
    check_references(&mut tx, tenant_id, batch).await?;
    let mut uploaded = Uploaded {
        sessions: batch.sessions.len() as u32,
        agents: batch.agents.len() as u32,
        ..Uploaded::default()
    };
    store::sessions::upsert(&mut tx, tenant_id, batch).await?;
    store::sessions::add_reporters(&mut tx, tenant_id, batch).await?;
    store::agents::upsert(&mut tx, tenant_id, batch).await?;
    uploaded.edges_inserted = store::edges::insert(&mut tx, tenant_id, batch).await?;
    let written = store::usage::write(&mut tx, table, tenant_id, batch).await?;
    uploaded.usage_inserted = written.inserted;
    uploaded.usage_replaced = written.replaced;
    uploaded.usage_unchanged = written.unchanged;
    uploaded.newest_usage_at = written.newest_written_at;
    let inserted = store::deliveries::insert(&mut tx, tenant_id, now, batch).await?;
    uploaded.deliveries_inserted = inserted;
    uploaded.deliveries_duplicate = batch.deliveries.len() as u32 - inserted;
    store::sessions::status_evidence(&mut tx, tenant_id, batch).await?;
    // Spend moved only if usage was written; budgets see it in this same transaction.
    if written.inserted + written.replaced > 0 {
        uploaded.budget_crossings =
            crate::budgets::check::evaluate(&mut tx, tenant_id, now).await?;
    }
    // Runaway: the sessions this batch carried usage or a prompt for (a prompt can end an
    // unattended episode); nothing to read when neither moved.
    let touched = runaway_keys(batch);
    if written.inserted + written.replaced > 0 || inserted > 0 {
        uploaded.runaway_flags =
            crate::runaway::check::evaluate(&mut tx, tenant_id, &touched, now).await?;
    }
    tx.commit().await?;
    Ok(uploaded)
}

/// The sessions a batch carries usage rows or deliveries for.
fn runaway_keys(batch: &Batch) -> BTreeSet<SessionKey> {
    batch
        .usage
        .iter()
        .map(|row| row.session_key())
        .chain(
            batch
                .deliveries
                .iter()
                .map(|delivery| delivery.session_key()),
        )
        .collect()
}

/// Every session and non-main agent the batch names without carrying must be stored (the
/// tenant's, under row-level security); otherwise the batch is refused and nothing written.
async fn check_references(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<(), Failure> {
    let sessions = batch.referenced_sessions();
    if !sessions.is_empty()
        && store::sessions::count_stored(tx, tenant_id, &sessions).await? != sessions.len() as i64
    {
        return Err(Failure::Refused(ApiError::not_found(
            "a fact names a session that is not stored",
        )));
    }
    let agents = batch.referenced_agents();
    if !agents.is_empty()
        && store::agents::count_stored(tx, tenant_id, &agents).await? != agents.len() as i64
    {
        return Err(Failure::Refused(ApiError::not_found(
            "a fact names an agent that is not stored",
        )));
    }
    Ok(())
}
