//! How much the measuring harness adds to one operation.
//!
//! Each repeat times `n` operations of the scenario's loop twice: bare (nothing but the
//! operations and two clock reads) and through [`Prepared::run`] (stop-flag checks and the
//! op counter), in alternating order so that drift and warm-up do not favour either. The
//! overhead of a repeat is `harness / bare − 1`; the figure is the median over repeats with its
//! quartiles, since single pairs on a noisy VM can differ by more than the effect.

use crate::error::LiveError;
use crate::measure::RunLength;
use crate::prepared::{prepare, Placement, Prepared};
use crate::spec::ScenarioSpec;
use serde::{Deserialize, Serialize};
use tlblab_stats::percentile;

/// The harness overhead of a scenario's measured loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Operations per timed loop.
    pub ops_per_repeat: u64,
    /// Pairs of loops timed.
    pub repeats: usize,
    /// Median time per operation of the bare loop, ns.
    pub bare_ns_per_op: f64,
    /// Median time per operation through the harness, ns.
    pub harness_ns_per_op: f64,
    /// Median over repeats of the overhead, % of one bare operation (may be negative: noise).
    pub percent: f64,
    /// First quartile of the per-repeat overheads, %.
    pub percent_p25: f64,
    /// Third quartile of the per-repeat overheads, %.
    pub percent_p75: f64,
    /// Every repeat's overhead, %.
    pub per_repeat_percent: Vec<f64>,
}

impl Prepared {
    /// Measures the harness overhead with `repeats` pairs of `ops_per_repeat`-operation loops.
    pub fn calibrate_overhead(
        &mut self,
        ops_per_repeat: u64,
        repeats: usize,
    ) -> Result<Overhead, LiveError> {
        let (mut bare, mut harness, mut pct) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..repeats.max(1) {
            let time_harness = |p: &mut Prepared| -> Result<f64, LiveError> {
                Ok(p.run(RunLength::Ops(ops_per_repeat))?.elapsed_ns as f64)
            };
            let (b, h) = if i % 2 == 0 {
                let b = self.run_bare(ops_per_repeat)?.as_nanos() as f64;
                (b, time_harness(self)?)
            } else {
                let h = time_harness(self)?;
                (self.run_bare(ops_per_repeat)?.as_nanos() as f64, h)
            };
            bare.push(b / ops_per_repeat as f64);
            harness.push(h / ops_per_repeat as f64);
            pct.push((h / b - 1.0) * 100.0);
        }
        let q = |v: &[f64], p: f64| percentile(v, p).unwrap_or(f64::NAN);
        Ok(Overhead {
            ops_per_repeat,
            repeats: pct.len(),
            bare_ns_per_op: q(&bare, 50.0),
            harness_ns_per_op: q(&harness, 50.0),
            percent: q(&pct, 50.0),
            percent_p25: q(&pct, 25.0),
            percent_p75: q(&pct, 75.0),
            per_repeat_percent: pct,
        })
    }
}

/// Prepares `spec`, warms it up with one run, and measures its harness overhead with 21 pairs
/// of 20,000-operation loops. Only scenarios whose measured loop runs on the caller
/// (`madvise-busy`, `storm`, `madv-migrate`, `pingpong`) can be calibrated.
pub fn calibrate_overhead(
    spec: &ScenarioSpec,
    placement: &Placement,
) -> Result<Overhead, LiveError> {
    let mut p = prepare(spec, placement)?;
    p.run_bare(1)?; // refuses multi-task scenarios before the warm-up
    p.run(RunLength::Ops(20_000))?;
    p.calibrate_overhead(20_000, 21)
}
