//! Backing off when the server says "not now": 429, any 5xx, or no answer at all.
//!
//! Rules:
//! * The n-th consecutive failure waits `base × 2^(n-1)`, capped, with "equal jitter": a
//!   uniformly random point in the upper half of that, so clients refused together do not come
//!   back together, and none comes back sooner than half the step.
//! * A `Retry-After` (delta-seconds, or an HTTP-date) is a floor: never retry before it.
//! * Everything is capped by the caller's bound (the sidecar keeps its episode inside the
//!   liveness window; the drain has its patience).

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// True for an answer worth retrying later: rate limited or a server-side failure.
pub fn retryable(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// A `Retry-After` value as a wait from `now`: delta-seconds, or an HTTP-date (IMF-fixdate,
/// and the RFC 2822 forms). A date in the past is no wait; anything unparseable is ignored.
pub fn retry_after(header: &str, now: SystemTime) -> Option<Duration> {
    let header = header.trim();
    if let Ok(seconds) = header.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(header).ok()?;
    let at = SystemTime::UNIX_EPOCH
        + Duration::from_millis(u64::try_from(date.timestamp_millis()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The wait before retry number `failures` (1 = after the first failure), with `jitter` in
/// `[0, 1)`, floored by `retry_after` and capped at `cap`.
pub fn delay(
    failures: u32,
    base: Duration,
    cap: Duration,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Duration {
    let step = base
        .saturating_mul(1u32 << failures.saturating_sub(1).min(20))
        .min(cap);
    let jittered = step.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
    jittered.max(retry_after.unwrap_or(Duration::ZERO)).min(cap)
}

/// A fresh random number in `[0, 1)` (std's per-process random hash keys; no crate needed for
/// jitter).
pub fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(crate::clock::unix_millis());
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        // Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let cases = [
            ("120", Some(Duration::from_secs(120))),
            (" 0 ", Some(Duration::ZERO)),
            (
                "Sun, 06 Nov 1994 08:49:47 GMT",
                Some(Duration::from_secs(10)),
            ),
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(Duration::ZERO)),
            ("Sat, 05 Nov 1994 08:49:37 GMT", Some(Duration::ZERO)),
            ("-5", None),
            ("soon", None),
            ("", None),
        ];
        for (header, expected) in cases {
            assert_eq!(retry_after(header, now), expected, "{header:?}");
        }
    }

    #[test]
    fn the_schedule_doubles_with_jitter_floored_by_retry_after_and_capped() {
        let cap = Duration::from_secs(60);
        let cases = [
            (
                "first failure, least jitter",
                1,
                None,
                0.0,
                Duration::from_millis(500),
            ),
            (
                "first failure, half jitter",
                1,
                None,
                0.5,
                Duration::from_millis(750),
            ),
            (
                "third failure doubles twice",
                3,
                None,
                0.0,
                Duration::from_secs(2),
            ),
            ("capped", 12, None, 0.5, Duration::from_secs(45)),
            (
                "Retry-After is a floor",
                1,
                Some(Duration::from_secs(7)),
                0.5,
                Duration::from_secs(7),
            ),
            (
                "a short Retry-After does not shorten the step",
                4,
                Some(S),
                0.0,
                Duration::from_secs(4),
            ),
            (
                "the cap bounds even Retry-After",
                1,
                Some(Duration::from_secs(3600)),
                0.0,
                cap,
            ),
            (
                "zero failures waits like the first",
                0,
                None,
                0.0,
                Duration::from_millis(500),
            ),
        ];
        for (name, failures, after, jitter, expected) in cases {
            assert_eq!(delay(failures, S, cap, after, jitter), expected, "{name}");
        }
    }

    #[test]
    fn retryable_statuses() {
        for (status, expected) in [
            (429, true),
            (500, true),
            (503, true),
            (599, true),
            (400, false),
            (404, false),
            (200, false),
        ] {
            assert_eq!(retryable(status), expected, "{status}");
        }
        let draws: Vec<f64> = (0..50).map(|_| jitter()).collect();
        assert!(draws.iter().all(|draw| (0.0..1.0).contains(draw)));
        assert!(draws.iter().any(|draw| *draw != draws[0]), "jitter varies");
    }
}
