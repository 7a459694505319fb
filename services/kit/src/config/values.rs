//! The types a settings field is declared with. Each carries its default and its bounds in its
//! type, so a field reads `pub sweep_interval: Span<{ mins(20) }, { secs(1) }, { hours(24) }>`
//! (default, lowest, highest) and the struct is the documentation of its variables.
//!
//! Each parses the text of one variable (values arrive as text, never guessed into numbers) and
//! says what is wrong with it; only the bounds, numbers and addresses are repeated, never text
//! that could be a secret. A const generic cannot be a `Duration`, a `&str` or an `f64`, so
//! durations are milliseconds (written with [`secs`], [`mins`], ...), addresses are a loopback
//! port and a share is the bits of its `f64`.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Milliseconds, for [`Span`]'s parameters.
pub const fn millis(count: u64) -> u64 {
    count
}

pub const fn secs(count: u64) -> u64 {
    count * 1000
}

pub const fn mins(count: u64) -> u64 {
    count * 60_000
}

pub const fn hours(count: u64) -> u64 {
    count * 3_600_000
}

pub const fn days(count: u64) -> u64 {
    count * 86_400_000
}

/// Serde through the variable's text: `parse` on the way in, `Display` on the way out.
macro_rules! through_text {
    ($name:ident < $(const $param:ident : $kind:ty),* >) => {
        impl<'de, $(const $param: $kind),*> Deserialize<'de> for $name<$($param),*> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl<$(const $param: $kind),*> Serialize for $name<$($param),*> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    };
}

/// A duration written as `90s`, `10m`, `24h` or `1h 30m` (humantime), `DEFAULT` when unset and
/// within `[MIN, MAX]`, all three in milliseconds. With `BARE_SECONDS` a plain number is also
/// read as seconds (`600`), for the one variable that always accepted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span<
    const DEFAULT: u64,
    const MIN: u64,
    const MAX: u64,
    const BARE_SECONDS: bool = false,
>(Duration);

/// A [`Span`] that also takes a plain number of seconds.
pub type SpanOrSeconds<const DEFAULT: u64, const MIN: u64, const MAX: u64> =
    Span<DEFAULT, MIN, MAX, true>;

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64, const BARE_SECONDS: bool>
    Span<DEFAULT, MIN, MAX, BARE_SECONDS>
{
    pub fn get(self) -> Duration {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let value = if BARE_SECONDS && !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
        {
            Duration::from_secs(text.parse().map_err(|_| "not a number of seconds")?)
        } else {
            humantime::parse_duration(text).map_err(|error| format!("not a duration: {error}"))?
        };
        let (min, max) = (Duration::from_millis(MIN), Duration::from_millis(MAX));
        if value < min || value > max {
            return Err(format!(
                "must be between {} and {}",
                humantime::format_duration(min),
                humantime::format_duration(max)
            ));
        }
        Ok(Span(value))
    }
}

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64, const BARE_SECONDS: bool> Default
    for Span<DEFAULT, MIN, MAX, BARE_SECONDS>
{
    fn default() -> Self {
        Span(Duration::from_millis(DEFAULT))
    }
}

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64, const BARE_SECONDS: bool> fmt::Display
    for Span<DEFAULT, MIN, MAX, BARE_SECONDS>
{
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", humantime::format_duration(self.0))
    }
}

through_text!(Span<const DEFAULT: u64, const MIN: u64, const MAX: u64, const BARE_SECONDS: bool>);

/// A whole number, `DEFAULT` when unset and within `[MIN, MAX]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const DEFAULT: u64, const MIN: u64, const MAX: u64>(u64);

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64> Int<DEFAULT, MIN, MAX> {
    pub fn get(self) -> u64 {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let value: u64 = text.trim().parse().map_err(|error| format!("{error}"))?;
        if !(MIN..=MAX).contains(&value) {
            return Err(format!("must be between {MIN} and {MAX}, got {value}"));
        }
        Ok(Int(value))
    }
}

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64> Default for Int<DEFAULT, MIN, MAX> {
    fn default() -> Self {
        Int(DEFAULT)
    }
}

impl<const DEFAULT: u64, const MIN: u64, const MAX: u64> fmt::Display for Int<DEFAULT, MIN, MAX> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

through_text!(Int<const DEFAULT: u64, const MIN: u64, const MAX: u64>);

/// A switch, `DEFAULT` when unset: `1`, `true`, `yes`, `on` and their negatives, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag<const DEFAULT: bool>(bool);

impl<const DEFAULT: bool> Flag<DEFAULT> {
    pub fn get(self) -> bool {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Flag(true)),
            "0" | "false" | "no" | "off" => Ok(Flag(false)),
            _ => Err("must be true or false".to_string()),
        }
    }
}

impl<const DEFAULT: bool> Default for Flag<DEFAULT> {
    fn default() -> Self {
        Flag(DEFAULT)
    }
}

impl<const DEFAULT: bool> fmt::Display for Flag<DEFAULT> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

through_text!(Flag<const DEFAULT: bool>);

/// A share in `[0, 1]`, `f64::from_bits(DEFAULT_BITS)` when unset (write the default as
/// `{ 0.5_f64.to_bits() }`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share<const DEFAULT_BITS: u64>(f64);

impl<const DEFAULT_BITS: u64> Share<DEFAULT_BITS> {
    pub fn get(self) -> f64 {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let value: f64 = text.trim().parse().map_err(|error| format!("{error}"))?;
        if !(0.0..=1.0).contains(&value) {
            return Err("must be between 0 and 1".to_string());
        }
        Ok(Share(value))
    }
}

impl<const DEFAULT_BITS: u64> Default for Share<DEFAULT_BITS> {
    fn default() -> Self {
        Share(f64::from_bits(DEFAULT_BITS))
    }
}

impl<const DEFAULT_BITS: u64> fmt::Display for Share<DEFAULT_BITS> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

through_text!(Share<const DEFAULT_BITS: u64>);

/// An address to listen on, `127.0.0.1:PORT` when unset (`:0` picks a free port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen<const PORT: u16>(SocketAddr);

impl<const PORT: u16> Listen<PORT> {
    pub fn get(self) -> SocketAddr {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        text.parse()
            .map(Listen)
            .map_err(|_| format!("not a host:port address: {text}"))
    }
}

impl<const PORT: u16> Default for Listen<PORT> {
    fn default() -> Self {
        Listen(SocketAddr::from((Ipv4Addr::LOCALHOST, PORT)))
    }
}

impl<const PORT: u16> fmt::Display for Listen<PORT> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

through_text!(Listen<const PORT: u16>);

/// Where a caller reaches a service (`host:port`, any host name), `127.0.0.1:PORT` when unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAddr<const PORT: u16>(String);

impl<const PORT: u16> PeerAddr<PORT> {
    pub fn get(self) -> String {
        self.0
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(PeerAddr(text.to_string()))
    }
}

impl<const PORT: u16> Default for PeerAddr<PORT> {
    fn default() -> Self {
        PeerAddr(format!("127.0.0.1:{PORT}"))
    }
}

impl<const PORT: u16> fmt::Display for PeerAddr<PORT> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

through_text!(PeerAddr<const PORT: u16>);
