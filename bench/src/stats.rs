//! Latency statistics and the report lines every benchmark prints.

use std::time::Duration;

/// Throughput and latency of one measured run.
#[derive(Debug, Clone)]
pub struct RunStats {
    pub label: String,
    pub operations: usize,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
}

impl RunStats {
    /// Summarises per-operation latencies collected over `elapsed`.
    pub fn from_latencies(
        label: &str,
        mut latencies: Vec<Duration>,
        elapsed: Duration,
    ) -> RunStats {
        latencies.sort_unstable();
        RunStats {
            label: label.to_string(),
            operations: latencies.len(),
            elapsed,
            p50: percentile(&latencies, 0.50),
            p99: percentile(&latencies, 0.99),
        }
    }

    pub fn rate(&self) -> f64 {
        self.operations as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    pub fn print(&self) {
        println!(
            "  {:<44} {:>9.0} ops/s   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} ops in {:.1} s)",
            self.label,
            self.rate(),
            millis(self.p50),
            millis(self.p99),
            self.operations,
            self.elapsed.as_secs_f64()
        );
    }
}

/// The `q` quantile of sorted latencies (nearest rank).
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
