//! The precision/recall/spurious curve of a judge over abstention thresholds, each figure
//! with its 95% Wilson score interval.
//!
//! Wilson rather than the normal approximation: the corpora are small and the rates sit near
//! 0 or 1 (a spurious rate of 0 out of 8), where the normal interval collapses to a point or
//! leaves [0, 1]. The Wilson interval stays inside [0, 1] and is honest about small counts.

use super::{Case, Tally, tally};
use crate::judge::Verdict;

/// z for a two-sided 95% interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The thresholds the curve is printed at.
pub const THRESHOLDS: &[f64] = &[
    0.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9,
];

/// A proportion with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub successes: usize,
    pub trials: usize,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    /// The point estimate (0 when there were no trials).
    pub fn value(&self) -> f64 {
        if self.trials == 0 {
            0.0
        } else {
            self.successes as f64 / self.trials as f64
        }
    }
}

/// The 95% Wilson score interval of `successes` out of `trials` ([0, 1] with no trials).
pub fn wilson(successes: usize, trials: usize) -> Rate {
    if trials == 0 {
        return Rate {
            successes,
            trials,
            low: 0.0,
            high: 1.0,
        };
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z_95 * Z_95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z_95 * ((p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt()) / (1.0 + z2 / n);
    Rate {
        successes,
        trials,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    }
}

/// The figures of one threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub threshold: f64,
    pub tally: Tally,
    pub recall: Rate,
    pub precision: Rate,
    pub spurious: Rate,
}

impl Point {
    fn of(threshold: f64, tally: Tally) -> Point {
        let (tp, fp, fn_, tn) = (
            tally.true_positives,
            tally.false_positives,
            tally.false_negatives,
            tally.true_negatives,
        );
        Point {
            threshold,
            tally,
            recall: wilson(tp, tp + fn_),
            precision: wilson(tp, tp + fp),
            spurious: wilson(fp, fp + tn),
        }
    }
}

/// The curve over `thresholds` of verdicts already given (the judge runs once per case).
pub fn curve(judged: &[(&Case, Verdict)], thresholds: &[f64]) -> Vec<Point> {
    thresholds
        .iter()
        .map(|threshold| {
            let mut total = Tally::default();
            for (case, verdict) in judged {
                total.add(tally(case, verdict, *threshold).tally);
            }
            Point::of(*threshold, total)
        })
        .collect()
}

/// The lowest threshold of the curve whose spurious rate is at most `bound` (how the default
/// margin is chosen, on the development corpora only).
pub fn lowest_within(points: &[Point], bound: f64) -> Option<f64> {
    points
        .iter()
        .find(|point| point.spurious.value() <= bound)
        .map(|point| point.threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals_match_the_published_values() {
        // (successes, trials, low, high), from Newcombe (1998), table I, and by hand.
        let table = [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
            (8, 8, 0.6756, 1.0),
        ];
        for (successes, trials, low, high) in table {
            let rate = wilson(successes, trials);
            assert!(
                (rate.low - low).abs() < 5e-4,
                "{successes}/{trials}: {rate:?}"
            );
            assert!(
                (rate.high - high).abs() < 5e-4,
                "{successes}/{trials}: {rate:?}"
            );
        }
        assert_eq!(wilson(0, 0).high, 1.0);
    }

    #[test]
    fn the_lowest_threshold_within_the_bound_is_chosen() {
        let point = |threshold, fp, tn| {
            Point::of(
                threshold,
                Tally {
                    true_positives: 10,
                    false_positives: fp,
                    false_negatives: 0,
                    true_negatives: tn,
                },
            )
        };
        let points = [point(0.0, 5, 95), point(0.5, 1, 99), point(0.7, 0, 100)];
        assert_eq!(lowest_within(&points, 0.01), Some(0.5));
        assert_eq!(lowest_within(&points, 0.0), Some(0.7));
        assert_eq!(lowest_within(&points[..1], 0.01), None);
    }
}
