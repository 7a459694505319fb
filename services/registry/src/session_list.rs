//! ListSessions' decisions (the console's session list): the limit rule, the keyset bounds a
//! query's filters and cursor make, and how a scanned run of rows becomes a page.
//!
//! A state filter cannot be pushed into SQL (the state is derived from episodes at `now`), so it
//! is applied to a bounded scan of [`SCAN_FACTOR`] × limit rows: a page may hold fewer than
//! `limit` sessions, or none, while `next_cursor` still points past the last scanned row.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::cursor::Cursor;
use crate::liveness::State;

/// Sessions a page holds when the caller asks for 0.
pub const DEFAULT_LIMIT: u32 = 50;
/// Most sessions a page holds.
pub const MAX_LIMIT: u32 = 100;
/// With a state filter, rows scanned per page: this many times the limit.
pub const SCAN_FACTOR: usize = 5;

/// A validated ListSessions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    pub project: Option<String>,
    pub agent: Option<String>,
    /// Only sessions in this derived state.
    pub state: Option<State>,
    pub opened_from: Option<DateTime<Utc>>,
    pub opened_to: Option<DateTime<Utc>>,
    /// A member's sessions ([`baton_kit::member::UNATTRIBUTED`]: no member's).
    pub member: Option<String>,
    pub limit: u32,
    pub cursor: Option<Cursor>,
}

/// The page size: 0 means [`DEFAULT_LIMIT`], above [`MAX_LIMIT`] is refused.
pub fn limit(requested: u32) -> Result<u32, ApiError> {
    match requested {
        0 => Ok(DEFAULT_LIMIT),
        1..=MAX_LIMIT => Ok(requested),
        _ => Err(ApiError::invalid_input(format!(
            "limit must be 0 to {MAX_LIMIT} (0 means {DEFAULT_LIMIT})"
        ))),
    }
}

/// The opened window must not run backwards.
pub fn window(
    opened_from: Option<DateTime<Utc>>,
    opened_to: Option<DateTime<Utc>>,
) -> Result<(), ApiError> {
    match (opened_from, opened_to) {
        (Some(from), Some(to)) if from > to => Err(ApiError::invalid_input(
            "openedFrom must not be after openedTo",
        )),
        _ => Ok(()),
    }
}

/// Bounds every query binds, so the keyset condition is always the same index range: no row
/// is opened before 1970 or after 9999, and Postgres holds both ends.
fn earliest() -> DateTime<Utc> {
    DateTime::UNIX_EPOCH
}

fn latest() -> DateTime<Utc> {
    DateTime::from_timestamp(253_402_300_799, 0).unwrap_or(DateTime::UNIX_EPOCH)
}

/// The scan's range on `(opened_at, id)`, newest first: rows with `opened_at >= lower` and
/// `(opened_at, id) < upper`. The cursor and `opened_to` both cap `upper`: `opened_at < to`
/// is `(opened_at, id) < (to, nil)` because no id sorts below the nil uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub lower: DateTime<Utc>,
    pub upper: Cursor,
}

/// The bounds of one page of `query`.
pub fn bounds(query: &SessionQuery) -> Bounds {
    let mut upper = Cursor {
        opened_at: latest(),
        id: Uuid::max(),
    };
    let caps = [
        query.cursor,
        query.opened_to.map(|to| Cursor {
            opened_at: to,
            id: Uuid::nil(),
        }),
    ];
    for cap in caps.into_iter().flatten() {
        if (cap.opened_at, cap.id) < (upper.opened_at, upper.id) {
            upper = cap;
        }
    }
    Bounds {
        lower: query
            .opened_from
            .map_or(earliest(), |from| from.max(earliest())),
        upper,
    }
}

/// Rows one page may scan: the limit, or [`SCAN_FACTOR`] times it under a state filter.
pub fn scan_bound(query: &SessionQuery) -> usize {
    let limit = query.limit as usize;
    if query.state.is_some() {
        limit * SCAN_FACTOR
    } else {
        limit
    }
}

/// Rows to read: one past the scan bound, to tell whether anything follows it.
pub fn rows_to_read(query: &SessionQuery) -> i64 {
    i64::try_from(scan_bound(query) + 1).unwrap_or(i64::MAX)
}

/// Walks `rows` (newest first, at most one past `scan_bound`): keeps those `keep` accepts until
/// `limit` are kept or `scan_bound` are scanned, and answers the cursor of the last scanned row
/// when any row follows it.
pub fn page<T>(
    rows: Vec<T>,
    scan_bound: usize,
    limit: usize,
    position: impl Fn(&T) -> Cursor,
    keep: impl Fn(&T) -> bool,
) -> (Vec<T>, Option<Cursor>) {
    let total = rows.len();
    let mut kept = Vec::new();
    let mut scanned = 0;
    let mut last = None;
    for row in rows.into_iter().take(scan_bound) {
        scanned += 1;
        last = Some(position(&row));
        if keep(&row) {
            kept.push(row);
            if kept.len() >= limit {
                break;
            }
        }
    }
    let next = if scanned < total { last } else { None };
    (kept, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_772_352_000 + seconds, 0).expect("valid")
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn cursor(seconds: i64, n: u128) -> Cursor {
        Cursor {
            opened_at: at(seconds),
            id: id(n),
        }
    }

    fn query() -> SessionQuery {
        SessionQuery {
            project: None,
            agent: None,
            state: None,
            opened_from: None,
            opened_to: None,
            member: None,
            limit: 3,
            cursor: None,
        }
    }

    #[test]
    fn limits() {
        let table = [
            (0, Some(50)),
            (1, Some(1)),
            (100, Some(100)),
            (101, None),
            (u32::MAX, None),
        ];
        for (requested, expected) in table {
            assert_eq!(limit(requested).ok(), expected, "{requested}");
        }
    }

    #[test]
    fn a_backwards_window_is_refused() {
        assert!(window(Some(at(10)), Some(at(5))).is_err());
        assert!(window(Some(at(5)), Some(at(5))).is_ok(), "empty, not wrong");
        assert!(window(Some(at(5)), None).is_ok());
        assert!(window(None, Some(at(5))).is_ok());
    }

    #[test]
    fn bounds_take_the_tighter_of_cursor_and_opened_to() {
        let open_ended = bounds(&query());
        assert_eq!(open_ended.lower, DateTime::UNIX_EPOCH);
        assert_eq!(open_ended.upper.id, Uuid::max());
        let table: [(&str, Option<Cursor>, Option<i64>, Cursor); 4] = [
            ("cursor only", Some(cursor(50, 7)), None, cursor(50, 7)),
            (
                "opened_to only",
                None,
                Some(40),
                Cursor {
                    opened_at: at(40),
                    id: Uuid::nil(),
                },
            ),
            (
                "cursor older than opened_to",
                Some(cursor(30, 7)),
                Some(40),
                cursor(30, 7),
            ),
            (
                "cursor at opened_to: to excludes the instant",
                Some(cursor(40, 7)),
                Some(40),
                Cursor {
                    opened_at: at(40),
                    id: Uuid::nil(),
                },
            ),
        ];
        for (name, cursor, to, expected) in table {
            let query = SessionQuery {
                cursor,
                opened_to: to.map(at),
                ..query()
            };
            assert_eq!(bounds(&query).upper, expected, "{name}");
        }
        let from = SessionQuery {
            opened_from: Some(at(10)),
            ..query()
        };
        assert_eq!(bounds(&from).lower, at(10));
    }

    #[test]
    fn a_state_filter_widens_the_scan() {
        assert_eq!(scan_bound(&query()), 3);
        assert_eq!(rows_to_read(&query()), 4);
        let filtered = SessionQuery {
            state: Some(State::Live),
            ..query()
        };
        assert_eq!(scan_bound(&filtered), 15);
        assert_eq!(rows_to_read(&filtered), 16);
    }

    /// Rows are (seconds, matches); positions are (seconds, id = seconds).
    fn walk(rows: &[(i64, bool)], scan: usize, limit: usize) -> (Vec<i64>, Option<i64>) {
        let (kept, next) = page(
            rows.to_vec(),
            scan,
            limit,
            |row| cursor(row.0, row.0 as u128),
            |row| row.1,
        );
        (
            kept.into_iter().map(|row| row.0).collect(),
            next.map(|cursor| cursor.opened_at.timestamp() - 1_772_352_000),
        )
    }

    #[test]
    fn pages() {
        type Case<'a> = (
            &'a str,
            Vec<(i64, bool)>,
            usize,
            usize,
            Vec<i64>,
            Option<i64>,
        );
        let table: Vec<Case<'_>> = vec![
            ("empty", vec![], 3, 3, vec![], None),
            (
                "last page, short",
                vec![(9, true), (8, true)],
                3,
                3,
                vec![9, 8],
                None,
            ),
            (
                "last page, exactly full",
                vec![(9, true), (8, true), (7, true)],
                3,
                3,
                vec![9, 8, 7],
                None,
            ),
            (
                "full page and more follow",
                vec![(9, true), (8, true), (7, true), (6, true)],
                3,
                3,
                vec![9, 8, 7],
                Some(7),
            ),
            (
                "filter fills the page early: cursor at the last kept",
                vec![(9, true), (8, false), (7, true), (6, true), (5, true)],
                6,
                3,
                vec![9, 7, 6],
                Some(6),
            ),
            (
                "filter runs out of scan: sparse page, cursor at the last scanned",
                vec![(9, false), (8, true), (7, false), (6, false), (5, true)],
                4,
                3,
                vec![8],
                Some(6),
            ),
            (
                "nothing matched in the scan, more follow",
                vec![(9, false), (8, false), (7, false)],
                2,
                3,
                vec![],
                Some(8),
            ),
            (
                "nothing matched, nothing follows",
                vec![(9, false), (8, false)],
                2,
                3,
                vec![],
                None,
            ),
        ];
        for (name, rows, scan, limit, kept, next) in table {
            assert_eq!(walk(&rows, scan, limit), (kept, next), "{name}");
        }
    }
}
