//! One table of bounds: the range of every number the simulator takes from outside (command
//! line, sweep spec, policy file, Python keyword), each checked where it is parsed.
//!
//! Each bound is the largest value the model is meant to run in reasonable time (the comment says
//! why); past it a run allocates beyond memory, wraps a counter, or would run for hours. Where no
//! single number bounds a run's work (`--iterations` times `--pages` times …), the kernel model
//! stops a run after [`MAX_EVENTS`] events instead (docs/sim-output.md, "Limits").
//!
//! ```
//! use tlblab_types::bounds::{BUSY, DISTURB_EVERY};
//!
//! assert_eq!(BUSY.check(4095), Ok(4095));
//! let e = BUSY.check(u64::MAX).unwrap_err();
//! assert_eq!(e.to_string(), "--busy 18446744073709551615 is outside 0 to 4095");
//! assert!(DISTURB_EVERY.contains(0) && !DISTURB_EVERY.contains(10));
//! ```

use std::fmt;

/// The range of one number: `min ..= max`, and 0 as well when 0 means "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The number's name as the command line spells it, less `--` (`disturb-every`); the sweep
    /// spec and Python spell it with `_`.
    pub name: &'static str,
    /// The smallest value (besides 0 when [`Bound::zero_is_none`]).
    pub min: u64,
    /// The largest value.
    pub max: u64,
    /// 0 is accepted below `min`: it switches the feature off.
    pub zero_is_none: bool,
}

/// A number outside its [`Bound`]: names the number, the value and the range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--{name} {value} is outside {range}", name = .bound.name, range = .bound.range())]
pub struct OutOfBounds {
    /// The bound it broke.
    pub bound: Bound,
    /// The value given (as text: it may not fit a `u64`).
    pub value: String,
}

impl Bound {
    const fn new(name: &'static str, min: u64, max: u64) -> Bound {
        Bound { name, min, max, zero_is_none: false }
    }

    /// Whether `value` is in range.
    pub const fn contains(&self, value: u64) -> bool {
        (value >= self.min && value <= self.max) || (self.zero_is_none && value == 0)
    }

    /// `value`, or why it is out of range.
    pub fn check(&self, value: u64) -> Result<u64, OutOfBounds> {
        if self.contains(value) {
            Ok(value)
        } else {
            Err(OutOfBounds { bound: *self, value: value.to_string() })
        }
    }

    /// A decimal number from the command line, checked (one that does not fit a `u64` is out
    /// of range too).
    pub fn parse(&self, text: &str) -> Result<u64, String> {
        let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        match text.parse::<u64>() {
            Ok(n) if self.contains(n) => Ok(n),
            Ok(_) => Err(format!("{text} is outside {}", self.range())),
            Err(_) if digits => Err(format!("{text} is outside {}", self.range())),
            Err(_) => Err(format!("{text:?} is not a whole number ({})", self.range())),
        }
    }

    /// The range in words: `0 to 4095`, or `0 (none) or 10000 to 1000000000000`.
    pub fn range(&self) -> String {
        if self.zero_is_none && self.min > 0 {
            format!("0 (none) or {} to {}", self.min, self.max)
        } else {
            format!("{} to {}", self.min, self.max)
        }
    }

    /// The name as a sweep spec and Python spell it (`disturb_every`).
    pub fn key(&self) -> String {
        self.name.replace('-', "_")
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{} {}", self.name, self.range())
    }
}

// ----- The machine and the policy -----

/// Simulated CPUs. Every flush to all CPUs is one IPI per CPU and each CPU keeps its own TLBs
/// and caches: 4,096 is the most the command line has ever taken, 16× the largest preset.
pub const CPUS: Bound = Bound::new("cpus", 1, 4096);

/// `tlb_single_page_flush_ceiling`: a range flush below it is a loop of one INVLPG per page, so
/// a ceiling past 65,535 pages (256 MiB) turns the large flushes of exec and exit into loops of
/// millions of steps; Linux's default is 33, and 0 makes every flush a full one.
pub const CEILING: Bound = Bound::new("ceiling", 0, 65_535);

/// `hz` (`CONFIG_HZ`, ticks per second) of a policy: x86 Linux offers 100 to 1000; 0 has no
/// tick, and far beyond 10,000 the simulated ticks alone make a run last hours.
pub const HZ: Bound = Bound::new("hz", 1, 10_000);

/// A sweep's seeds (a `seed` axis or `first_seed`): at most half of `u64::MAX`, so that a
/// point's seeds and schedules never pass the largest seed.
pub const SEED: Bound = Bound::new("seed", 0, u64::MAX / 2);

/// Runs per policy (`sim run --seeds`, `sim study --seeds`), each a whole run (`sim run`'s
/// default is 3): a thousand is the most the command line has taken.
pub const SEEDS: Bound = Bound::new("seeds", 1, 1000);

// ----- The safety checker (`sim check`, `kind = "check"` sweeps) -----

/// Perturbed schedules of one check, each a whole run: the studies run 1,000 (quick: 100), and
/// a million of the smallest runs (about 10 ms each) already takes hours.
pub const SCHEDULES: Bound = Bound::new("schedules", 1, 1_000_000);

/// Unperturbed speed runs next to a verdict: as many as `sim run --seeds` takes.
pub const SPEED_RUNS: Bound = Bound::new("speed-runs", 0, 1000);

/// The longest extra IPI delay (also the longest mm-switch stall and disturbance window),
/// cycles. 10^9 cycles is 0.25 s at 4 GHz, far past any real interrupts-off section or host
/// preemption of a vCPU (milliseconds). A run's time grows faster than the delay: lazy-readers
/// with 2 iterations takes 0.02 s at 10^8, 2 s at 10^9 and over 40 s at 2 × 10^10 (issue 29, H2).
pub const MAX_IPI_DELAY: Bound = Bound::new("max-ipi-delay", 0, 1_000_000_000);

/// The mean gap between disturbances on each CPU, cycles (0: none). Below the cost of one
/// disturbance (a kernel thread's preemption and the switch back: two context switches and
/// the kernel entries, about 4,000 cycles on skylake, plus a window of up to
/// [`MAX_IPI_DELAY`]) every CPU is disturbed back to back: a task runs a few tens of cycles
/// between one disturbance's end and the next, and at `--disturb-every 30` (no IPI delay)
/// lazy-readers' writer spent its first 50 million cycles in the kernel, none in user mode,
/// migrated every 200,000 cycles; the run time explodes (issue 29, H1: 300 → 0.05 s, 100 →
/// 1.6 s, 50 → 49 s, 10 → never). 10,000 cycles (2.5 µs at 4 GHz) keeps each CPU undisturbed
/// most of the time, already twenty times the default's rate. Above 10^12 cycles (250 s at
/// 4 GHz) no run lasts long enough to see one.
pub const DISTURB_EVERY: Bound =
    Bound { name: "disturb-every", min: 10_000, max: 1_000_000_000_000, zero_is_none: true };

// ----- Scenario parameters (`tlblab_kernel::workloads::Params`) -----

/// Iterations of the measured loop: the kernel model needs at least 2; a windowed part (S6)
/// sets `i64::MAX` and lets its window end the run, so only [`MAX_EVENTS`] bounds the rest.
pub const ITERATIONS: Bound = Bound::new("iterations", 2, i64::MAX as u64);

/// Pages each side of pingpong touches per round: 2^20 pages (4 GiB) is 256× the largest
/// STLB; each round references them all.
pub const TOUCH: Bound = Bound::new("touch", 0, 1 << 20);

/// Sibling threads spinning, one per CPU after the first: at most [`CPUS`] − 1.
pub const BUSY: Bound = Bound::new("busy", 0, 4095);

/// Tasks of a scenario, one per CPU: at most [`CPUS`].
pub const TASKS: Bound = Bound::new("tasks", 1, 4096);

/// Pages of the region each task works on: 2^24 pages is 64 GiB, whose page tables the model
/// keeps per page (a byte or more each).
pub const PAGES: Bound = Bound::new("pages", 1, 1 << 24);

/// Work per page referenced, cycles: 10^9 (0.25 s at 4 GHz) per page is already a run of
/// minutes of simulated time for a loop over a few pages.
pub const CYCLES_PER_PAGE: Bound = Bound::new("cycles-per-page", 0, 1_000_000_000);

/// kbuild's compile jobs (0: a window of an endless build): 10^7 jobs of about 0.45 CPU-s each
/// is a build of weeks.
pub const JOBS: Bound = Bound::new("jobs", 0, 10_000_000);

/// A window of simulated time, ms: an hour (the cycle counts stay far below `u64::MAX` at any
/// clock).
pub const WINDOW_MS: Bound = Bound::new("window-ms", 0, 3_600_000);

/// Simulated warm-up before a window, ms: as [`WINDOW_MS`].
pub const WARMUP_MS: Bound = Bound::new("warmup-ms", 0, 3_600_000);

/// rt-latency's interrupts-off burst, µs: a second, far past any real one.
pub const BURST_US: Bound = Bound::new("burst-us", 0, 1_000_000);

/// hackbench's groups: 2 × `fds` tasks each, so that 256 groups of 256 make 131,072 tasks, 32×
/// the largest machine; past that the tasks' state alone is hundreds of MB.
pub const GROUPS: Bound = Bound::new("groups", 1, 256);

/// hackbench's senders and receivers per group: see [`GROUPS`].
pub const FDS: Bound = Bound::new("fds", 1, 256);

/// hackbench's messages per sender and receiver: a million; the product with the groups and
/// fds is bounded by [`MAX_EVENTS`].
pub const LOOPS: Bound = Bound::new("loops", 1, 1_000_000);

/// hackbench's bytes per message: one page, so that a pipe write is atomic and a socket
/// message one linear skb (the model's hackbench has no other case).
pub const DATASIZE: Bound = Bound::new("datasize", 1, 4096);

// ----- Other simulator inputs -----

/// Pages of each thread's working set in `sim replay --refill working-set`: as [`TOUCH`],
/// referenced after every flush request.
pub const WORKING_SET: Bound = Bound::new("working-set", 1, 1 << 20);

/// Accesses per `sim demo` workload: 10^9 is about a minute per workload.
pub const ACCESSES: Bound = Bound::new("accesses", 1, 1_000_000_000);

/// Every bound above, for tests and the docs' table.
pub const ALL: &[Bound] = &[
    CPUS,
    CEILING,
    HZ,
    SEED,
    SEEDS,
    SCHEDULES,
    SPEED_RUNS,
    MAX_IPI_DELAY,
    DISTURB_EVERY,
    ITERATIONS,
    TOUCH,
    BUSY,
    TASKS,
    PAGES,
    CYCLES_PER_PAGE,
    JOBS,
    WINDOW_MS,
    WARMUP_MS,
    BURST_US,
    GROUPS,
    FDS,
    LOOPS,
    DATASIZE,
    WORKING_SET,
    ACCESSES,
];

/// Events one run of the kernel model may pop before it is stopped: where no single number
/// bounds a run's work (iterations × pages × tasks, hackbench's groups × fds² × loops,
/// disturbances), this does. The model pops 4 to 10 million events a second (development VM,
/// release build: kbuild's default 1 s window on 4 CPUs is 10 million events in 2.3 s), so a run
/// stopped here has run for minutes, a hundred times that window.
pub const MAX_EVENTS: u64 = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_in_and_one_past_them_is_out() {
        for b in ALL {
            assert!(b.contains(b.min) && b.contains(b.max), "{b}");
            assert_eq!(b.max < u64::MAX, !b.contains(b.max.saturating_add(1)), "{b}");
            if b.min > 0 {
                assert_eq!(b.contains(b.min - 1), b.zero_is_none && b.min == 1, "{b}");
            }
            assert!(b.parse(&u128::from(u64::MAX).saturating_add(1).to_string()).is_err());
        }
        assert!(DISTURB_EVERY.contains(0) && !DISTURB_EVERY.contains(9_999));
    }

    #[test]
    fn an_error_names_the_option_the_value_and_the_range() {
        let e = DISTURB_EVERY.check(10).unwrap_err().to_string();
        assert_eq!(e, "--disturb-every 10 is outside 0 (none) or 10000 to 1000000000000");
        assert_eq!(
            BUSY.parse("18446744073709551616").unwrap_err(),
            "18446744073709551616 is outside 0 to 4095"
        );
        assert!(BUSY.parse("x1").unwrap_err().contains("not a whole number"));
        assert_eq!(BUSY.parse("4095"), Ok(4095));
    }
}
