//! The closer report's registry figures (`BriefedSince`): sessions opened since an instant and
//! the commitments briefed to them, one (run, memory) pair per briefed row.
//!
//! Pairs come oldest session first and stop at the caller's limit (at most
//! [`MAX_BRIEFED_PAIRS`]); `truncated` then says the window held more.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;

use crate::service::Registry;

/// The largest limit a caller may ask for.
pub const MAX_BRIEFED_PAIRS: u32 = 10_000;

/// The registry's part of the report.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BriefedSince {
    pub sessions_opened: i64,
    /// (session run id, briefed memory id)
    pub briefed: Vec<(Uuid, Uuid)>,
    pub truncated: bool,
}

/// Validates a requested limit.
pub fn limit(requested: u32) -> Result<u32, ApiError> {
    if (1..=MAX_BRIEFED_PAIRS).contains(&requested) {
        Ok(requested)
    } else {
        Err(ApiError::invalid_input(format!(
            "limit must be 1 to {MAX_BRIEFED_PAIRS}"
        )))
    }
}

#[tracing::instrument(name = "db.registry.briefed_since", skip_all)]
async fn read(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    since: DateTime<Utc>,
    limit: u32,
) -> Result<BriefedSince, ApiError> {
    let sessions_opened = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM registry.agent_sessions
           WHERE tenant_id = $1 AND opened_at >= $2"#,
        tenant_id,
        since,
    )
    .fetch_one(&mut *connection)
    .await?;
    let rows = sqlx::query!(
        r#"SELECT s.id, b.row->>'id' AS memory FROM registry.agent_sessions s
             CROSS JOIN LATERAL jsonb_array_elements(s.briefed_memories)
               WITH ORDINALITY AS b(row, n)
           WHERE s.tenant_id = $1 AND s.opened_at >= $2
           ORDER BY s.opened_at, s.id, b.n LIMIT $3"#,
        tenant_id,
        since,
        i64::from(limit) + 1,
    )
    .fetch_all(connection)
    .await?;
    let truncated = rows.len() > limit as usize;
    let briefed = rows
        .into_iter()
        .take(limit as usize)
        .map(|row| {
            row.memory
                .and_then(|memory| Uuid::parse_str(&memory).ok())
                .map(|memory| (row.id, memory))
                .ok_or_else(|| ApiError::internal("a stored briefed row has no uuid id"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BriefedSince {
        sessions_opened,
        briefed,
        truncated,
    })
}

impl Registry {
    /// Sessions opened since `since` and their briefed commitments, bounded by `limit`.
    pub async fn briefed_since(
        &self,
        call: &CallContext,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<BriefedSince, ApiError> {
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        let answer = read(&mut transaction, call.tenant_id, since, limit).await?;
        transaction.commit().await?;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_outside_one_to_ten_thousand_is_refused() {
        assert!(limit(0).is_err());
        assert!(limit(MAX_BRIEFED_PAIRS + 1).is_err());
        assert_eq!(limit(1).expect("one"), 1);
        assert_eq!(limit(MAX_BRIEFED_PAIRS).expect("max"), MAX_BRIEFED_PAIRS);
    }
}
