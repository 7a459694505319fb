//! Baton's token kinds as the real-client usage tests compare them with what a stand-in
//! issued, and the checks they make of a usage report's rows the same way.

use serde_json::Value;

/// Token counts in Baton's kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Kinds {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write_5m: u64,
    pub(crate) cache_write_1h: u64,
}

impl Kinds {
    /// The sum of every kind.
    pub(crate) fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// Adds other counts.
    pub(crate) fn add(&mut self, other: &Kinds) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write_5m += other.cache_write_5m;
        self.cache_write_1h += other.cache_write_1h;
    }
}

/// A report's `tokens` object holds exactly `expected`, kind by kind and in total.
pub(crate) fn assert_tokens(tokens: &Value, expected: Kinds, what: &str) {
    let field = |name: &str| {
        tokens[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{what}: tokens.{name} in {tokens}"))
    };
    let reported = Kinds {
        input: field("input"),
        output: field("output"),
        cache_read: field("cacheRead"),
        cache_write_5m: field("cacheWrite5m"),
        cache_write_1h: field("cacheWrite1h"),
    };
    assert_eq!(reported, expected, "{what}: tokens by kind");
    assert_eq!(field("total"), expected.total(), "{what}: total tokens");
}

/// A report row's first activity is an RFC 3339 instant no later than its last.
pub(crate) fn assert_activity_span(row: &Value) {
    let instant = |name: &str| {
        chrono::DateTime::parse_from_rfc3339(row[name].as_str().expect(name))
            .unwrap_or_else(|_| panic!("{name} is RFC 3339: {row}"))
    };
    assert!(instant("firstActivity") <= instant("lastActivity"), "{row}");
}

/// A reported cost equals the expected one to within rounding.
pub(crate) fn assert_close(reported: f64, expected: f64, what: &str) {
    assert!(
        (reported - expected).abs() < 1e-9,
        "{what}: {reported} is not {expected}"
    );
}
