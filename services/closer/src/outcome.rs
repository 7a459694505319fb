//! Pass outcomes and the pure rules around them: backoff, the judge's candidates.

use std::collections::HashSet;
use std::time::Duration;

use uuid::Uuid;

/// How a pass ended (CONTRACT Part 2 table H, plus the metering refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    NotFound,
    NotClosed,
    /// The epoch moved (the run came back): nothing more is written under the old one.
    Fenced,
    ClaimLost,
    NotEligible,
    /// Settled without a generation: nothing was briefed.
    NothingBriefed,
    Completed,
    Overflowed,
    /// Over the tenant's generation budget: nothing billed; retried after backoff.
    Refused,
    /// A transient error: retried after backoff.
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::NotFound => "not-found",
            Outcome::NotClosed => "not-closed",
            Outcome::Fenced => "fenced",
            Outcome::ClaimLost => "claim-lost",
            Outcome::NotEligible => "not-eligible",
            Outcome::NothingBriefed => "nothing-briefed",
            Outcome::Completed => "completed",
            Outcome::Overflowed => "overflowed",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
        }
    }

    /// Whether the pass for this epoch is settled (a refusal or failure is tried again).
    pub fn is_final(self) -> bool {
        !matches!(self, Outcome::Refused | Outcome::Failed)
    }
}

/// CLOSER_BACKOFF_BASE_MS: 20 minutes (the sweep cadence).
pub const BACKOFF_BASE: Duration = Duration::from_secs(20 * 60);
/// CLOSER_BACKOFF_MAX_MS: 4 hours.
pub const BACKOFF_MAX: Duration = Duration::from_secs(4 * 3600);

/// The retry schedule of a refused or failed pass: the seed's base and cap, configurable
/// (`BATON_CLOSER__BACKOFF_BASE`, `BATON_CLOSER__BACKOFF_MAX`) so a deployment can tune it and a
/// test on the system clock can watch a retry happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            base: BACKOFF_BASE,
            max: BACKOFF_MAX,
        }
    }
}

impl Backoff {
    /// delay(n) = min(max, base · 2^(n−1)) for n ≥ 1; n ≤ 0 reads as 1.
    pub fn delay(self, failures: i32) -> Duration {
        let exponent = (failures.max(1) - 1).min(16) as u32;
        self.base.saturating_mul(1u32 << exponent).min(self.max)
    }
}

/// The seed's schedule: min(4h, 20 min · 2^(n−1)).
pub fn backoff(failures: i32) -> Duration {
    Backoff::default().delay(failures)
}

/// The judge's answer reduced to the briefed set: ids compared case-insensitively,
/// de-duplicated, in briefed order; anything else is counted as rejected.
pub fn candidates(briefed: &[Uuid], judged: &[String]) -> (Vec<Uuid>, usize) {
    let mut chosen: HashSet<Uuid> = HashSet::new();
    let mut rejected = 0;
    for text in judged {
        match Uuid::parse_str(&text.trim().to_ascii_lowercase()) {
            Ok(id) if briefed.contains(&id) => {
                chosen.insert(id);
            }
            _ => rejected += 1,
        }
    }
    let ordered = briefed
        .iter()
        .copied()
        .filter(|id| chosen.contains(id))
        .collect();
    (ordered, rejected)
}

/// Table H "eligibility" (the same signal triage's begin reads, DESIGN section 4 rule 3):
/// idle, pending and expired always; completed only with a visible event id outside the
/// watermark; overflowed (terminal) never.
pub fn eligible(status: &str, watermark: &[Uuid], visible: &[Uuid]) -> bool {
    match status {
        "idle" | "pending" | "expired" => true,
        "completed" => {
            let accounted: HashSet<&Uuid> = watermark.iter().collect();
            visible.iter().any(|id| !accounted.contains(id))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_twenty_minutes_to_four_hours() {
        let minutes = |failures| backoff(failures).as_secs() / 60;
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 6, 40].map(minutes),
            [20, 20, 40, 80, 160, 240, 240, 240]
        );
        assert_eq!(minutes(-3), 20);
    }

    #[test]
    fn a_configured_schedule_keeps_the_doubling_and_its_cap() {
        let fast = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(5),
        };
        let seconds = |failures| fast.delay(failures).as_secs();
        assert_eq!([1, 2, 3, 4, 30].map(seconds), [1, 2, 4, 5, 5]);
    }

    #[test]
    fn only_briefed_ids_survive_and_outsiders_are_counted() {
        let briefed = [Uuid::from_u128(1), Uuid::from_u128(2)];
        let judged = vec![
            Uuid::from_u128(2).to_string().to_uppercase(),
            Uuid::from_u128(2).to_string(),
            Uuid::from_u128(9).to_string(),
            "not-a-uuid".to_string(),
        ];
        let (chosen, rejected) = candidates(&briefed, &judged);
        assert_eq!(chosen, vec![Uuid::from_u128(2)]);
        assert_eq!(rejected, 2);
    }

    #[test]
    fn eligibility_rows() {
        let seen = [Uuid::from_u128(1), Uuid::from_u128(2)];
        let more = [Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3)];
        assert!(eligible("idle", &[], &[]));
        assert!(eligible("pending", &seen, &seen));
        assert!(eligible("expired", &seen, &seen), "zero-write: run anyway");
        assert!(
            !eligible("completed", &seen, &seen),
            "completed, nothing new"
        );
        assert!(eligible("completed", &seen, &more));
        assert!(!eligible("overflowed", &[], &more));
    }

    #[test]
    fn refusals_and_failures_are_retried() {
        assert!(!Outcome::Refused.is_final() && !Outcome::Failed.is_final());
        assert!(Outcome::Fenced.is_final() && Outcome::Completed.is_final());
    }
}
