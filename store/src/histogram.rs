//! A fixed-bucket histogram the writer thread records into without locks, and the snapshot a
//! metrics endpoint reads. This crate does not depend on a metrics library: the gateway encodes
//! snapshots in whatever format it serves.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

pub(crate) struct AtomicHistogram {
    bounds: &'static [f64],
    /// One count per bound plus the overflow bucket (non-cumulative).
    counts: Vec<AtomicU64>,
    /// The sum as f64 bits, updated by compare-and-swap (the writer is the only recorder, so the
    /// loop runs once).
    sum_bits: AtomicU64,
}

/// Cumulative buckets as Prometheus and OpenMetrics want them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations <= bound)`, ascending, ending with `+Inf`.
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

/// Flush durations: 50 µs to about 1.6 s, doubling.
pub(crate) const FLUSH_SECONDS_BOUNDS: &[f64] =
    &[0.00005, 0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128, 0.0256, 0.0512, 0.1024, 0.2048, 0.4096, 0.8192, 1.6384];

/// Appends per group-commit batch: 1 to 4096, doubling.
pub(crate) const BATCH_APPENDS_BOUNDS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0];

impl AtomicHistogram {
    pub(crate) fn new(bounds: &'static [f64]) -> Self {
        Self { bounds, counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(), sum_bits: AtomicU64::new(0) }
    }

    pub(crate) fn observe(&self, value: f64) {
        let i = self.bounds.iter().position(|b| value <= *b).unwrap_or(self.bounds.len());
        self.counts[i].fetch_add(1, Relaxed);
        let _ = self.sum_bits.fetch_update(Relaxed, Relaxed, |bits| Some((f64::from_bits(bits) + value).to_bits()));
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c.load(Relaxed);
            buckets.push((self.bounds.get(i).copied().unwrap_or(f64::INFINITY), cumulative));
        }
        HistogramSnapshot { buckets, sum: f64::from_bits(self.sum_bits.load(Relaxed)), count: cumulative }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_cumulative_buckets_with_overflow_at_infinity() {
        let h = AtomicHistogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.0, 1.5, 3.0, 7.0] {
            h.observe(v);
        }
        let s = h.snapshot();
        assert_eq!(s.buckets, vec![(1.0, 2), (2.0, 3), (f64::INFINITY, 5)]);
        assert_eq!((s.count, s.sum), (5, 13.0));
    }
}
