//! Latency percentiles from raw samples (a few hundred thousand at most,
//! so sorting them is cheaper than being clever).

use serde::Serialize;

/// Percentiles of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    pub count: usize,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples_ns`.
    pub fn of(mut samples_ns: Vec<u64>) -> Self {
        if samples_ns.is_empty() {
            return Percentiles::default();
        }
        samples_ns.sort_unstable();
        let n = samples_ns.len();
        let rank = |p: f64| {
            let r = ((p / 100.0) * n as f64).ceil() as usize;
            samples_ns[r.clamp(1, n) - 1] as f64 / 1000.0
        };
        let sum: u128 = samples_ns.iter().map(|&s| u128::from(s)).sum();
        Percentiles {
            count: n,
            mean_us: sum as f64 / n as f64 / 1000.0,
            p50_us: rank(50.0),
            p90_us: rank(90.0),
            p99_us: rank(99.0),
            max_us: samples_ns[n - 1] as f64 / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_on_one_to_a_hundred() {
        let p = Percentiles::of((1..=100).rev().map(|i| i * 1000).collect());
        assert_eq!(p.count, 100);
        assert_eq!(p.p50_us, 50.0);
        assert_eq!(p.p90_us, 90.0);
        assert_eq!(p.p99_us, 99.0);
        assert_eq!(p.max_us, 100.0);
        assert_eq!(p.mean_us, 50.5);
    }

    #[test]
    fn no_samples_give_zeros() {
        assert_eq!(Percentiles::of(Vec::new()).count, 0);
    }
}
