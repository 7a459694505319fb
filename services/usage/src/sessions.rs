//! `ListSessions`: sessions whose last activity is in `[from, to)`, newest first, with the
//! same figures as the tree's summary, keyset-paged.
//!
//! - Defaults as for the usage query (`to` = now, `from` = 30 days before); filters `project`,
//!   `agent`, `hostId` (a session counts for every host that reported it).
//! - Order: last activity, then agent, then session id, all descending. The cursor is that
//!   triple of the page's last row, base64url JSON; anything else is `invalid_input` (400).
//! - `limit` 1..200, default 50; `nextCursor` only when a further row exists.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::figures::Sums;
use crate::store::db_error;
use crate::tree::{SessionRow, summary};

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
        .map(|row| {
            Ok(SessionRow {
                agent: row.try_get("agent")?,
                session_id: row.try_get("session_id")?,
                project_slug: row.try_get("project_slug")?,
                host_ids: row.try_get("host_ids")?,
                client_versions: row.try_get("client_versions")?,
                output_under_reported: row.try_get("output_under_reported")?,
                first_activity_at: row.try_get("first_activity_at")?,
                last_activity_at: row.try_get("last_activity_at")?,
                ..SessionRow::default()
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(db_error)?;
    let more = sessions.len() > filter.limit as usize;
    sessions.truncate(filter.limit as usize);
    let (agents, ids): (Vec<String>, Vec<String>) = sessions
        .iter()
        .map(|session| (session.agent.clone(), session.session_id.clone()))
        .unzip();
    type Figure = (
        String,
        String,
        String,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        Option<String>,
        i64,
    );
    let figures: Vec<Figure> = sqlx::query_as(
        "SELECT t.agent, t.session_id, coalesce(t.model_key, ''), sum(t.input)::int8, \
           sum(t.output)::int8, sum(t.cache_read)::int8, sum(t.cache_write_5m)::int8, \
           sum(t.cache_write_1h)::int8, count(*)::int8, sum(t.cost)::text, \
           sum(CASE WHEN t.priced THEN 0 ELSE t.input + t.output + t.cache_read \
             + t.cache_write_5m + t.cache_write_1h END)::int8 \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.token_usage t ON t.tenant_id = $1 AND t.agent = k.agent \
           AND t.session_id = k.session_id \
         GROUP BY 1, 2, 3",
    )
    .bind(tenant_id)
    .bind(&agents)
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    let counts: Vec<(String, String, i64, bool)> = sqlx::query_as(
        "SELECT a.agent, a.session_id, count(*)::int8, bool_or(a.agent_id = '') \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         JOIN usage.agents a ON a.tenant_id = $1 AND a.agent = k.agent \
           AND a.session_id = k.session_id \
         GROUP BY 1, 2",
    )
    .bind(tenant_id)
    .bind(&agents)
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    let mut sums: HashMap<(String, String), Sums> = HashMap::new();
    for (agent, session, model, i, o, cr, c5, c1, n, cost, unpriced) in figures {
        let cost = cost.and_then(|text| text.parse::<i128>().ok()).unwrap_or(0);
        sums.entry((agent, session)).or_default().add(
            &model,
            [i, o, cr, c5, c1],
            n,
            cost,
            unpriced,
        );
    }
    // The main agent is counted whether or not its row arrived.
    let agent_counts: HashMap<(String, String), u32> = counts
        .into_iter()
        .map(|(agent, session, count, has_main)| {
            ((agent, session), count as u32 + u32::from(!has_main))
        })
        .collect();
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
        sessions: sessions
            .iter()
            .map(|session| {
                let key = (session.agent.clone(), session.session_id.clone());
                summary(
                    session,
                    agent_counts.get(&key).copied().unwrap_or(1),
                    &sums.get(&key).cloned().unwrap_or_default(),
                )
            })
            .collect(),
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
