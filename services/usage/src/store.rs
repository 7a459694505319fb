//! Shared database helpers of the usage context.

use baton_kit::error::ApiError;

/// A database failure as the caller sees it (503 when the database is unreachable, else 500);
/// the statement and its values are never part of the answer.
pub fn db_error(error: sqlx::Error) -> ApiError {
    error.into()
}
