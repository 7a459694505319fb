//! Token buckets (CONTRACT section 0, issue 9). Two limiters use them:
//!
//! - per verified key: a bucket per `<client-ip>:<key-prefix>`, `requests` per `window`
//!   (default 300 per 60 s), spent only once the key's secret has verified, so nobody but the
//!   key's holder can drain it;
//! - per client for failed verifications: a bucket per client address, spent by each
//!   well-formed key that does not verify; empty, it also stops the client's database look-ups
//!   of prefixes the gateway does not know.
//!
//! Over the limit the answer is 429 `rate_limited` with `Retry-After`. Buckets live in this
//! replica's memory; with several replicas the effective limit is per replica, which errs on
//! the side of serving.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most buckets kept; past it, full (idle) buckets are forgotten.
const MAX_BUCKETS: usize = 100_000;

/// One caller's bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub tokens: f64,
    pub updated: Instant,
}

/// The pure decision: refill since `updated`, then take one token or say how long to wait.
pub fn take(
    bucket: Option<Bucket>,
    now: Instant,
    capacity: f64,
    refill_per_second: f64,
) -> Result<Bucket, Duration> {
    let current = match bucket {
        None => capacity,
        Some(bucket) => {
            let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
            (bucket.tokens + elapsed * refill_per_second).min(capacity)
        }
    };
    if current >= 1.0 {
        return Ok(Bucket {
            tokens: current - 1.0,
            updated: now,
        });
    }
    let missing = 1.0 - current;
    Err(Duration::from_secs_f64(missing / refill_per_second))
}

/// The limiter shared by all requests of one gateway.
#[derive(Debug)]
pub struct RateLimiter {
    capacity: f64,
    refill_per_second: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    pub fn new(requests: u32, window: Duration) -> RateLimiter {
        let capacity = f64::from(requests.max(1));
        RateLimiter {
            capacity,
            refill_per_second: capacity / window.as_secs_f64().max(0.001),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `key` has a token now, without taking it; else the whole seconds to wait.
    pub fn available(&self, key: &str) -> Result<(), u64> {
        let buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        take(
            buckets.get(key).copied(),
            Instant::now(),
            self.capacity,
            self.refill_per_second,
        )
        .map(|_| ())
        .map_err(|wait| wait.as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Takes a token for `key`; on refusal, the whole seconds to wait (at least 1).
    pub fn check(&self, key: &str) -> Result<(), u64> {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            let capacity = self.capacity;
            let refill = self.refill_per_second;
            buckets.retain(|_, bucket| {
                let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
                bucket.tokens + elapsed * refill < capacity
            });
        }
        match take(
            buckets.get(key).copied(),
            now,
            self.capacity,
            self.refill_per_second,
        ) {
            Ok(bucket) => {
                buckets.insert(key.to_string(), bucket);
                Ok(())
            }
            Err(wait) => Err(wait.as_secs_f64().ceil().max(1.0) as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_rows() {
        let start = Instant::now();
        let full = take(None, start, 3.0, 1.0).expect("first request passes");
        assert_eq!(full.tokens, 2.0);
        let one = take(Some(full), start, 3.0, 1.0).expect("second");
        let zero = take(Some(one), start, 3.0, 1.0).expect("third");
        let refused = take(Some(zero), start, 3.0, 1.0).expect_err("fourth is refused");
        assert_eq!(refused, Duration::from_secs(1));
        let later = take(Some(zero), start + Duration::from_secs(1), 3.0, 1.0);
        assert!(later.is_ok(), "a second later one token is back");
        let capped = take(Some(zero), start + Duration::from_secs(100), 3.0, 1.0).expect("ok");
        assert_eq!(capped.tokens, 2.0, "refill never exceeds capacity");
    }

    #[test]
    fn limiter_separates_keys_and_reports_retry_after() {
        let limiter = RateLimiter::new(2, Duration::from_secs(60));
        assert!(limiter.check("a").is_ok());
        assert!(limiter.check("a").is_ok());
        assert_eq!(limiter.available("a"), Err(30), "peeking takes nothing");
        assert_eq!(limiter.check("a"), Err(30));
        assert!(limiter.available("b").is_ok());
        assert!(limiter.check("b").is_ok());
    }
}
