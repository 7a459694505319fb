//! The usage context's tables as an upload writes them: one module per table, each statement
//! one bulk upsert over `unnest` arrays (never one per row), each merge rule named by a
//! comment in the statement that applies it and tested by `tests/usage/*_merges.rs`.
//!
//! - [`sessions`]: the sessions upsert, the hosts and members that report a stored session,
//!   and the status evidence read from the deliveries;
//! - [`agents`]: the agents upsert;
//! - [`edges`]: parent → child edges, the first proof kept;
//! - [`usage`]: token usage rows under the collision rule, with their rollup deltas
//!   (`usage_insert` holds the statement that writes them);
//! - [`deliveries`]: hook deliveries, stored once by id.
//!
//! Every merge commutes (unions, least/greatest, sticky flags, summed rollup deltas), so two
//! uploads of one tenant need no lock between them; rows are written in key order so
//! concurrent uploads lock what they share in one order (the upload retries the rare
//! deadlock).

use sqlx::{Postgres, Transaction};

use baton_kit::error::ApiError;

pub mod agents;
pub mod deliveries;
pub mod edges;
pub mod sessions;
pub mod usage;
mod usage_insert;

/// A transaction of the usage context (a tenant's upload, the rows it writes).
pub(crate) type Tx = Transaction<'static, Postgres>;

/// `rows` each paired with its key, in key order (the order every statement writes in).
pub(crate) fn in_key_order<K: Ord, T>(rows: &[T], key: impl Fn(&T) -> K) -> Vec<(K, &T)> {
    let mut ordered: Vec<(K, &T)> = rows.iter().map(|row| (key(row), row)).collect();
    ordered.sort_by(|left, right| left.0.cmp(&right.0));
    ordered
}

/// A database failure as the caller sees it (503 when the database is unreachable, else 500);
/// the statement and its values are never part of the answer.
pub fn db_error(error: sqlx::Error) -> ApiError {
    error.into()
}
