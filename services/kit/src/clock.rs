//! Time as Baton's decisions see it.
//!
//! Every decision reads "now" from a [`Clock`], never from the database. In production that is
//! the system clock. With `BATON_TEST_CLOCK=1` (DESIGN section 3.1) a request may carry
//! `X-Baton-Test-Now` over HTTP or `x-baton-test-now` over gRPC, and that instant is "now" for
//! the request, so black-box tests drive leases and grace periods without sleeping.
//!
//! Instants are truncated to milliseconds: responses use JavaScript's `toISOString` form, and a
//! stored value must read back exactly as it was answered.

use baton_proto::Timestamp;
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};

use crate::error::ApiError;

/// HTTP header (gateway) and gRPC metadata key (services) carrying a test instant.
pub const TEST_NOW_KEY: &str = "x-baton-test-now";

/// The source of "now" for one process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    test_mode: bool,
}

impl Clock {
    /// The system clock; test instants are ignored.
    pub fn system() -> Clock {
        Clock { test_mode: false }
    }

    /// A clock that honours test instants when `test_mode` is true.
    pub fn new(test_mode: bool) -> Clock {
        Clock { test_mode }
    }

    pub fn test_mode(&self) -> bool {
        self.test_mode
    }

    /// The system time, truncated to milliseconds.
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now().trunc_subsecs(3)
    }

    /// "Now" for a request that may carry a test instant. Without test mode the value is
    /// ignored; with it, a malformed or out-of-range value is the caller's error.
    pub fn now_for(&self, test_now: Option<&str>) -> Result<DateTime<Utc>, ApiError> {
        match (self.test_mode, test_now) {
            (true, Some(text)) => test_instant(text).ok_or_else(|| {
                ApiError::invalid_input(format!(
                    "{TEST_NOW_KEY} is not an RFC 3339 instant in 2000..2100"
                ))
            }),
            _ => Ok(self.now()),
        }
    }
}

/// Earliest test instant accepted (2000-01-01T00:00:00Z, in Unix seconds).
pub const TEST_NOW_EARLIEST_SECONDS: i64 = 946_684_800;
/// First test instant refused (2100-01-01T00:00:00Z): a test clock never leaves this century,
/// so lease arithmetic can never overflow and no stored time reads as year 9999.
pub const TEST_NOW_END_SECONDS: i64 = 4_102_444_800;

/// A test instant: RFC 3339 within `[2000-01-01, 2100-01-01)`.
pub fn test_instant(text: &str) -> Option<DateTime<Utc>> {
    parse_instant(text).filter(|instant| {
        (TEST_NOW_EARLIEST_SECONDS..TEST_NOW_END_SECONDS).contains(&instant.timestamp())
    })
}

/// Parses an RFC 3339 instant, truncated to milliseconds.
pub fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|instant| instant.with_timezone(&Utc).trunc_subsecs(3))
}

/// `Date.prototype.toISOString` form: `YYYY-MM-DDTHH:mm:ss.sssZ`.
pub fn iso(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Converts a protobuf timestamp into an instant (None when out of range).
pub fn from_timestamp(timestamp: &Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(timestamp.seconds, timestamp.nanos.max(0) as u32)
        .map(|instant| instant.trunc_subsecs(3))
}

/// A report window's required start (`field`): present and in range, or INVALID_ARGUMENT.
pub fn required_since(
    field: &str,
    timestamp: Option<&Timestamp>,
) -> Result<DateTime<Utc>, ApiError> {
    timestamp
        .and_then(from_timestamp)
        .ok_or_else(|| ApiError::invalid_input(format!("{field} must be a valid instant")))
}

/// Converts an instant into a protobuf timestamp.
pub fn to_timestamp(instant: DateTime<Utc>) -> Timestamp {
    Timestamp {
        seconds: instant.timestamp(),
        nanos: instant.timestamp_subsec_nanos() as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_matches_javascript_to_iso_string() {
        let instant = parse_instant("2026-11-30T06:22:40.123456+02:00").expect("valid");
        assert_eq!(iso(instant), "2026-11-30T04:22:40.123Z");
        let whole = parse_instant("2026-01-01T00:00:00Z").expect("valid");
        assert_eq!(iso(whole), "2026-01-01T00:00:00.000Z");
    }

    #[test]
    fn test_instants_apply_only_in_test_mode() {
        let header = Some("2030-01-01T00:00:00Z");
        let fixed = parse_instant("2030-01-01T00:00:00Z").expect("valid");
        assert_eq!(Clock::new(true).now_for(header), Ok(fixed));
        assert_ne!(Clock::system().now_for(header), Ok(fixed));
        assert!(Clock::new(true).now_for(Some("yesterday")).is_err());
        assert!(Clock::system().now_for(Some("yesterday")).is_ok());
    }

    #[test]
    fn test_instants_stay_in_range() {
        let table = [
            ("1999-12-31T23:59:59.999Z", false),
            ("2000-01-01T00:00:00Z", true),
            ("2099-12-31T23:59:59.999Z", true),
            ("2100-01-01T00:00:00Z", false),
            ("9999-12-31T23:59:59Z", false),
            ("0001-01-01T00:00:00Z", false),
        ];
        for (text, accepted) in table {
            assert_eq!(test_instant(text).is_some(), accepted, "{text}");
            assert_eq!(
                Clock::new(true).now_for(Some(text)).is_ok(),
                accepted,
                "{text}"
            );
        }
    }

    #[test]
    fn timestamps_round_trip() {
        let instant = parse_instant("2026-11-30T06:22:40.123Z").expect("valid");
        assert_eq!(from_timestamp(&to_timestamp(instant)), Some(instant));
    }
}
