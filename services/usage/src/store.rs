//! Shared database helpers of the usage context.

use sqlx::{Postgres, Transaction};

use baton_kit::error::ApiError;

/// A transaction of the usage context (a tenant's upload, the rows it writes).
pub(crate) type Tx = Transaction<'static, Postgres>;

/// A database failure as the caller sees it (503 when the database is unreachable, else 500);
/// the statement and its values are never part of the answer.
pub fn db_error(error: sqlx::Error) -> ApiError {
    error.into()
}
