//! What the server made of one spooled entry: the outcome a drain acts on, and what a final
//! usage flush reports back to it.

/// What the server made of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Done,
    Refused(u16),
    /// No answer, 401, 403, 429 or 5xx: may succeed later (after the `Retry-After` wait, when
    /// the server named one).
    Later(Option<std::time::Duration>),
}
