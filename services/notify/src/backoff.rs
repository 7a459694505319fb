//! Retry delays between failed delivery attempts: doubling from a base up to a cap, jittered.

use std::time::Duration;

/// Retry delays: `base` doubling per failure up to `max`, each drawn between half and all of
/// its value so receivers that failed together are not retried together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    /// The delay after the `failures`-th failed attempt (1-based), with `jitter` in [0, 1]:
    /// 0 gives half the nominal delay, 1 all of it.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        let nominal = self.base.saturating_mul(1u32 << doublings).min(self.max);
        nominal.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_the_base_is_capped_and_jittered_down_to_half() {
        let backoff = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(10),
        };
        assert_eq!(backoff.delay(1, 1.0), Duration::from_secs(1));
        assert_eq!(backoff.delay(2, 1.0), Duration::from_secs(2));
        assert_eq!(backoff.delay(3, 1.0), Duration::from_secs(4));
        assert_eq!(backoff.delay(5, 1.0), Duration::from_secs(10));
        assert_eq!(backoff.delay(50, 1.0), Duration::from_secs(10));
        assert_eq!(backoff.delay(3, 0.0), Duration::from_secs(2));
        assert_eq!(backoff.delay(3, 0.5), Duration::from_secs(3));
    }
}
