//! The typed provenance read (CONTRACT section 7, table I) and the id listing triage and the
//! closer take their watermarks from.
//!
//! A run's visible events are its first 500 by id (uuidv7 order); a run with more is
//! `truncated`, and pages never go past the 500th event. Only events whose payload names the run
//! appear: unattributed writes never do.

use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;

use crate::service::Provenance;
use crate::store::events::{self, RunEventRow};

/// The per-run event ceiling (MAX_SESSION_EVENT_IDS).
pub const MAX_RUN_EVENTS: usize = 500;
/// Page size bounds (MAX_SESSION_EVENTS_LIMIT / DEFAULT).
pub const MAX_LIMIT: u32 = 100;
pub const DEFAULT_LIMIT: u32 = 50;

/// How a fetched page reads (table I): `fetched` holds the ids after the cursor within the
/// first 500, at most `limit + 1` of them; `seen` counts the run's ids up to 501.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageShape {
    /// How many of `fetched` to show.
    pub shown: usize,
    /// The last shown id, when more visible events follow it.
    pub next_cursor: Option<Uuid>,
    /// The run has more than 500 events.
    pub truncated: bool,
}

/// Table I as a pure function.
pub fn page_shape(seen: usize, fetched: &[Uuid], limit: usize) -> PageShape {
    let shown = fetched.len().min(limit);
    let next_cursor = (fetched.len() > limit)
        .then(|| fetched.get(shown.wrapping_sub(1)).copied())
        .flatten();
    PageShape {
        shown,
        next_cursor,
        truncated: seen > MAX_RUN_EVENTS,
    }
}

/// A page of typed events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsPage {
    pub items: Vec<RunEventRow>,
    pub next_cursor: Option<Uuid>,
    pub truncated: bool,
}

impl Provenance {
    /// One page of a run's events; NOT_FOUND when the run is not the tenant's.
    ///
    /// Ownership costs registry a call only when the run has no visible event: an event of this
    /// tenant can only carry a run id that registry attached for this tenant (or the closer
    /// pre-resolved from it), so any event proves the run is the tenant's.
    pub async fn run_events(
        &self,
        call: &CallContext,
        run_id: Uuid,
        cursor: Option<Uuid>,
        limit: u32,
    ) -> Result<EventsPage, ApiError> {
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid_input("limit must be 1 to 100"));
        }
        let (seen, mut rows) =
            events::run_events_page(&self.pool, call.tenant_id, run_id, cursor, limit).await?;
        if seen == 0 {
            self.link
                .require_run(&call.onward(&self.clock), run_id)
                .await?;
        }
        let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
        let shape = page_shape(seen, &ids, limit as usize);
        rows.truncate(shape.shown);
        Ok(EventsPage {
            items: rows,
            next_cursor: shape.next_cursor,
            truncated: shape.truncated,
        })
    }

    /// The run's first `ceiling` event ids and whether it has more. The caller has already
    /// established the run is the tenant's.
    pub async fn run_event_ids(
        &self,
        call: &CallContext,
        run_id: Uuid,
        ceiling: u32,
    ) -> Result<(Vec<Uuid>, bool), ApiError> {
        if !(1..=MAX_RUN_EVENTS as u32).contains(&ceiling) {
            return Err(ApiError::invalid_input("ceiling must be 1 to 500"));
        }
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let mut ids = events::run_event_ids(
            &mut transaction,
            call.tenant_id,
            run_id,
            i64::from(ceiling) + 1,
        )
        .await?;
        transaction.commit().await?;
        let truncated = ids.len() > ceiling as usize;
        ids.truncate(ceiling as usize);
        Ok((ids, truncated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(count: usize) -> Vec<Uuid> {
        (0..count)
            .map(|index| Uuid::from_u128(index as u128 + 1))
            .collect()
    }

    /// What the database returns for a run of `total` ids after `cursor`: the next `limit + 1`
    /// within the first 500 (the SQL half of table I, restated for the test).
    fn fetch(total: usize, cursor: Option<Uuid>, limit: usize) -> (usize, Vec<Uuid>) {
        let all = ids(total);
        let fetched = all[..total.min(MAX_RUN_EVENTS)]
            .iter()
            .copied()
            .filter(|id| cursor.is_none_or(|cursor| *id > cursor))
            .take(limit + 1)
            .collect();
        (total.min(MAX_RUN_EVENTS + 1), fetched)
    }

    fn walk(total: usize, limit: usize) -> Vec<PageShape> {
        let mut shapes = Vec::new();
        let mut cursor = None;
        loop {
            let (seen, fetched) = fetch(total, cursor, limit);
            let shape = page_shape(seen, &fetched, limit);
            cursor = shape.next_cursor;
            shapes.push(shape);
            if cursor.is_none() {
                return shapes;
            }
        }
    }

    #[test]
    fn table_i() {
        let empty = walk(0, 50);
        assert_eq!(
            empty,
            vec![PageShape {
                shown: 0,
                next_cursor: None,
                truncated: false
            }]
        );

        let five = walk(5, 2);
        assert_eq!(
            five.iter().map(|shape| shape.shown).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        assert_eq!(five[0].next_cursor, Some(Uuid::from_u128(2)));
        assert_eq!(five[2].next_cursor, None, "absent on the last page");
        assert!(five.iter().all(|shape| !shape.truncated));

        let exactly = walk(4, 2);
        assert_eq!(
            exactly.len(),
            2,
            "no empty trailing page when the run ends on a page"
        );

        let flood = walk(501, 100);
        assert_eq!(
            flood.iter().map(|shape| shape.shown).sum::<usize>(),
            500,
            "never past the 500th"
        );
        assert!(
            flood.iter().all(|shape| shape.truncated),
            "truncated on every page"
        );
        assert_eq!(flood.last().and_then(|shape| shape.next_cursor), None);
    }
}
