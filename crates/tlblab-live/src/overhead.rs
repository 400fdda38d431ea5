//! How much the measuring harness adds to one operation, measured two ways.
//!
//! 1. Directly: each repeat times a slice of the scenario's loop through [`Prepared::run`]
//!    (`RunLength::Time`, as the harness runs it: stop-flag and clock checks every
//!    [`BATCH`](crate::BATCH) ops, an op counter) and as a bare loop of as many operations
//!    (nothing but the operations and two clock reads), in alternating order so that drift does
//!    not favour either. A repeat's overhead is `harness / bare − 1`; the figure is the median
//!    with its quartiles. On a noisy VM the spread of single pairs (several %) is far larger than
//!    the effect, so this figure mostly shows the noise floor.
//! 2. The machinery alone: the same two loops around an empty operation (a counter increment),
//!    best of several, give the harness's own cost per operation in ns, which divided by the
//!    bare operation's time bounds the overhead well below what (1) can resolve.

use crate::error::LiveError;
use crate::measure::{bare, measure, RunLength};
use crate::prepared::{prepare, Placement, Prepared};
use crate::spec::ScenarioSpec;
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tlblab_stats::percentile;

/// The harness overhead of a scenario's measured loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Length of each timed slice through the harness, ns.
    pub slice_ns: u64,
    /// Pairs of slices timed.
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
    /// The harness's own cost per operation (timed loop minus bare loop around an empty
    /// operation, best of 11), ns.
    pub machinery_ns_per_op: f64,
    /// `machinery_ns_per_op` as a % of `bare_ns_per_op`.
    pub machinery_percent: f64,
}

impl Prepared {
    /// Measures the harness overhead with `repeats` pairs of `slice`-long loops.
    pub fn calibrate_overhead(
        &mut self,
        slice: Duration,
        repeats: usize,
    ) -> Result<Overhead, LiveError> {
        let (mut bare_ns, mut harness_ns, mut pct) = (Vec::new(), Vec::new(), Vec::new());
        let mut ops = 0;
        for i in 0..repeats.max(1) {
            let timed = |p: &mut Prepared| -> Result<(u64, f64), LiveError> {
                let s = p.run(RunLength::Time(slice))?;
                Ok((s.ops, s.elapsed_ns as f64 / s.ops as f64))
            };
            let (b, h) = if i % 2 == 0 || ops == 0 {
                let (n, h) = timed(self)?;
                ops = n;
                (self.run_bare(n)?.as_nanos() as f64 / n as f64, h)
            } else {
                let b = self.run_bare(ops)?.as_nanos() as f64 / ops as f64;
                let (n, h) = timed(self)?;
                ops = n;
                (b, h)
            };
            bare_ns.push(b);
            harness_ns.push(h);
            pct.push((h / b - 1.0) * 100.0);
        }
        let q = |v: &[f64], p: f64| percentile(v, p).unwrap_or(f64::NAN);
        let bare_ns_per_op = q(&bare_ns, 50.0);
        let machinery_ns_per_op = machinery_ns_per_op();
        Ok(Overhead {
            slice_ns: slice.as_nanos() as u64,
            repeats: pct.len(),
            bare_ns_per_op,
            harness_ns_per_op: q(&harness_ns, 50.0),
            percent: q(&pct, 50.0),
            percent_p25: q(&pct, 25.0),
            percent_p75: q(&pct, 75.0),
            per_repeat_percent: pct,
            machinery_ns_per_op,
            machinery_percent: machinery_ns_per_op / bare_ns_per_op * 100.0,
        })
    }
}

/// The timed loop's cost per operation beyond the bare loop's, around an empty operation.
fn machinery_ns_per_op() -> f64 {
    let stop = AtomicBool::new(false);
    let (mut best_timed, mut best_bare) = (f64::MAX, f64::MAX);
    for _ in 0..11 {
        let mut x = 0u64;
        let m = measure(RunLength::Time(Duration::from_millis(5)), &stop, || {
            x = black_box(x + 1);
            Ok(())
        });
        let Ok(m) = m else { continue };
        let b = bare(m.ops, || {
            x = black_box(x + 1);
            Ok(())
        });
        let Ok(b) = b else { continue };
        best_timed = best_timed.min(m.elapsed.as_nanos() as f64 / m.ops as f64);
        best_bare = best_bare.min(b.as_nanos() as f64 / m.ops as f64);
    }
    (best_timed - best_bare).max(0.0)
}

/// Prepares `spec`, warms it up with one run, and measures its harness overhead with 101 pairs
/// of 10-ms slices. Only scenarios whose measured loop runs on the caller (`madvise-busy`,
/// `storm`, `madv-migrate`, `pingpong`) can be calibrated.
pub fn calibrate_overhead(
    spec: &ScenarioSpec,
    placement: &Placement,
) -> Result<Overhead, LiveError> {
    let mut p = prepare(spec, placement)?;
    p.run_bare(1)?; // refuses multi-task scenarios before the warm-up
    p.run(RunLength::Time(Duration::from_millis(200)))?;
    p.calibrate_overhead(Duration::from_millis(10), 101)
}
