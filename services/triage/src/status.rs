//! The triage vocabulary.

/// A run's handshake status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Idle,
    /// An attempt is in flight.
    Pending,
    /// The last attempt produced writes.
    Completed,
    /// The last attempt produced none (still closer-eligible).
    Expired,
    /// More than 500 events: terminal.
    Overflowed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Pending => "pending",
            Status::Completed => "completed",
            Status::Expired => "expired",
            Status::Overflowed => "overflowed",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::Idle,
            Status::Pending,
            Status::Completed,
            Status::Expired,
            Status::Overflowed,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// Why a begin declined (CONTRACT "decline reason").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    NotLive,
    Terminal,
    Pending,
    PendingFresh,
    NoSignal,
    Debounce,
    Overflowed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotLive => "not-live",
            Reason::Terminal => "terminal",
            Reason::Pending => "pending",
            Reason::PendingFresh => "pending-fresh",
            Reason::NoSignal => "no-signal",
            Reason::Debounce => "debounce",
            Reason::Overflowed => "overflowed",
        }
    }
}

/// Who holds the attempt id: the hook's interactive attempt or a closer claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Hook,
    Closer,
}

impl Holder {
    pub fn as_str(self) -> &'static str {
        match self {
            Holder::Hook => "hook",
            Holder::Closer => "closer",
        }
    }
}
