//! Percentiles of latency samples, by the nearest-rank method (no interpolation, so every figure
//! reported is a latency that was actually observed).

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub count: usize,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

/// The nearest-rank `percentile` (0–100] of sorted `samples`.
fn nearest_rank(sorted: &[Duration], percentile: f64) -> Duration {
    let rank = ((percentile / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// p50/p90/p99/max of `samples`; `None` when there are none.
pub fn summarize(samples: &[Duration]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    Some(Summary {
        count: sorted.len(),
        p50: nearest_rank(&sorted, 50.0),
        p90: nearest_rank(&sorted, 90.0),
        p99: nearest_rank(&sorted, 99.0),
        max: sorted[sorted.len() - 1],
    })
}

/// Milliseconds with two decimals, for tables.
pub fn millis(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let summary = summarize(&samples).expect("samples");
        assert_eq!(summary.p50, Duration::from_millis(50));
        assert_eq!(summary.p90, Duration::from_millis(90));
        assert_eq!(summary.p99, Duration::from_millis(99));
        assert_eq!(summary.max, Duration::from_millis(100));
        let one = summarize(&[Duration::from_millis(7)]).expect("one sample");
        assert_eq!(one.p50, Duration::from_millis(7));
        assert_eq!(one.p99, Duration::from_millis(7));
        assert!(summarize(&[]).is_none());
    }
}
