//! The budget rules, pure: which period an instant falls in (calendar month or day in the
//! budget's zone), which thresholds a period's spend has newly crossed, and the period's
//! forecast. Money is kept in integers: limits in micro-dollars, spend in the rollups' 10⁻¹⁵ USD.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// 10⁻¹⁵ USD per micro-dollar.
const FEMTOS_PER_MICRO: i128 = 1_000_000_000;

/// A budget's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Month,
    Day,
}

impl Period {
    pub fn parse(text: &str) -> Option<Period> {
        match text {
            "month" => Some(Period::Month),
            "day" => Some(Period::Day),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Month => "month",
            Period::Day => "day",
        }
    }
}

/// One period: its first local day (the crossing ledger's key) and its UTC bounds `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    pub first_day: NaiveDate,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

/// The first instant of a local date (the first valid one after a gap).
fn midnight(zone: &Tz, date: NaiveDate) -> DateTime<Utc> {
    let mut local = date.and_hms_opt(0, 0, 0).unwrap_or_default();
    for _ in 0..96 {
        if let Some(instant) = zone.from_local_datetime(&local).earliest() {
            return instant.with_timezone(&Utc);
        }
        local += Duration::minutes(15);
    }
    Utc.from_utc_datetime(&local)
}

/// The period of `period` kind containing `at`, cut in `zone`.
pub fn bounds(period: Period, zone: &Tz, at: DateTime<Utc>) -> Bounds {
    let today = at.with_timezone(zone).date_naive();
    let (first_day, next) = match period {
        Period::Day => (today, today.succ_opt().unwrap_or(today)),
        Period::Month => {
            let first = today.with_day(1).unwrap_or(today);
            let next = if first.month() == 12 {
                NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
            } else {
                NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
            };
            (first, next.unwrap_or(first))
        }
    };
    Bounds {
        first_day,
        start: midnight(zone, first_day),
        end: midnight(zone, next),
    }
}

/// The thresholds (percent) that `spent` (10⁻¹⁵ USD) reaches against `limit_micros` and that are
/// not in `already`, smallest first. A threshold is reached at exactly its share of the limit.
pub fn newly_crossed(
    spent: i128,
    limit_micros: i64,
    thresholds: &[u32],
    already: &[u32],
) -> Vec<u32> {
    let limit = i128::from(limit_micros) * FEMTOS_PER_MICRO;
    let mut crossed: Vec<u32> = thresholds
        .iter()
        .copied()
        .filter(|threshold| !already.contains(threshold))
        .filter(|threshold| spent * 100 >= limit * i128::from(*threshold))
        .collect();
    crossed.sort_unstable();
    crossed.dedup();
    crossed
}

/// The period's spend if it goes on at the pace so far: `spent × length ÷ elapsed`; the spend
/// itself before any time has elapsed or once the period is over.
pub fn forecast(spent_usd: f64, bounds: &Bounds, now: DateTime<Utc>) -> f64 {
    let length = (bounds.end - bounds.start).num_seconds() as f64;
    let elapsed = (now.min(bounds.end) - bounds.start).num_seconds() as f64;
    if elapsed <= 0.0 || elapsed >= length {
        return spent_usd;
    }
    spent_usd * length / elapsed
}

/// 10⁻¹⁵ USD as dollars.
pub fn usd(femtos: i128) -> f64 {
    femtos as f64 / 1e15
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("instant")
    }

    #[test]
    fn periods_are_calendar_months_and_days_in_the_zone() {
        let tokyo: Tz = "Asia/Tokyo".parse().expect("zone");
        let berlin: Tz = "Europe/Berlin".parse().expect("zone");
        let cases = [
            (
                Period::Month,
                Tz::UTC,
                "2026-12-31T23:59:59Z",
                "2026-12-01",
                "2026-12-01T00:00:00Z",
                "2027-01-01T00:00:00Z",
            ),
            // Already January in Tokyo.
            (
                Period::Month,
                tokyo,
                "2026-12-31T15:00:00Z",
                "2027-01-01",
                "2026-12-31T15:00:00Z",
                "2027-01-31T15:00:00Z",
            ),
            (
                Period::Day,
                tokyo,
                "2026-03-01T14:59:59Z",
                "2026-03-01",
                "2026-02-28T15:00:00Z",
                "2026-03-01T15:00:00Z",
            ),
            // 29 March 2026 is 23 hours long in Berlin.
            (
                Period::Day,
                berlin,
                "2026-03-29T12:00:00Z",
                "2026-03-29",
                "2026-03-28T23:00:00Z",
                "2026-03-29T22:00:00Z",
            ),
            (
                Period::Month,
                berlin,
                "2026-02-15T00:00:00Z",
                "2026-02-01",
                "2026-01-31T23:00:00Z",
                "2026-02-28T23:00:00Z",
            ),
        ];
        for (period, zone, now, first, start, end) in cases {
            let cut = bounds(period, &zone, at(now));
            assert_eq!(cut.first_day.to_string(), first, "{period:?} {zone} {now}");
            assert_eq!(
                (cut.start, cut.end),
                (at(start), at(end)),
                "{period:?} {zone} {now}"
            );
        }
    }

    #[test]
    fn each_threshold_is_crossed_once_at_exactly_its_share() {
        let dollars = |usd: i128| usd * 1_000_000_000_000_000;
        let limit = 10_000_000; // $10
        let thresholds = [50, 80, 100];
        let cases: [(i128, &[u32], &[u32]); 7] = [
            (dollars(4), &[], &[]),
            (dollars(5), &[], &[50]),
            (dollars(5) - 1, &[], &[]),
            (dollars(9), &[50], &[80]),
            (dollars(12), &[], &[50, 80, 100]),
            (dollars(12), &[50, 80, 100], &[]),
            (dollars(10), &[80], &[50, 100]),
        ];
        for (spent, already, expected) in cases {
            assert_eq!(
                newly_crossed(spent, limit, &thresholds, already),
                expected,
                "{spent} with {already:?}"
            );
        }
    }

    #[test]
    fn the_forecast_extrapolates_the_pace_so_far() {
        let cut = bounds(Period::Day, &Tz::UTC, at("2026-03-01T06:00:00Z"));
        assert_eq!(forecast(2.0, &cut, at("2026-03-01T06:00:00Z")), 8.0);
        assert_eq!(forecast(2.0, &cut, at("2026-03-01T00:00:00Z")), 2.0);
        assert_eq!(forecast(2.0, &cut, at("2026-03-02T06:00:00Z")), 2.0);
    }
}
