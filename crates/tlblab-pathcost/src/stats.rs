//! Median and p10–p90 of per-run figures.

use serde::{Deserialize, Serialize};

/// One measured path: per-operation nanoseconds over the timed runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Median over the kept runs of the per-operation time, in ns.
    pub median_ns: f64,
    /// 10th percentile (linear interpolation), in ns.
    pub p10_ns: f64,
    /// 90th percentile, in ns.
    pub p90_ns: f64,
    /// Timed runs kept.
    pub runs: usize,
    /// Timed runs made (more than `runs` when some were dropped, e.g. without IPI delivery).
    pub runs_made: usize,
    /// Operations per run.
    pub ops_per_run: u64,
    /// Function-call IPIs received by the other CPU per operation (median over kept runs), for
    /// the measurements that read `/proc/interrupts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipis_per_op: Option<f64>,
    /// For the fork measurements: the resident anonymous pages the forked process inherits
    /// (`/proc/self/smaps`), which the fork copies and the child's exit frees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_pages: Option<u64>,
    /// Anything a reader should know (dropped runs, failed migrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Measurement {
    /// A measurement of `per_op` (ns per operation of each kept run); `None` if there is no run.
    pub fn of(per_op: &[f64], runs_made: usize, ops_per_run: u64) -> Option<Measurement> {
        Some(Measurement {
            median_ns: percentile(per_op, 0.5)?,
            p10_ns: percentile(per_op, 0.1)?,
            p90_ns: percentile(per_op, 0.9)?,
            runs: per_op.len(),
            runs_made,
            ops_per_run,
            ipis_per_op: None,
            anon_pages: None,
            note: None,
        })
    }

    /// `102.3 ns (p10–p90 101.0–104.1 ns, 21 runs)`.
    pub fn summary(&self) -> String {
        let dropped = if self.runs_made > self.runs {
            format!(" of {}", self.runs_made)
        } else {
            String::new()
        };
        format!(
            "{} ns (p10–p90 {}–{} ns, {}{dropped} runs of {} ops)",
            round1(self.median_ns),
            round1(self.p10_ns),
            round1(self.p90_ns),
            self.runs,
            self.ops_per_run
        )
    }
}

/// `x` to 0.1.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The `p`-quantile (0 ≤ p ≤ 1) with linear interpolation between order statistics
/// (`tlblab_stats::percentile`'s definition); `None` for no values or a non-finite one.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    tlblab_stats::percentile(values, p.clamp(0.0, 1.0) * 100.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(percentile(&v, 0.5), Some(3.0));
        assert_eq!(percentile(&v, 0.1), Some(1.4));
        assert_eq!(percentile(&v, 0.9), Some(4.6));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.9), Some(7.0));
        let m = Measurement::of(&v, 6, 100).unwrap();
        assert_eq!(m.summary(), "3 ns (p10–p90 1.4–4.6 ns, 5 of 6 runs of 100 ops)");
    }
}
