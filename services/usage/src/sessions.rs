//! `ListSessions`: sessions whose last activity is in `[from, to)`, newest first, with the
//! same figures as the tree's summary, keyset-paged.
//!
//! - Defaults as for the usage query (`to` = now, `from` = 30 days before); filters `project`,
//!   `agent`, `hostId` (a session counts for every host that reported it), `member` (likewise
//!   for every member; `unattributed` selects the sessions no member reported, only keys
//!   without one).
//! - Order: last activity, then agent, then session id, all descending. The cursor is that
//!   triple of the page's last row, base64url JSON; anything else is `invalid_input` (400).
//! - `limit` 1..200, default 50; `nextCursor` only when a further row exists.
//! - Each session summarised by [`crate::summaries`], as `SessionFigures` does.
//! - `order = FIRST_ACTIVITY` orders and bounds by the session's first activity instead: the
//!   console merges this with the registry's newest-opened-first list into one list of
//!   sessions. There `from` absent means no lower bound and the span is not limited: a keyset
//!   page costs the same however far back it reaches. A cursor carries the order it was issued
//!   for and is refused under the other.
//! - Every row carries `position`, the cursor that continues after it, so a merged page that
//!   stops part-way through this one resumes exactly there.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::member::{self, UNATTRIBUTED};
use baton_proto::usage::v1 as proto;

use crate::store::db_error;
use crate::summaries::summarise;
use crate::tree::{SessionRow, select_session_rows};

/// Where a page starts: after this row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    pub t: DateTime<Utc>,
    pub a: String,
    pub s: String,
    /// Issued by a first-activity page (absent in last-activity cursors).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub f: bool,
}

/// Which instant orders a page and bounds its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    #[default]
    LastActivity,
    FirstActivity,
}

impl Order {
    pub fn of(value: i32) -> Result<Order, ApiError> {
        match proto::SessionOrder::try_from(value) {
            Ok(proto::SessionOrder::LastActivity) => Ok(Order::LastActivity),
            Ok(proto::SessionOrder::FirstActivity) => Ok(Order::FirstActivity),
            Err(_) => Err(ApiError::invalid_input(
                "order must be LAST_ACTIVITY or FIRST_ACTIVITY",
            )),
        }
    }
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

/// Whose sessions a page lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberFilter {
    /// Sessions this member reported (perhaps among others).
    Member(String),
    /// Sessions no member reported (only keys without one did).
    Unattributed,
}

impl MemberFilter {
    /// A member name, or the reserved word `unattributed`.
    pub fn parse(text: &str) -> Result<MemberFilter, ApiError> {
        if text == UNATTRIBUTED {
            return Ok(MemberFilter::Unattributed);
        }
        member::member(text).map(MemberFilter::Member)
    }

    /// As the statements bind it: `""` (never a member) for unattributed.
    fn bound(&self) -> &str {
        match self {
            MemberFilter::Member(name) => name,
            MemberFilter::Unattributed => "",
        }
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
    pub member: Option<MemberFilter>,
    /// Only sessions flagged as running away now.
    pub runaway: bool,
    pub limit: u32,
    pub after: Option<Cursor>,
    pub order: Order,
}

/// The cursor after `row` in `order`, when the row has that instant.
fn position_of(order: Order, row: &proto::SessionSummary) -> Option<Cursor> {
    let instant = match order {
        Order::LastActivity => row.last_activity_at.as_ref(),
        Order::FirstActivity => row.first_activity_at.as_ref(),
    };
    Some(Cursor {
        t: instant.and_then(baton_kit::clock::from_timestamp)?,
        a: row.agent.clone(),
        s: row.session_id.clone(),
        f: order == Order::FirstActivity,
    })
}

/// The window `[from, to)` of a page in `order`: the usage query's rule for last activity; for
/// first activity, an absent bound is open (the epoch, the year 9999) and any span is allowed.
pub fn window(
    order: Order,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    match order {
        Order::LastActivity => crate::query::range(from, to, now),
        Order::FirstActivity => {
            let from = from.unwrap_or(DateTime::UNIX_EPOCH);
            let to = to.unwrap_or_else(|| {
                DateTime::from_timestamp(253_402_300_799, 0).unwrap_or(DateTime::UNIX_EPOCH)
            });
            if from >= to {
                return Err(ApiError::invalid_input("from must be before to"));
            }
            Ok((from, to))
        }
    }
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
        Some(cursor) if cursor.f != (filter.order == Order::FirstActivity) => {
            return Err(ApiError::invalid_input(
                "cursor was issued for the other order",
            ));
        }
        Some(cursor) => (
            Some(cursor.t),
            Some(cursor.a.clone()),
            Some(cursor.s.clone()),
        ),
        None => (None, None, None),
    };
    let member = filter.member.as_ref().map(MemberFilter::bound);
    let rows = i64::from(filter.limit) + 1;
    // The same filters and keyset in each order, on the order's instant (`$instant`, a column
    // name as a string literal).
    macro_rules! page {
        ($instant:literal) => {
            select_session_rows!(
                "FROM usage.sessions WHERE tenant_id = $1 AND "
                    + $instant
                    + " >= $2 AND "
                    + $instant
                    + " < $3 \
                   AND ($4::text IS NULL OR project_slug = $4) \
                   AND ($5::text IS NULL OR agent = $5) \
                   AND ($6::text IS NULL OR $6 = ANY(host_ids)) \
                   AND ($11::text IS NULL OR CASE WHEN $11 = '' THEN cardinality(members) = 0 \
                     ELSE $11 = ANY(members) END) \
                   AND (NOT $12 OR EXISTS (SELECT 1 FROM usage.runaway_episodes e \
                     WHERE e.tenant_id = $1 AND e.agent = sessions.agent \
                       AND e.session_id = sessions.session_id AND e.ended_at IS NULL)) \
                   AND ($7::timestamptz IS NULL OR ("
                    + $instant
                    + ", agent, session_id) < ($7, $8, $9)) ORDER BY "
                    + $instant
                    + " DESC, agent DESC, session_id DESC LIMIT $10",
                tenant_id,
                filter.from,
                filter.to,
                filter.project,
                filter.agent,
                filter.host_id,
                after_t,
                after_a,
                after_s,
                rows,
                member,
                filter.runaway,
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?
        };
    }
    let mut sessions: Vec<SessionRow> = match filter.order {
        Order::LastActivity => page!("last_activity_at"),
        Order::FirstActivity => page!("first_activity_at"),
    };
    let more = sessions.len() > filter.limit as usize;
    sessions.truncate(filter.limit as usize);
    let mut summaries = summarise(&mut tx, tenant_id, &sessions).await?;
    tx.commit().await.map_err(db_error)?;
    for summary in &mut summaries {
        summary.position = position_of(filter.order, summary)
            .map(|cursor| cursor.encode())
            .unwrap_or_default();
    }
    let next_cursor = if more {
        summaries.last().map(|last| last.position.clone())
    } else {
        None
    };
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
            f: false,
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
