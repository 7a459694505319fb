//! `ListSessions`: sessions whose last activity is in `[from, to)`, newest first, with the
//! same figures as the tree's summary, keyset-paged.
//!
//! - Defaults as for the usage query (`to` = now, `from` = 30 days before); filters `project`,
//!   `agent`, `hostId` (a session counts for every host that reported it).
//! - Order: last activity, then agent, then session id, all descending. The cursor is that
//!   triple of the page's last row, base64url JSON; anything else is `invalid_input` (400).
//! - `limit` 1..200, default 50; `nextCursor` only when a further row exists.
//! - Each session summarised by [`crate::summaries`], as `SessionFigures` does.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::store::db_error;
use crate::summaries::{session_row, summarise};

/// Where a page starts: after this row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    pub t: DateTime<Utc>,
    pub a: String,
    pub s: String,
}

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    pub fn decode(text: &str) -> Result<Cursor, ApiError> {
        let bad = || ApiError::invalid_input("cursor is not one this listing issued");
        if text.len() > 2048 {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad())?;
        serde_json::from_slice(&bytes).map_err(|_| bad())
    }
}

/// The listing's filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub host_id: Option<String>,
    pub limit: u32,
    pub after: Option<Cursor>,
}

/// `limit`: 1..200, default 50.
pub fn limit(value: Option<u32>) -> Result<u32, ApiError> {
    match value {
        None => Ok(50),
        Some(limit @ 1..=200) => Ok(limit),
        Some(_) => Err(ApiError::invalid_input("limit must be 1 to 200")),
    }
}

pub async fn list(
    pool: &PgPool,
    tenant_id: Uuid,
    filter: &Filter,
) -> Result<proto::ListSessionsResponse, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    let (after_t, after_a, after_s) = match &filter.after {
        Some(cursor) => (
            Some(cursor.t),
            Some(cursor.a.clone()),
            Some(cursor.s.clone()),
        ),
        None => (None, None, None),
    };
    let rows = sqlx::query(
        "SELECT agent, session_id, project_slug, host_ids, client_versions, output_under_reported, \
           first_activity_at, last_activity_at \
         FROM usage.sessions \
         WHERE tenant_id = $1 AND last_activity_at >= $2 AND last_activity_at < $3 \
           AND ($4::text IS NULL OR project_slug = $4) AND ($5::text IS NULL OR agent = $5) \
           AND ($6::text IS NULL OR $6 = ANY(host_ids)) \
           AND ($7::timestamptz IS NULL OR (last_activity_at, agent, session_id) < ($7, $8, $9)) \
         ORDER BY last_activity_at DESC, agent DESC, session_id DESC LIMIT $10",
    )
    .bind(tenant_id)
    .bind(filter.from)
    .bind(filter.to)
    .bind(&filter.project)
    .bind(&filter.agent)
    .bind(&filter.host_id)
    .bind(after_t)
    .bind(after_a)
    .bind(after_s)
    .bind(i64::from(filter.limit) + 1)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    let mut sessions = rows
        .iter()
        .map(session_row)
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(db_error)?;
    let more = sessions.len() > filter.limit as usize;
    sessions.truncate(filter.limit as usize);
    let summaries = summarise(&mut tx, tenant_id, &sessions).await?;
    tx.commit().await.map_err(db_error)?;
    let next_cursor = more.then(|| sessions.last()).flatten().and_then(|last| {
        last.last_activity_at.map(|t| {
            Cursor {
                t,
                a: last.agent.clone(),
                s: last.session_id.clone(),
            }
            .encode()
        })
    });
    Ok(proto::ListSessionsResponse {
        sessions: summaries,
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_anything_else_is_refused() {
        let cursor = Cursor {
            t: "2026-03-01T10:00:00.123Z".parse().expect("instant"),
            a: "claude-code".to_string(),
            s: "s-1".to_string(),
        };
        assert_eq!(
            Cursor::decode(&cursor.encode()).expect("round trip"),
            cursor
        );
        for bad in ["", "!!!", "e30", "bm90IGpzb24", &"A".repeat(3000)] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
        assert_eq!(limit(None).expect("default"), 50);
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(201)).is_err());
        assert_eq!(limit(Some(200)).expect("max"), 200);
    }
}
