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

/// One page of ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub ids: Vec<Uuid>,
    /// The last id of the page, when more visible events follow it.
    pub next_cursor: Option<Uuid>,
    pub truncated: bool,
}

/// Table I as a pure function over the run's first ids (sorted, at most ceiling + 1 of them).
pub fn page(first_ids: &[Uuid], cursor: Option<Uuid>, limit: usize) -> Page {
    let truncated = first_ids.len() > MAX_RUN_EVENTS;
    let visible = &first_ids[..first_ids.len().min(MAX_RUN_EVENTS)];
    let remaining: Vec<Uuid> = visible
        .iter()
        .copied()
        .filter(|id| cursor.is_none_or(|cursor| *id > cursor))
        .collect();
    let ids: Vec<Uuid> = remaining.iter().copied().take(limit).collect();
    let next_cursor = (remaining.len() > limit)
        .then(|| ids.last().copied())
        .flatten();
    Page {
        ids,
        next_cursor,
        truncated,
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
        self.link
            .require_run(&call.onward(&self.clock), run_id)
            .await?;
        let mut transaction = begin_tenant(&self.pool, call.tenant_id).await?;
        let first_ids = events::run_event_ids(
            &mut transaction,
            call.tenant_id,
            run_id,
            MAX_RUN_EVENTS as i64 + 1,
        )
        .await?;
        let page = page(&first_ids, cursor, limit as usize);
        let items = if page.ids.is_empty() {
            Vec::new()
        } else {
            events::by_ids(&mut transaction, call.tenant_id, &page.ids).await?
        };
        transaction.commit().await?;
        Ok(EventsPage {
            items,
            next_cursor: page.next_cursor,
            truncated: page.truncated,
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

    #[test]
    fn table_i() {
        let empty = page(&[], None, 50);
        assert_eq!(
            (empty.ids.len(), empty.next_cursor, empty.truncated),
            (0, None, false)
        );

        let five = ids(5);
        let first = page(&five, None, 2);
        assert_eq!(first.ids, five[..2].to_vec());
        assert_eq!(first.next_cursor, Some(five[1]));
        let second = page(&five, first.next_cursor, 2);
        assert_eq!(second.ids, five[2..4].to_vec());
        let last = page(&five, second.next_cursor, 2);
        assert_eq!(last.ids, five[4..].to_vec());
        assert_eq!(last.next_cursor, None, "absent on the last page");

        let exactly = page(&five, None, 5);
        assert_eq!(
            exactly.next_cursor, None,
            "no cursor when the page ends the run"
        );

        let many = ids(501);
        let head = page(&many, None, 100);
        assert!(head.truncated);
        assert_eq!(head.next_cursor, Some(many[99]));
        let tail = page(&many, Some(many[449]), 100);
        assert_eq!(tail.ids, many[450..500].to_vec(), "never past the 500th");
        assert_eq!(tail.next_cursor, None);
        assert!(tail.truncated);
    }

    #[test]
    fn the_cursor_compares_ids_not_positions() {
        let five = ids(5);
        let unknown_cursor = Uuid::from_u128(3);
        assert_eq!(
            page(&five, Some(unknown_cursor), 10).ids,
            five[3..].to_vec()
        );
    }
}
