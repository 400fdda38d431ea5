//! Run lengths, samples, the stop flag, and the measured loop.
//!
//! The loop's own work per operation is nothing: operations run in batches of [`BATCH`] through
//! the same inner loop as the bare loop, the stop flag (and, for timed runs, the clock) is
//! checked between batches, and the clock is otherwise read only at the two ends of the run.
//! `calibrate_overhead` measures what is left.

use crate::error::OpError;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one measured run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLength {
    /// This many operations (of each measured task, in multi-task scenarios).
    Ops(u64),
    /// Whole operations until this much time has passed (the run overshoots by less than
    /// [`BATCH`] operations).
    Time(Duration),
}

impl Default for RunLength {
    /// Half a second: long enough to hide the start and stop of the tasks, short enough for
    /// many repetitions.
    fn default() -> RunLength {
        RunLength::Time(Duration::from_millis(500))
    }
}

/// Operations between two checks of the stop flag and the clock.
pub const BATCH: u64 = 64;

/// One measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSample {
    /// Operations done, summed over the measuring tasks.
    pub ops: u64,
    /// Wall time of the run, ns.
    pub elapsed_ns: u64,
    /// The result in the scenario's unit.
    pub value: f64,
    /// Operations per measuring task (tasks that only help, such as spinning siblings, are not
    /// listed); sums to `ops`.
    pub per_task_ops: Vec<u64>,
    /// Whether the stop flag ended the run early (the sample is then partial).
    pub interrupted: bool,
}

/// A flag that ends runs early; set it from a Ctrl-C handler. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// A new, unset flag.
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// A handle on an existing flag, e.g. one that a signal handler sets
    /// (`signal_hook::flag::register`), so that one flag stops the runs and the harness.
    pub fn from_flag(flag: Arc<AtomicBool>) -> StopHandle {
        StopHandle(flag)
    }

    /// Asks the current and every later run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Clears the flag, so that runs may start again.
    pub fn clear(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    /// Whether the flag is set.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// What the measured loop saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Measured {
    pub(crate) ops: u64,
    pub(crate) elapsed: Duration,
    pub(crate) interrupted: bool,
}

/// Runs `op` for `len`, checking `stop` every [`BATCH`] operations.
#[inline(always)]
pub(crate) fn measure<F>(len: RunLength, stop: &AtomicBool, mut op: F) -> Result<Measured, OpError>
where
    F: FnMut() -> Result<(), OpError>,
{
    let (target, time) = match len {
        RunLength::Ops(n) => (n, None),
        RunLength::Time(d) => (u64::MAX, Some(d)),
    };
    let start = Instant::now();
    let deadline = time.map(|d| start + d);
    let mut done = 0u64;
    let mut interrupted = false;
    while done < target {
        let batch = (target - done).min(BATCH);
        ops_loop(batch, &mut op)?;
        done += batch;
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    Ok(Measured { ops: done, elapsed: start.elapsed(), interrupted })
}

/// The bare loop that [`measure`] is calibrated against: `n` operations, nothing else.
#[inline(always)]
pub(crate) fn bare<F>(n: u64, mut op: F) -> Result<Duration, OpError>
where
    F: FnMut() -> Result<(), OpError>,
{
    let start = Instant::now();
    ops_loop(n, &mut op)?;
    Ok(start.elapsed())
}

/// `n` operations: the one inner loop that both [`measure`] and [`bare`] run.
///
/// Not inlined on purpose. When each caller had its own inlined copy, the operation came out
/// about 20 ns (0.4–2.5%) slower in `measure` than in `bare` on madvise-busy, although the
/// harness's own work is 0.3 ns per operation and two identical bare copies agree within 0.2%:
/// the copies were compiled differently around the system call (registers, stack slots), and
/// after a trip through the kernel every extra user cache line is a miss. With one shared
/// out-of-line loop both run the same code and differ only by a call per [`BATCH`].
#[inline(never)]
fn ops_loop<F>(n: u64, op: &mut F) -> Result<(), OpError>
where
    F: FnMut() -> Result<(), OpError>,
{
    for _ in 0..n {
        op()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_runs_do_exactly_the_ops_asked() {
        let stop = AtomicBool::new(false);
        for n in [0, 1, BATCH - 1, BATCH, BATCH + 1, 1000] {
            let mut count = 0;
            let m = measure(RunLength::Ops(n), &stop, || {
                count += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!((m.ops, count, m.interrupted), (n, n, false));
        }
    }

    #[test]
    fn a_set_stop_flag_ends_the_run_after_one_batch() {
        let stop = AtomicBool::new(true);
        let m = measure(RunLength::Time(Duration::from_secs(3600)), &stop, || Ok(())).unwrap();
        assert_eq!((m.ops, m.interrupted), (BATCH, true));
    }

    #[test]
    fn an_op_error_ends_the_run() {
        let stop = AtomicBool::new(false);
        let mut n = 0;
        let err = measure(RunLength::Ops(100), &stop, || {
            n += 1;
            if n == 70 {
                return Err(OpError { what: "madvise", errno: nix::errno::Errno::EINVAL });
            }
            Ok(())
        });
        assert_eq!(err.unwrap_err().what, "madvise");
        assert_eq!(n, 70);
    }
}
