//! How figures read on the console's pages: times in the viewer's zone with the zone named,
//! dollars beside their unpriced tokens, token counts with separators, states as words (never
//! colour alone). Pure functions, table-tested.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// The viewer's zone from the `baton_tz` cookie (`Area/City`, percent-encoded `/` allowed);
/// anything unknown reads UTC.
pub fn zone(cookie: Option<&str>) -> Tz {
    cookie
        .map(|text| text.replace("%2F", "/").replace("%2f", "/"))
        .and_then(|name| name.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

/// An instant as a page shows it: machine-readable and in the viewer's zone, zone named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// RFC 3339 UTC, for `<time datetime>`.
    pub iso: String,
    /// `2026-12-01 18:04:05 CET`.
    pub text: String,
}

pub fn moment(instant: DateTime<Utc>, zone: Tz) -> Moment {
    let local = instant.with_timezone(&zone);
    Moment {
        iso: instant.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        text: local.format("%Y-%m-%d %H:%M:%S %Z").to_string(),
    }
}

/// An instant from an RPC answer, if it carries one.
pub fn moment_of(timestamp: Option<&baton_proto::Timestamp>, zone: Tz) -> Option<Moment> {
    timestamp
        .and_then(baton_kit::clock::from_timestamp)
        .map(|instant| moment(instant, zone))
}

/// A usage figure as every page shows it: dollars (and the exact number, for `data-cost-usd`),
/// tokens, and the unpriced tokens beside the dollars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureText {
    pub cost: String,
    pub cost_usd: String,
    pub tokens: String,
    pub unpriced: String,
}

pub fn figure_text(figures: &baton_proto::usage::v1::Figures) -> FigureText {
    FigureText {
        cost: usd(figures.cost_usd),
        cost_usd: figures.cost_usd.to_string(),
        tokens: count(figures.tokens.as_ref().map_or(0, |tokens| tokens.total)),
        unpriced: unpriced(figures.unpriced_tokens),
    }
}

/// How long ago, coarsely: `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`; `just now` for
/// anything under a second or in the future (clock skew).
pub fn ago(instant: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - instant).num_seconds();
    match seconds {
        ..=0 => "just now".to_string(),
        1..=59 => format!("{seconds} s ago"),
        60..=3599 => format!("{} min ago", seconds / 60),
        3600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// A token count with thousands separators.
pub fn count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Dollars: cents from $10 up, four decimals below (agent runs cost fractions of a cent).
pub fn usd(value: f64) -> String {
    let value = if value.is_finite() {
        value.max(0.0)
    } else {
        0.0
    };
    if value >= 10.0 {
        let cents = (value * 100.0).round() as u64;
        format!("${}.{:02}", count(cents / 100), cents % 100)
    } else {
        format!("${value:.4}")
    }
}

/// What sits beside every dollar figure: how many tokens no price covers.
pub fn unpriced(tokens: u64) -> String {
    if tokens == 0 {
        "all tokens priced".to_string()
    } else {
        format!("+ {} tokens unpriced", count(tokens))
    }
}

/// A derived session state as a word and a symbol, and the CSS class that colours it.
pub fn state(name: &str) -> (&'static str, &'static str) {
    match name {
        "live" => ("● live", "state-live"),
        "idle" => ("◐ idle", "state-idle"),
        "disconnected" => ("✕ disconnected", "state-disconnected"),
        "closed" => ("○ closed", "state-closed"),
        _ => ("? unknown", "state-unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("instant")
    }

    #[test]
    fn zones_come_from_the_cookie_or_read_utc() {
        let table = [
            (Some("Europe%2FBerlin"), "Europe/Berlin"),
            (Some("Asia/Tokyo"), "Asia/Tokyo"),
            (Some("Etc/GMT+5"), "Etc/GMT+5"),
            (Some("Mars/Olympus"), "UTC"),
            (Some(""), "UTC"),
            (None, "UTC"),
        ];
        for (cookie, expected) in table {
            assert_eq!(zone(cookie).name(), expected, "{cookie:?}");
        }
    }

    #[test]
    fn moments_name_their_zone() {
        let instant = at("2026-12-01T17:04:05.5Z");
        let berlin = moment(instant, "Europe/Berlin".parse().expect("zone"));
        assert_eq!(berlin.iso, "2026-12-01T17:04:05.500Z");
        assert_eq!(berlin.text, "2026-12-01 18:04:05 CET");
        assert_eq!(moment(instant, Tz::UTC).text, "2026-12-01 17:04:05 UTC");
        let kolkata = moment(instant, "Asia/Kolkata".parse().expect("zone"));
        assert_eq!(kolkata.text, "2026-12-01 22:34:05 IST");
    }

    #[test]
    fn figures_read_plainly() {
        let now = at("2026-12-01T12:00:00Z");
        let ago_table = [
            ("2026-12-01T12:00:05Z", "just now"),
            ("2026-12-01T12:00:00Z", "just now"),
            ("2026-12-01T11:59:48Z", "12 s ago"),
            ("2026-12-01T11:57:00Z", "3 min ago"),
            ("2026-12-01T07:00:00Z", "5 h ago"),
            ("2026-11-29T12:00:00Z", "2 d ago"),
        ];
        for (then, expected) in ago_table {
            assert_eq!(ago(at(then), now), expected, "{then}");
        }
        let counts = [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (1_234_567, "1,234,567"),
        ];
        for (value, expected) in counts {
            assert_eq!(count(value), expected);
        }
        let dollars = [
            (0.0, "$0.0000"),
            (0.012_345, "$0.0123"),
            (9.999_94, "$9.9999"),
            (10.0, "$10.00"),
            (1234.567, "$1,234.57"),
            (-1.0, "$0.0000"),
            (f64::NAN, "$0.0000"),
        ];
        for (value, expected) in dollars {
            assert_eq!(usd(value), expected, "{value}");
        }
        assert_eq!(unpriced(0), "all tokens priced");
        assert_eq!(unpriced(1500), "+ 1,500 tokens unpriced");
        assert_eq!(state("disconnected").0, "✕ disconnected");
        assert_eq!(state("bogus").1, "state-unknown");
    }
}
