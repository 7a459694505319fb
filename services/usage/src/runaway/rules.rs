//! The runaway rules, pure: a tenant's policy (with the defaults a tenant that set none gets),
//! whether a session is over it, and what an evaluation does to its episode.

use chrono::{DateTime, Duration, Utc};

/// 10⁻¹⁵ USD per micro-dollar.
const FEMTOS_PER_MICRO: i128 = 1_000_000_000;

/// A tenant's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The sliding window the spend is summed over.
    pub window_minutes: u32,
    /// Spend inside the window that flags a session, USD × 10⁶.
    pub spend_micros: i64,
    /// How long the main agent may keep working after the last user prompt.
    pub unattended_minutes: u32,
}

impl Default for Policy {
    /// $10 in 15 minutes (the default), and an hour without a prompt.
    fn default() -> Policy {
        Policy {
            window_minutes: 15,
            spend_micros: 10_000_000,
            unattended_minutes: 60,
        }
    }
}

/// Why a session is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    Spend,
    Unattended,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Spend => "spend",
            Reason::Unattended => "unattended",
        }
    }
}

/// The spend window ending at the session's newest usage: `[end − window, end]`.
pub fn window(policy: &Policy, newest: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    (
        newest - Duration::minutes(i64::from(policy.window_minutes)),
        newest,
    )
}

/// Whether `spent` (10⁻¹⁵ USD) inside the window passes the limit (strictly).
pub fn over_spend(policy: &Policy, spent: i128) -> bool {
    spent > i128::from(policy.spend_micros) * FEMTOS_PER_MICRO
}

/// When the main agent became unattended: the last prompt plus the limit, if its newest work
/// is past that. No prompt ever seen: unknown, never flagged.
pub fn unattended_since(
    policy: &Policy,
    newest_main: Option<DateTime<Utc>>,
    last_prompt: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let since = last_prompt? + Duration::minutes(i64::from(policy.unattended_minutes));
    (newest_main? > since).then_some(since)
}

/// What an evaluation does to a session's episode of one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Open an episode and raise `usage.runaway.flagged`.
    Flag,
    /// Close the open episode (the condition no longer holds).
    Clear,
    Nothing,
}

/// The step for an episode that is (or is not) open, given whether the condition holds now.
pub fn step(open: bool, holds: bool) -> Step {
    match (open, holds) {
        (false, true) => Step::Flag,
        (true, false) => Step::Clear,
        _ => Step::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("instant")
    }

    #[test]
    fn spend_passes_the_limit_strictly_and_episodes_open_and_close_once() {
        let policy = Policy::default();
        let dollars = |usd: i128| usd * 1_000_000_000_000_000;
        assert!(!over_spend(&policy, dollars(10)));
        assert!(over_spend(&policy, dollars(10) + 1));
        let (start, end) = window(&policy, at("2026-03-01T10:30:00Z"));
        assert_eq!(
            (start, end),
            (at("2026-03-01T10:15:00Z"), at("2026-03-01T10:30:00Z"))
        );
        let cases = [
            (false, false, Step::Nothing),
            (false, true, Step::Flag),
            (true, true, Step::Nothing),
            (true, false, Step::Clear),
        ];
        for (open, holds, expected) in cases {
            assert_eq!(step(open, holds), expected, "open {open}, holds {holds}");
        }
    }

    #[test]
    fn unattended_needs_a_prompt_and_work_past_the_limit() {
        let policy = Policy::default();
        let prompt = Some(at("2026-03-01T09:00:00Z"));
        let cases = [
            (Some(at("2026-03-01T10:00:00Z")), prompt, None),
            (
                Some(at("2026-03-01T10:00:01Z")),
                prompt,
                Some(at("2026-03-01T10:00:00Z")),
            ),
            (Some(at("2026-03-01T12:00:00Z")), None, None),
            (None, prompt, None),
        ];
        for (newest, last_prompt, expected) in cases {
            assert_eq!(
                unattended_since(&policy, newest, last_prompt),
                expected,
                "{newest:?}"
            );
        }
    }
}
