//! The measurements: each a kernel path, timed in a loop on a pinned thread (never a scenario's
//! own loop).

use crate::cache::CacheKey;
use crate::stats::Measurement;
use crate::sys::{self, Anon};
use crate::{names, Outcome, PathCosts};
use nix::sched::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
use nix::sys::eventfd::EventFd;
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// A timed run lasts at least this long (the iteration count is calibrated to it).
    pub min_run: Duration,
    /// Timed runs per measurement, after one untimed warm-up run.
    pub runs: usize,
    /// Timed runs of the IPI measurements (some are dropped when the IPI was not delivered).
    pub remote_runs: usize,
    /// Measurements not started by then are skipped (with that reason).
    pub budget: Duration,
}

impl Default for Options {
    /// 5 ms runs, 21 timed runs (31 for IPIs), a 30 s budget: about 8 s on this project's VM
    /// when it is quiet, 16 s with both vCPUs busy.
    fn default() -> Options {
        Options {
            min_run: Duration::from_millis(5),
            runs: 21,
            remote_runs: 31,
            budget: Duration::from_secs(30),
        }
    }
}

/// Fraction of operations that must deliver an IPI for an IPI run to be kept (docs/calibration.md:
/// on this project's VM a spinning sibling sometimes makes no progress, and `membarrier` then
/// sends nothing).
pub const DELIVERED: f64 = 0.99;

type Run<'a> = dyn FnMut(u64) -> Result<Duration, String> + 'a;

/// Measures every path on a thread of its own (its pinning does not touch the caller's).
pub fn measure_all(opts: &Options, key: CacheKey) -> PathCosts {
    let opts = opts.clone();
    let started = Instant::now();
    let (joined, steal) = crate::steal::around(|| {
        let worker = std::thread::Builder::new()
            .name("tlblab-pathcost".into())
            .spawn(move || measure_on_this_thread(&opts));
        worker.map(|h| h.join())
    });
    let (cpus, results) = match joined {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => (Vec::new(), failed_all("the measuring thread panicked")),
        Err(e) => (Vec::new(), failed_all(&format!("cannot start the measuring thread: {e}"))),
    };
    PathCosts { key, cpus, seconds: started.elapsed().as_secs_f64(), results, steal }
}

fn failed_all(reason: &str) -> BTreeMap<String, Outcome> {
    names::ALL
        .iter()
        .chain(crate::sequences::ALL.iter())
        .map(|n| (n.to_string(), Outcome::Failed(reason.to_owned())))
        .collect()
}

fn measure_on_this_thread(opts: &Options) -> (Vec<usize>, BTreeMap<String, Outcome>) {
    let started = Instant::now();
    let mut results = BTreeMap::new();
    let cpus = match allowed_cpus() {
        Ok(c) => c,
        Err(e) => return (Vec::new(), failed_all(&e)),
    };
    let local = cpus[0];
    let remote = cpus.get(1).copied();
    if let Err(e) = pin(local) {
        return (cpus, failed_all(&e));
    }
    let call_measured = std::cell::Cell::new(false);
    let mut put = |name: &str, f: &mut dyn FnMut() -> Result<Measurement, String>| {
        let outcome = if started.elapsed() > opts.budget {
            Outcome::Failed(format!("skipped: the {:?} budget was spent", opts.budget))
        } else {
            match f() {
                Ok(m) => Outcome::Measured(m),
                Err(e) => Outcome::Failed(e),
            }
        };
        results.insert(name.to_owned(), outcome);
        // Whatever a measurement did, the next one starts on the local CPU.
        let _ = pin(local);
    };
    let need2 = |what: &str| match remote {
        Some(r) => Ok(r),
        None => Err(format!("{what} needs 2 CPUs; this thread may run only on CPU {local}")),
    };

    put(names::NULL_SYSCALL, &mut || {
        simple(opts, 1 << 24, &mut |ops| {
            let t = Instant::now();
            for _ in 0..ops {
                black_box(nix::unistd::getppid());
            }
            Ok(t.elapsed())
        })
    });
    put(names::FAULT_ZERO, &mut || simple(opts, FAULT_PAGES, &mut |ops| faults(ops, false)));
    put(names::FAULT_ANON, &mut || simple(opts, FAULT_PAGES, &mut |ops| faults(ops, true)));
    put(names::FAULT_ANON_HOT, &mut || refaults(opts));
    put(names::MADVISE_EMPTY, &mut || {
        let region = Anon::map(64).map_err(|e| format!("mmap: {e}"))?;
        simple(opts, 1 << 22, &mut |ops| {
            let t = Instant::now();
            for _ in 0..ops {
                region.dontneed(0..64).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
            }
            Ok(t.elapsed())
        })
    });
    // The paths timed at 1 page and at two sizes above the flush ceiling (the difference of
    // the last two is per-page work only).
    type PerPage = fn(&Options, usize) -> Result<Measurement, String>;
    let per_page: [(&str, usize, PerPage); 7] = [
        (names::DONTNEED_ONE, 1, zap),
        (names::DONTNEED_RANGE, ZAP_RANGE, zap),
        (names::DONTNEED_SMALL, ZAP_SMALL, zap),
        (names::DONTNEED_LARGE, ZAP_LARGE, zap),
        (names::MPROTECT_ONE, 1, protect),
        (names::MPROTECT_SMALL, ZAP_SMALL, protect),
        (names::MPROTECT_LARGE, ZAP_LARGE, protect),
    ];
    for (name, pages, measure) in per_page {
        put(name, &mut || measure(opts, pages));
    }
    // The same syscall with no PTE present: no change, no flush.
    put(names::MPROTECT_EMPTY, &mut || {
        let region = Anon::map(1).map_err(|e| format!("mmap: {e}"))?;
        toggled(opts, &region)
    });
    // Two PTEs changed either way: flushed page by page, or (spread over more pages than the
    // ceiling) fully.
    put(names::MPROTECT_PAIR_NEAR, &mut || protect_pair(opts, 1));
    put(names::MPROTECT_PAIR_FAR, &mut || protect_pair(opts, PAIR_SPAN - 1));
    // What a flush leaves of other pages' translations: the same reads after each kind.
    for (name, flush) in [
        (names::REREAD_AFTER_NONE, Flush::None),
        (names::REREAD_AFTER_INVLPG, Flush::OnePage),
        (names::REREAD_AFTER_FLUSH, Flush::Full),
    ] {
        put(name, &mut || reread(opts, flush));
    }
    put(names::MMAP_MUNMAP, &mut || {
        simple(opts, 1 << 22, &mut |ops| {
            let t = Instant::now();
            for _ in 0..ops {
                sys::map_unmap_untouched(16).map_err(|e| format!("mmap/munmap: {e}"))?;
            }
            Ok(t.elapsed())
        })
    });
    put(names::MUNMAP_SPLIT, &mut || {
        let pair = sys::MergedPair::map().map_err(|e| format!("mmap: {e}"))?;
        simple(opts, 1 << 20, &mut |ops| {
            let mut took = Duration::ZERO;
            for _ in 0..ops {
                let t = Instant::now();
                pair.unmap_upper().map_err(|e| format!("munmap: {e}"))?;
                took += t.elapsed();
                pair.remap_upper().map_err(|e| format!("mmap(MAP_FIXED_NOREPLACE): {e}"))?;
            }
            Ok(took)
        })
    });
    put(names::THREAD_SWITCH, &mut || thread_switch(opts, local));
    put(names::LINE_PINGPONG, &mut || line_pingpong(opts, need2("a cache-line transfer")?));
    put(names::THREAD_WAKE_REMOTE, &mut || thread_switch(opts, need2("a cross-CPU wake-up")?));
    put(names::IPI_CALL_REMOTE, &mut || {
        let remote = need2("a cross-CPU call")?;
        // No perf event: trying again will not help.
        let hopeless = |e: &str| e.starts_with("perf_event_open");
        let m = attempts(hopeless, &mut || call_ipi(opts, remote, remote, true));
        call_measured.set(m.is_ok());
        m
    });
    put(names::IPI_CALL_LOCAL, &mut || call_ipi(opts, local, remote.unwrap_or(local), false));
    put(names::SHOOTDOWN_TARGET, &mut || {
        let remote = need2("a shootdown of another CPU")?;
        attempts(|_| false, &mut || shootdown_target(opts, remote))
    });
    put(names::MEMBARRIER_IPI, &mut || {
        let remote = need2("an IPI round trip")?;
        // A sibling preempted on a busy machine receives no IPI: try again with a new one
        // (once only when the cross-CPU call measured the round trip already).
        let attempts = if call_measured.get() { 1 } else { IPI_ATTEMPTS };
        let mut failures = Vec::new();
        for _ in 0..attempts {
            match membarrier(opts, remote, true) {
                Ok(mut m) => {
                    if !failures.is_empty() {
                        let earlier = format!("after {} failed attempt(s)", failures.len());
                        m.note =
                            Some(m.note.map_or(earlier.clone(), |n| format!("{n}; {earlier}")));
                    }
                    return Ok(m);
                }
                Err(e) => failures.push(e),
            }
        }
        Err(failures.join("; "))
    });
    put(names::MEMBARRIER_NO_IPI, &mut || membarrier(opts, need2("the IPI baseline")?, false));
    put(names::PIPE_PAIR, &mut || message_pair(opts, pipe_files()?, "pipe"));
    put(names::SOCKET_PAIR, &mut || message_pair(opts, socket_files()?, "socket"));
    put(names::PIPE_REMOTE_READ, &mut || {
        remote_read(opts, need2("a read on another CPU")?, pipe_files()?, "pipe")
    });
    put(names::SOCKET_REMOTE_READ, &mut || {
        remote_read(opts, need2("a read on another CPU")?, socket_files()?, "socket")
    });
    put(names::PIPE_QUEUED, &mut || queued(opts, pipe_files, "pipe"));
    put(names::SOCKET_QUEUED, &mut || queued(opts, socket_files, "socket"));
    put(names::PIPE_WRITE, &mut || pipe_wake(opts, local, None));
    put(names::PIPE_WAKE_LOCAL, &mut || pipe_wake(opts, local, Some((local, local))));
    put(names::PIPE_WAKE_REMOTE, &mut || {
        let remote = need2("a cross-CPU wake-up")?;
        pipe_wake(opts, local, Some((remote, remote)))
    });
    put(names::VMEXIT_CPUID, &mut || simple(opts, 1 << 22, &mut cpuid_loop));
    put(names::MIGRATE, &mut || migrate(opts, local, need2("a migration")?));
    // Both fork figures come from one child (see fork_pair).
    let mut forks = None;
    let mut pair =
        |i: usize| forks.get_or_insert_with(|| fork_pair(opts)).clone().map(|p| p[i].clone());
    put(names::FORK_EXIT, &mut || pair(0));
    put(names::FORK_EXIT_GROWN, &mut || pair(1));
    for name in crate::sequences::ALL {
        put(name, &mut || {
            simple(opts, 1 << 26, &mut |ops| {
                let t = Instant::now();
                crate::sequences::run(name, ops)?;
                Ok(t.elapsed())
            })
        });
    }
    (cpus, results)
}

/// Attempts at the IPI round trip before giving up.
const IPI_ATTEMPTS: usize = 3;

/// The first of up to [`IPI_ATTEMPTS`] tries of `measure` that succeeds (a sibling preempted on
/// a busy machine receives no IPI; a new one may); an error that `hopeless` says no retry can
/// mend ends the tries with that error, else the failures are joined.
fn attempts(
    hopeless: impl Fn(&str) -> bool,
    measure: &mut dyn FnMut() -> Result<Measurement, String>,
) -> Result<Measurement, String> {
    let mut failures = Vec::new();
    for _ in 0..IPI_ATTEMPTS {
        match measure() {
            Ok(m) => return Ok(m),
            Err(e) if hopeless(&e) => return Err(e),
            Err(e) => failures.push(e),
        }
    }
    Err(failures.join("; "))
}

/// Pages per fault run (the cap of its calibration): 16 MiB, fresh each run
/// (`minor_fault_anon`; `tlblab_sim`'s `FAULT_COLD_PAGES` is the same).
pub const FAULT_PAGES: u64 = 4096;
/// Pages of the ranged `MADV_DONTNEED`: below the kernel's single-page flush ceiling (33), so
/// it flushes page by page (INVLPG); with `dontneed_1`, the cost of one more page of a ranged
/// flush.
pub const ZAP_RANGE: usize = 16;
/// Pages read after each flush by the `reread_after_*` loops: fewer than every preset's STLB
/// holds, more than an L1 dTLB.
pub const REREAD_PAGES: usize = 64;
/// Pages of the small and large `MADV_DONTNEED`: both above the kernel's single-page flush
/// ceiling (33), so both flush the whole TLB and the difference is zapping only.
pub const ZAP_SMALL: usize = 64;
/// See [`ZAP_SMALL`].
pub const ZAP_LARGE: usize = 256;

/// Calibrates the operation count (which also warms up), makes one warm-up run and
/// `opts.runs` timed runs.
fn simple(opts: &Options, max_ops: u64, run: &mut Run) -> Result<Measurement, String> {
    let ops = calibrate(opts.min_run, max_ops, run)?;
    fixed(opts, ops, run)
}

/// One warm-up run of `ops` operations and `opts.runs` timed runs.
fn fixed(opts: &Options, ops: u64, run: &mut Run) -> Result<Measurement, String> {
    per_op_runs(opts, ops, || Ok(run(ops)?.as_nanos() as f64 / ops as f64))
}

/// One warm-up run and `opts.runs` timed runs of `run`, which gives each run's figure per
/// operation itself (a time, or the difference of two) over `ops` operations.
fn per_op_runs(
    opts: &Options,
    ops: u64,
    mut run: impl FnMut() -> Result<f64, String>,
) -> Result<Measurement, String> {
    run()?;
    let per_op = (0..opts.runs).map(|_| run()).collect::<Result<Vec<f64>, String>>()?;
    Measurement::of(&per_op, opts.runs, ops).ok_or_else(|| "no timed run".to_owned())
}

/// Grows the operation count until a run lasts `min_run` (or `max_ops` is reached). One
/// operation is run first and not counted: a cold first call (a partner thread still starting,
/// code not yet paged in) would otherwise fix the count at 1.
fn calibrate(min_run: Duration, max_ops: u64, run: &mut Run) -> Result<u64, String> {
    run(1)?;
    let mut ops = 1u64;
    loop {
        let took = run(ops)?;
        if took >= min_run || ops >= max_ops {
            return Ok(ops);
        }
        let guess = if took.is_zero() {
            ops.saturating_mul(64)
        } else {
            (ops as u128 * min_run.as_nanos() * 5 / 4 / took.as_nanos()).min(u64::MAX as u128)
                as u64
        };
        ops = guess.clamp(ops.saturating_mul(2), ops.saturating_mul(64)).min(max_ops);
    }
}

/// First touches of `ops` fresh pages (reads map the zero page; writes allocate); the mapping
/// and unmapping are not timed.
fn faults(ops: u64, write: bool) -> Result<Duration, String> {
    let region = Anon::map(ops as usize).map_err(|e| format!("mmap of {ops} pages: {e}"))?;
    let mut sum = 0u8;
    let t = Instant::now();
    for page in 0..ops as usize {
        if write {
            region.write(page);
        } else {
            sum = sum.wrapping_add(region.read(page));
        }
    }
    let took = t.elapsed();
    black_box(sum);
    drop(region);
    Ok(took)
}

/// Pages the `minor_fault_anon_hot` loop refaults (1 MiB, well inside any L2;
/// `tlblab_sim`'s `FAULT_HOT_PAGES` is the same).
pub const HOT_FAULT_PAGES: usize = 256;

/// First writes of [`HOT_FAULT_PAGES`] pages that an untimed `MADV_DONTNEED` of all of them
/// freed just before, again and again: each fault gets a frame this CPU freed a moment ago
/// (the per-CPU free list hands out the page freed last). A written page at each end keeps
/// the PTE table; the DONTNEED is past the flush ceiling, a full flush.
fn refaults(opts: &Options) -> Result<Measurement, String> {
    let region = Anon::map(HOT_FAULT_PAGES + 2).map_err(|e| format!("mmap: {e}"))?;
    region.write(0);
    region.write(HOT_FAULT_PAGES + 1);
    let mut run = |rounds: u64| {
        let mut took = Duration::ZERO;
        for _ in 0..rounds {
            let t = Instant::now();
            for page in 1..=HOT_FAULT_PAGES {
                region.write(page);
            }
            took += t.elapsed();
            region
                .dontneed(1..HOT_FAULT_PAGES + 1)
                .map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
        }
        Ok(took)
    };
    let rounds = calibrate(opts.min_run, 1 << 16, &mut run)?;
    let faults = (rounds * HOT_FAULT_PAGES as u64) as f64;
    per_op_runs(opts, rounds, || Ok(run(rounds)?.as_nanos() as f64 / faults))
}

/// `MADV_DONTNEED` of `pages` present pages, timed alone (the writes that make them present
/// are not). A populated page at each end of the region keeps every PTE table in use, so the
/// kernel never frees a table (which would make the flush a freed-tables flush).
fn zap(opts: &Options, pages: usize) -> Result<Measurement, String> {
    let region = Anon::map(ZAP_LARGE + 2).map_err(|e| format!("mmap: {e}"))?;
    region.write(0);
    region.write(ZAP_LARGE + 1);
    simple(opts, 1 << 16, &mut |ops| {
        let mut took = Duration::ZERO;
        for _ in 0..ops {
            for page in 1..=pages {
                region.write(page);
            }
            let t = Instant::now();
            region.dontneed(1..pages + 1).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
            took += t.elapsed();
        }
        Ok(took)
    })
}

/// `mprotect` of `pages` present pages, read-only and read-write by turns: every call changes
/// each PTE's write bit, and on x86 either direction needs a flush (`pte_needs_flush()`: `_PAGE_RW`
/// is a flush-on-change flag), so each call flushes. The region is left read-write.
fn protect(opts: &Options, pages: usize) -> Result<Measurement, String> {
    let region = Anon::map(pages).map_err(|e| format!("mmap: {e}"))?;
    for page in 0..pages {
        region.write(page);
    }
    toggled(opts, &region)
}

/// `mprotect` of the whole of `region`, read-only and read-write by turns, timed; the region is
/// left read-write.
fn toggled(opts: &Options, region: &Anon) -> Result<Measurement, String> {
    simple(opts, 1 << 20, &mut |ops| {
        let t = Instant::now();
        for op in 0..ops {
            region.protect(op % 2 == 1).map_err(|e| format!("mprotect: {e}"))?;
        }
        let took = t.elapsed();
        region.protect(true).map_err(|e| format!("mprotect: {e}"))?;
        Ok(took)
    })
}

/// Pages of the VMA of the `mprotect_2_*` loops: one more than the single-page flush ceiling
/// (33), so that two present pages at its ends make a range the kernel flushes fully.
pub const PAIR_SPAN: usize = 34;

/// `mprotect` (read-only and read-write by turns) of a [`PAIR_SPAN`]-page VMA of which only
/// page 0 and page `second` are present: the same two PTE changes, flushed by two INVLPGs when
/// the pages are neighbours, fully when they span more than the ceiling (`tlb_flush_pte_range()`
/// gathers the changed PTEs' range).
fn protect_pair(opts: &Options, second: usize) -> Result<Measurement, String> {
    let region = Anon::map(PAIR_SPAN).map_err(|e| format!("mmap: {e}"))?;
    region.write(0);
    region.write(second);
    toggled(opts, &region)
}

/// What the `reread_after_*` loops run before each timed read: an `mprotect` that flushes
/// nothing, one page, or everything.
#[derive(Clone, Copy, Debug)]
enum Flush {
    /// `mprotect` of a page never touched: no PTE is present, so nothing is flushed.
    None,
    /// `mprotect` of one present page: a one-page flush, one `INVLPG` (below the ceiling).
    OnePage,
    /// `mprotect` of [`ZAP_SMALL`] present pages: above the ceiling, a full flush (a CR3 write).
    Full,
}

/// Per page: the time to read one byte of each of [`REREAD_PAGES`] present pages of another
/// region right after an `mprotect` (read-only and read-write by turns) that flushed `flush`;
/// only the reads are timed. After a flush that kept their translations the reads hit the
/// TLBs; after one that dropped them, each walks.
fn reread(opts: &Options, flush: Flush) -> Result<Measurement, String> {
    let pages = match flush {
        Flush::None | Flush::OnePage => 1,
        Flush::Full => ZAP_SMALL,
    };
    let target = Anon::map(pages).map_err(|e| format!("mmap: {e}"))?;
    if !matches!(flush, Flush::None) {
        for page in 0..pages {
            target.write(page);
        }
    }
    let others = Anon::map(REREAD_PAGES).map_err(|e| format!("mmap: {e}"))?;
    for page in 0..REREAD_PAGES {
        others.write(page);
    }
    let mut run = |ops: u64| {
        let mut took = Duration::ZERO;
        for op in 0..ops {
            target.protect(op % 2 == 1).map_err(|e| format!("mprotect: {e}"))?;
            let t = Instant::now();
            for page in 0..REREAD_PAGES {
                black_box(others.read(page));
            }
            took += t.elapsed();
        }
        target.protect(true).map_err(|e| format!("mprotect: {e}"))?;
        Ok(took)
    };
    // The reads alone are short: calibrate on the whole loop's time, report per page.
    let ops = calibrate(opts.min_run / 8, 1 << 20, &mut run)?;
    let pages = (ops * REREAD_PAGES as u64) as f64;
    per_op_runs(opts, ops, || Ok(run(ops)?.as_nanos() as f64 / pages))
}

fn cpuid_loop(ops: u64) -> Result<Duration, String> {
    #[cfg(target_arch = "x86_64")]
    {
        let t = Instant::now();
        for _ in 0..ops {
            black_box(std::arch::x86_64::__cpuid(black_box(0)));
        }
        Ok(t.elapsed())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ops;
        Err("CPUID exists only on x86-64".into())
    }
}

/// Two threads of this process on `cpu` pass a token through two eventfds; one operation is a
/// round trip (2 switches, 2 writes with their wake-ups, 2 reads); the figure is per switch.
/// Two threads pass a token through eventfds, the partner pinned to `cpu`: on the own CPU each
/// pass is a switch; on the other, a wake-up of a thread whose CPU idles. Per pass.
fn thread_switch(opts: &Options, cpu: usize) -> Result<Measurement, String> {
    let a = Arc::new(EventFd::new().map_err(|e| format!("eventfd: {e}"))?);
    let b = Arc::new(EventFd::new().map_err(|e| format!("eventfd: {e}"))?);
    let (pa, pb) = (Arc::clone(&a), Arc::clone(&b));
    let partner = std::thread::spawn(move || -> Result<(), String> {
        pin(cpu)?;
        loop {
            let v = pa.read().map_err(|e| format!("eventfd read: {e}"))?;
            if v >= 2 {
                return Ok(());
            }
            pb.write(1).map_err(|e| format!("eventfd write: {e}"))?;
        }
    });
    let result = simple(opts, 1 << 20, &mut |ops| {
        let t = Instant::now();
        for _ in 0..ops {
            a.write(1).map_err(|e| format!("eventfd write: {e}"))?;
            b.read().map_err(|e| format!("eventfd read: {e}"))?;
        }
        Ok(t.elapsed())
    });
    let _ = a.write(2);
    let joined = partner.join().map_err(|_| "the partner thread panicked".to_owned())?;
    joined?;
    result.map(|m| halved(m, "per pass: half a round trip"))
}

/// A round-trip measurement as one of its two halves.
fn halved(mut m: Measurement, note: &str) -> Measurement {
    m.median_ns /= 2.0;
    m.p10_ns /= 2.0;
    m.p90_ns /= 2.0;
    m.note = Some(note.into());
    m
}

/// Spins until `done`, or fails once `partner` (the thread that would make it so) has stopped:
/// a partner whose CPU refused it, or whose read failed, never answers.
fn spin_until(
    done: impl Fn() -> bool,
    partner: &std::thread::JoinHandle<Result<(), String>>,
    who: &str,
) -> Result<(), String> {
    let mut spins = 0u32;
    while !done() {
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && partner.is_finished() {
            return Err(format!("{who} stopped"));
        }
    }
    Ok(())
}

/// Round trips per run of [`line_pingpong`]: 10–50 ms at the 0.1–0.5 µs a round trip takes on
/// this project's guest, far above a timer tick.
const LINE_ROUND_TRIPS: u64 = 100_000;

/// One cache line passed between this thread and a partner spinning on `remote`: each side
/// waits for the other's store to a counter (odd: the partner's turn) and answers with the
/// next value; one operation is a round trip, i.e. two transfers of the line, and the figure
/// is half of it.
fn line_pingpong(opts: &Options, remote: usize) -> Result<Measurement, String> {
    /// The counter alone in its line.
    #[repr(align(64))]
    struct Line(AtomicU64);
    const STOP: u64 = u64::MAX;
    let line = Arc::new(Line(AtomicU64::new(0)));
    let theirs = Arc::clone(&line);
    let partner = std::thread::spawn(move || -> Result<(), String> {
        pin(remote)?;
        let mut seen = 0;
        loop {
            let v = theirs.0.load(Ordering::Acquire);
            if v == STOP {
                return Ok(());
            }
            if v % 2 == 1 && v != seen {
                seen = v + 1;
                theirs.0.store(seen, Ordering::Release);
            }
            std::hint::spin_loop();
        }
    });
    let mut next = 1u64;
    let mut round_trips = |ops: u64| {
        let t = Instant::now();
        for _ in 0..ops {
            line.0.store(next, Ordering::Release);
            let answer = next + 1;
            spin_until(|| line.0.load(Ordering::Acquire) == answer, &partner, "the partner")?;
            next += 2;
        }
        Ok(t.elapsed())
    };
    // The first answer comes once the partner runs on its CPU. The count is fixed, not
    // calibrated: a partner's vCPU held by the host for a few ms would make a calibrated run a
    // handful of round trips long.
    let result = round_trips(1).and_then(|_| fixed(opts, LINE_ROUND_TRIPS, &mut round_trips));
    line.0.store(STOP, Ordering::Release);
    let joined = partner.join().map_err(|_| "the partner thread panicked".to_owned())?;
    joined?;
    result.map(|m| halved(m, "per transfer: half a round trip"))
}

/// A spinning sibling's loop takes tens of ns; a pause between two of its clock reads longer
/// than this was time taken from it (an interrupt, or its vCPU held by the host).
const STOLEN_MIN: Duration = Duration::from_nanos(500);
/// A pause longer than this is not an interrupt's handling (microseconds) but the host running
/// something else on the sibling's CPU: left out of the stolen time.
const STOLEN_MAX: Duration = Duration::from_micros(200);

/// A sibling thread on `cpu`: spinning in user mode, or blocked in `read()` (its CPU idle).
struct Sibling {
    stop: Arc<AtomicBool>,
    /// The spinning sibling's loop count.
    progress: Arc<AtomicU64>,
    /// The spinning sibling's stolen time, in ns: the sum of the pauses between two of its
    /// clock reads of [`STOLEN_MIN`] to [`STOLEN_MAX`]. NOTE: its timer ticks count too (at
    /// 250 Hz a few µs per ms at most, well under 1% of the interrupts measured with it).
    stolen_ns: Arc<AtomicU64>,
    wake: Arc<EventFd>,
    handle: std::thread::JoinHandle<Result<(), String>>,
}

impl Sibling {
    fn start(cpu: usize, spin: bool) -> Result<Sibling, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(AtomicU64::new(0));
        let stolen_ns = Arc::new(AtomicU64::new(0));
        let wake = Arc::new(EventFd::new().map_err(|e| format!("eventfd: {e}"))?);
        let (s, r, w) = (Arc::clone(&stop), Arc::clone(&ready), Arc::clone(&wake));
        let (p, stolen) = (Arc::clone(&progress), Arc::clone(&stolen_ns));
        let handle = std::thread::spawn(move || -> Result<(), String> {
            let pinned = pin(cpu);
            r.store(true, Ordering::Release);
            pinned?;
            if spin {
                let mut last = Instant::now();
                while !s.load(Ordering::Relaxed) {
                    p.fetch_add(1, Ordering::Relaxed);
                    let now = Instant::now();
                    let pause = now.duration_since(last);
                    if (STOLEN_MIN..=STOLEN_MAX).contains(&pause) {
                        stolen.fetch_add(pause.as_nanos() as u64, Ordering::Relaxed);
                    }
                    last = now;
                }
            } else {
                w.read().map_err(|e| format!("eventfd read: {e}"))?;
            }
            Ok(())
        });
        let t = Instant::now();
        while !ready.load(Ordering::Acquire) && t.elapsed() < Duration::from_secs(1) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20)); // spinning, or blocked
        Ok(Sibling { stop, progress, stolen_ns, wake, handle })
    }

    fn stop(self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.write(1);
        self.handle.join().map_err(|_| "the sibling thread panicked".to_owned())?
    }
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` with a sibling thread spinning on `remote`
/// (one IPI round trip per call: runs that did not deliver ≥ [`DELIVERED`] IPIs per call, as
/// counted in the `CAL` row of `/proc/interrupts`, are dropped), or blocked there (no IPI: the
/// syscall alone). NOTE: `membarrier_private_expedited()` IPIs only the CPUs whose current task
/// uses the caller's mm; a sibling that is runnable but waiting behind other tasks of its CPU
/// receives nothing (docs/calibration.md, "Why membarrier sent no IPI here").
fn membarrier(opts: &Options, remote: usize, spin: bool) -> Result<Measurement, String> {
    sys::membarrier(sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
        .map_err(|e| format!("membarrier register: {e}"))?;
    let sibling = Sibling::start(remote, spin)?;
    let mut run = |ops: u64| -> Result<Duration, String> {
        let t = Instant::now();
        for _ in 0..ops {
            sys::membarrier(sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED)
                .map_err(|e| format!("membarrier: {e}"))?;
        }
        Ok(t.elapsed())
    };
    let (loops, since) = (sibling.progress.load(Ordering::Relaxed), Instant::now());
    let progress = Arc::clone(&sibling.progress);
    let none = |median: f64| {
        let rate = (progress.load(Ordering::Relaxed) - loops) as f64
            / since.elapsed().as_secs_f64().max(1e-9)
            / 1e6;
        format!(
            "no run delivered ≥ {DELIVERED} IPIs per call to CPU {remote} (median {median:.2}) \
             while the spinning sibling made {rate:.0} loops/µs there (0: it was not running; \
             more: it shared its CPU with other tasks, or the kernel sent no IPI to a running \
             thread of this mm)"
        )
    };
    let result =
        counted(opts, (remote, Row::Call), spin, (1 << 22, Figure::PerOp), &mut run, &none);
    let stopped = sibling.stop();
    let m = result?;
    stopped?;
    Ok(m)
}

/// The `/proc/interrupts` row a counted measurement reads.
#[derive(Clone, Copy)]
enum Row {
    /// `CAL`: function-call interrupts (membarrier's and the perf event's calls; on current
    /// kernels shootdowns too).
    Call,
    /// `TLB`: shootdowns received (`flush_tlb_func()` run for another CPU).
    Tlb,
}

impl Row {
    fn label(self) -> &'static str {
        match self {
            Row::Call => "CAL",
            Row::Tlb => "TLB",
        }
    }
}

/// What a counted run's figure is.
#[derive(Clone, Copy)]
enum Figure<'a> {
    /// The caller's time per operation.
    PerOp,
    /// A spinning sibling's stolen time ([`Sibling::stolen_ns`]) per interrupt it received.
    StolenPerIpi(&'a AtomicU64),
}

/// Runs `run` as [`simple`] does but with `opts.remote_runs` timed runs, counting around each
/// the interrupts of `row` that `cpu` receives; with `require`, only runs that delivered ≥
/// [`DELIVERED`] per operation are kept (`none` says why there is no such run, given the median
/// delivered). The median delivered per operation of the kept runs is recorded either way.
fn counted(
    opts: &Options,
    (cpu, row): (usize, Row),
    require: bool,
    (max_ops, figure): (u64, Figure),
    run: &mut Run,
    none: &dyn Fn(f64) -> String,
) -> Result<Measurement, String> {
    let ops = calibrate(opts.min_run, max_ops, run)?;
    run(ops)?;
    let stolen = || match figure {
        Figure::PerOp => 0,
        Figure::StolenPerIpi(ns) => ns.load(Ordering::Relaxed),
    };
    let mut kept = Vec::new();
    let mut delivered = Vec::new();
    let mut all = Vec::new();
    for _ in 0..opts.remote_runs {
        let (before, stolen_before) = (interrupts(row, cpu)?, stolen());
        let took = run(ops)?;
        let (after, stolen_after) = (interrupts(row, cpu)?, stolen());
        let received = after.saturating_sub(before);
        let ipis = received as f64 / ops as f64;
        all.push(ipis);
        if !require || ipis >= DELIVERED {
            kept.push(match figure {
                Figure::PerOp => took.as_nanos() as f64 / ops as f64,
                Figure::StolenPerIpi(_) => {
                    stolen_after.saturating_sub(stolen_before) as f64 / received.max(1) as f64
                }
            });
            delivered.push(ipis);
        }
    }
    let mut m = Measurement::of(&kept, opts.remote_runs, ops)
        .ok_or_else(|| none(crate::stats::percentile(&all, 0.5).unwrap_or(0.0)))?;
    m.ipis_per_op = crate::stats::percentile(&delivered, 0.5);
    if require && kept.len() < opts.remote_runs {
        m.note = Some(format!(
            "{} of {} runs dropped: fewer than {DELIVERED} {} interrupts per call delivered",
            opts.remote_runs - kept.len(),
            opts.remote_runs,
            row.label()
        ));
    }
    Ok(m)
}

/// What a running target loses to one shootdown: a sibling thread of this process spins in
/// user mode on `remote` (so that CPU runs this mm and every flush must reach it) while this
/// thread writes one page (untimed) and `MADV_DONTNEED`s it: one one-page flush, hence one
/// shootdown IPI to `remote`, per call. The figure is the sibling's stolen time per `TLB`
/// interrupt it received: the interrupt's delivery (in a guest, the exit and injection), its
/// handler and `flush_tlb_func()` with its `INVLPG`. Runs that delivered fewer than
/// [`DELIVERED`] per call are dropped. A populated page on each side keeps the PTE table in
/// use, as in [`zap`].
fn shootdown_target(opts: &Options, remote: usize) -> Result<Measurement, String> {
    let region = Anon::map(3).map_err(|e| format!("mmap: {e}"))?;
    region.write(0);
    region.write(2);
    let sibling = Sibling::start(remote, true)?;
    let mut run = |ops: u64| -> Result<Duration, String> {
        let t = Instant::now();
        for _ in 0..ops {
            region.write(1);
            region.dontneed(1..2).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
        }
        Ok(t.elapsed())
    };
    let none = |median: f64| {
        format!(
            "no run delivered ≥ {DELIVERED} shootdowns per call to CPU {remote} (median \
             {median:.2}; with paravirtual TLB flush, a vCPU that the host had preempted is \
             flushed at its next entry, without an IPI)"
        )
    };
    let figure = Figure::StolenPerIpi(&sibling.stolen_ns);
    let result = counted(opts, (remote, Row::Tlb), true, (1 << 20, figure), &mut run, &none);
    let stopped = sibling.stop();
    let m = result?;
    stopped?;
    Ok(m)
}

/// A cross-CPU function call on demand: `PERF_EVENT_IOC_ENABLE` and `_DISABLE`, alternately, of
/// a software perf event bound to `target` ([`sys::CpuEvent`]); each `ioctl` runs the perf
/// core's enable or disable function on `target` through `smp_call_function_single(…, wait =
/// 1)`, whose initiator spins until the target has run it. With `remote` (`target` is the
/// other CPU, where a sibling spins so that the target vCPU is running, as a shootdown's
/// targets are) every run must deliver ≥ [`DELIVERED`] `CAL` interrupts per call to `watch`;
/// on the own CPU the function is called directly (no IPI) and `watch`'s count shows none.
fn call_ipi(
    opts: &Options,
    target: usize,
    watch: usize,
    remote: bool,
) -> Result<Measurement, String> {
    let event = sys::CpuEvent::open(target).map_err(|e| {
        format!(
            "perf_event_open of a software event on CPU {target}: {e} (needs CAP_PERFMON or \
             root, or kernel.perf_event_paranoid ≤ 0)"
        )
    })?;
    let sibling = if remote { Some(Sibling::start(target, true)?) } else { None };
    let mut run = |ops: u64| -> Result<Duration, String> {
        let t = Instant::now();
        for _ in 0..ops {
            event.toggle().map_err(|e| format!("ioctl(PERF_EVENT_IOC_ENABLE/DISABLE): {e}"))?;
        }
        Ok(t.elapsed())
    };
    let none = |median: f64| {
        format!(
            "no run delivered ≥ {DELIVERED} function-call IPIs per call to CPU {target} \
             (median {median:.2})"
        )
    };
    let result =
        counted(opts, (watch, Row::Call), remote, (1 << 20, Figure::PerOp), &mut run, &none);
    if let Some(s) = sibling {
        s.stop()?;
    }
    result
}

/// hackbench's message size (`--datasize` default, rt-tests `hackbench.c`).
pub const MESSAGE: usize = 100;

/// What every message of the channel loops carries: [`MESSAGE`] bytes.
const PAYLOAD: [u8; MESSAGE] = [0x5a; MESSAGE];

/// One `write()` of a message into `f`, whole (`what` names the channel in an error).
fn send(f: &std::fs::File, what: &str) -> Result<(), String> {
    use std::io::Write;
    match (&*f).write(&PAYLOAD) {
        Ok(MESSAGE) => Ok(()),
        Ok(n) => Err(format!("{what}: wrote {n} of {MESSAGE} bytes")),
        Err(e) => Err(format!("{what} write: {e}")),
    }
}

/// One `read()` of a message from `f` into `back`, whole.
fn receive(f: &std::fs::File, back: &mut [u8; MESSAGE], what: &str) -> Result<(), String> {
    use std::io::Read;
    match (&*f).read(back) {
        Ok(MESSAGE) => Ok(()),
        Ok(n) => Err(format!("{what}: read {n} of {MESSAGE} bytes")),
        Err(e) => Err(format!("{what} read: {e}")),
    }
}

/// One `write()` of [`MESSAGE`] bytes into a channel and one `read()` of them back, by one
/// thread (`what` names it: a pipe, or an `AF_UNIX` `SOCK_STREAM` socket pair, hackbench's
/// default transport, written at one end and read at the other). The reader never sleeps, so
/// there is no wake-up (the channel is empty before each write, so the write's wake-up, e.g.
/// `pipe_write()`'s, finds an empty wait queue).
fn message_pair(
    opts: &Options,
    (read_end, write_end): (std::fs::File, std::fs::File),
    what: &str,
) -> Result<Measurement, String> {
    let mut back = [0_u8; MESSAGE];
    simple(opts, 1 << 22, &mut |ops| {
        let t = Instant::now();
        for _ in 0..ops {
            send(&write_end, what)?;
            receive(&read_end, &mut back, what)?;
        }
        Ok(t.elapsed())
    })
}

/// Messages per hand-off of [`remote_read`]: far below what fills a pipe (16 pages) or a socket's
/// send buffer (277 skbs of 768 bytes), so neither side ever blocks.
const REMOTE_BATCH: usize = 64;
/// Hand-offs per run of [`remote_read`], each beside a batch kept on one CPU.
const REMOTE_ROUNDS: usize = 50;

/// What reading a [`MESSAGE`] costs more when another CPU wrote it, per message, over the
/// channel `(read end, write end)`: a batch of [`REMOTE_BATCH`] messages written here and read
/// by a thread on `remote`, which spins until it is handed the turn (no wake-up), less the same
/// batch written and read here; the two alternate batch by batch, so a drift of the host's
/// speed touches both alike. What is left is the reader's misses on what the writer wrote (the
/// data, a socket's skb, the buffer's page) and what each side does to the other's memory (a
/// socket frees the writer's skb and uncharges its send buffer from the reader's CPU).
fn remote_read(
    opts: &Options,
    remote: usize,
    (read_end, write_end): (std::fs::File, std::fs::File),
    what: &'static str,
) -> Result<Measurement, String> {
    const MAIN: u8 = 0;
    const PARTNER: u8 = 1;
    const STOP: u8 = 2;
    let read_batch = move |f: &std::fs::File| {
        let mut back = [0_u8; MESSAGE];
        (0..REMOTE_BATCH).try_for_each(|_| receive(f, &mut back, what))
    };
    let turn = Arc::new(std::sync::atomic::AtomicU8::new(MAIN));
    let (theirs, reader) = (Arc::clone(&turn), Arc::new(read_end));
    let their_reader = Arc::clone(&reader);
    let partner = std::thread::spawn(move || -> Result<(), String> {
        pin(remote)?;
        loop {
            match theirs.load(Ordering::Acquire) {
                PARTNER => {
                    read_batch(&their_reader)?;
                    theirs.store(MAIN, Ordering::Release);
                }
                STOP => return Ok(()),
                _ => std::hint::spin_loop(),
            }
        }
    });
    let write_batch = || (0..REMOTE_BATCH).try_for_each(|_| send(&write_end, what));
    // Named once, outside the timed rounds.
    let who = format!("the {what} reader on CPU {remote}");
    // One run: the extra per message of the batches read on `remote`.
    let run = || -> Result<f64, String> {
        let (mut there, mut here) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..REMOTE_ROUNDS {
            let t = Instant::now();
            write_batch()?;
            turn.store(PARTNER, Ordering::Release);
            spin_until(|| turn.load(Ordering::Acquire) == MAIN, &partner, &who)?;
            there += t.elapsed();
            let t = Instant::now();
            write_batch()?;
            read_batch(&reader)?;
            here += t.elapsed();
        }
        let messages = (REMOTE_ROUNDS * REMOTE_BATCH) as f64;
        Ok((there.as_nanos() as f64 - here.as_nanos() as f64) / messages)
    };
    let result = per_op_runs(opts, (REMOTE_ROUNDS * REMOTE_BATCH) as u64, run);
    turn.store(STOP, Ordering::Release);
    let joined = partner.join().map_err(|_| "the partner thread panicked".to_owned())?;
    joined?;
    result
}

/// What a [`MESSAGE`] costs more, written and read, when many others were written between the
/// two, per message: one thread writes [`crate::QUEUED_DEPTH`] messages into each of
/// [`crate::QUEUED_CHANNELS`] channels made by `open`, one channel after another per message as
/// hackbench's senders do, then reads each channel empty (a deep round); less the same count
/// written and read one per channel at a time (a shallow round); the two alternate, one each per
/// run. What is left is the misses on the queued messages (the skb and its data, the pipe's
/// buffer pages), which were written while thousands of others went through this CPU's caches,
/// and the writes' allocation of buffers not recently freed. The write ends are non-blocking: a
/// channel that fills before its depth (a smaller socket buffer) fails the measurement with the
/// count, rather than hanging it.
fn queued(
    opts: &Options,
    open: fn() -> Result<(std::fs::File, std::fs::File), String>,
    what: &'static str,
) -> Result<Measurement, String> {
    use std::os::fd::AsFd;
    let channels: Vec<(std::fs::File, std::fs::File)> =
        (0..crate::QUEUED_CHANNELS).map(|_| open()).collect::<Result<_, _>>()?;
    for (_, w) in &channels {
        let flags = nix::fcntl::fcntl(w.as_fd(), nix::fcntl::FcntlArg::F_GETFL)
            .map_err(|e| format!("fcntl(F_GETFL): {e}"))?;
        let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(w.as_fd(), nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| format!("fcntl(F_SETFL, O_NONBLOCK): {e}"))?;
    }
    let write = |w: &std::fs::File, queued: usize| {
        send(w, what).map_err(|e| format!("{e} (with {queued} queued)"))
    };
    let read = |r: &std::fs::File| receive(r, &mut [0_u8; MESSAGE], what);
    let deep = || -> Result<Duration, String> {
        let t = Instant::now();
        for k in 0..crate::QUEUED_DEPTH {
            for (_, w) in &channels {
                write(w, k)?;
            }
        }
        for (r, _) in &channels {
            for _ in 0..crate::QUEUED_DEPTH {
                read(r)?;
            }
        }
        Ok(t.elapsed())
    };
    let shallow = || -> Result<Duration, String> {
        let t = Instant::now();
        for _ in 0..crate::QUEUED_DEPTH {
            for (_, w) in &channels {
                write(w, 0)?;
            }
            for (r, _) in &channels {
                read(r)?;
            }
        }
        Ok(t.elapsed())
    };
    let messages = (crate::QUEUED_CHANNELS * crate::QUEUED_DEPTH) as f64;
    per_op_runs(opts, messages as u64, || {
        let (d, s) = (deep()?, shallow()?);
        Ok((d.as_nanos() as f64 - s.as_nanos() as f64) / messages)
    })
}

/// A pipe as `(read end, write end)`.
fn pipe_files() -> Result<(std::fs::File, std::fs::File), String> {
    let (r, w) = nix::unistd::pipe().map_err(|e| format!("pipe: {e}"))?;
    Ok((r.into(), w.into()))
}

/// An `AF_UNIX` `SOCK_STREAM` socket pair as `(read end, write end)`.
fn socket_files() -> Result<(std::fs::File, std::fs::File), String> {
    let (a, b) = std::os::unix::net::UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    Ok((std::os::fd::OwnedFd::from(b).into(), std::os::fd::OwnedFd::from(a).into()))
}

/// The `write()` of one [`MESSAGE`] into a pipe by a thread on `writer`, timed alone. With
/// `reader = Some((cpu, watch))` a thread on `cpu` is blocked in `read()` on it, so the write
/// wakes it (`pipe_write()` → `wake_up_interruptible_sync_poll()` → `try_to_wake_up()`). On the
/// writer's CPU the reader is `SCHED_BATCH`, which a wake-up never makes preempt its waker, so
/// the write returns before the reader runs; on another CPU it keeps the normal policy (so as
/// not to wait there behind other tasks). The reader answers on a second pipe, which the writer
/// reads untimed, then yields once (untimed) so that a reader on its own CPU blocks again
/// before the next write; runs are sized by this whole round. Runs in which the reader did not
/// block once per write (its `voluntary_ctxt_switches`) are dropped; `watch`'s `CAL` count is
/// recorded (a wake-up of an idle remote CPU queues the task there by IPI). With `None` there
/// is no reader: the writer reads its message back, untimed (the write alone).
fn pipe_wake(
    opts: &Options,
    writer: usize,
    reader: Option<(usize, usize)>,
) -> Result<Measurement, String> {
    let (r, w) = nix::unistd::pipe().map_err(|e| format!("pipe: {e}"))?;
    let msg = [0x5a_u8; MESSAGE];
    let mut back = [0_u8; MESSAGE];
    let Some((cpu, watch)) = reader else {
        return simple(opts, 1 << 22, &mut |ops| {
            let mut took = Duration::ZERO;
            for _ in 0..ops {
                let t = Instant::now();
                let n = nix::unistd::write(&w, &msg).map_err(|e| format!("pipe write: {e}"))?;
                took += t.elapsed();
                let m = nix::unistd::read(&r, &mut back).map_err(|e| format!("pipe read: {e}"))?;
                if n != MESSAGE || m != MESSAGE {
                    return Err(format!("pipe: wrote {n} and read {m} of {MESSAGE} bytes"));
                }
            }
            Ok(took)
        });
    };
    let (reply_r, reply_w) = nix::unistd::pipe().map_err(|e| format!("pipe: {e}"))?;
    let tid = Arc::new(AtomicU64::new(0));
    let t2 = Arc::clone(&tid);
    let partner = std::thread::spawn(move || -> Result<(), String> {
        pin(cpu)?;
        if cpu == writer {
            sys::set_batch().map_err(|e| format!("sched_setscheduler(SCHED_BATCH): {e}"))?;
        }
        t2.store(nix::unistd::gettid().as_raw() as u64, Ordering::Release);
        let mut buf = [0_u8; MESSAGE];
        loop {
            let n = nix::unistd::read(&r, &mut buf).map_err(|e| format!("pipe read: {e}"))?;
            if n == 0 || buf[0] == 0 {
                return Ok(());
            }
            nix::unistd::write(&reply_w, &[1]).map_err(|e| format!("pipe write: {e}"))?;
        }
    });
    let t = Instant::now();
    while tid.load(Ordering::Acquire) == 0 && t.elapsed() < Duration::from_secs(1) {
        std::thread::yield_now();
    }
    let status = format!("/proc/self/task/{}/status", tid.load(Ordering::Acquire));
    // The writes are timed; the whole round (the reader's turn included) sizes the runs.
    let wall = std::cell::Cell::new(Duration::ZERO);
    let run = |ops: u64| -> Result<Duration, String> {
        let mut took = Duration::ZERO;
        let mut one = [0_u8; 1];
        let started = Instant::now();
        for _ in 0..ops {
            let t = Instant::now();
            nix::unistd::write(&w, &msg).map_err(|e| format!("pipe write: {e}"))?;
            took += t.elapsed();
            nix::unistd::read(&reply_r, &mut one).map_err(|e| format!("pipe read: {e}"))?;
            nix::sched::sched_yield().map_err(|e| format!("sched_yield: {e}"))?;
        }
        wall.set(started.elapsed());
        Ok(took)
    };
    let result = (|| -> Result<Measurement, String> {
        let ops = calibrate(opts.min_run, 1 << 20, &mut |ops| {
            run(ops)?;
            Ok(wall.get())
        })?;
        run(ops)?;
        let (mut kept, mut ipis) = (Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            let (sleeps, cal) = (voluntary_switches(&status)?, interrupts(Row::Call, watch)?);
            let took = run(ops)?;
            let slept = voluntary_switches(&status)?.saturating_sub(sleeps) as f64 / ops as f64;
            if slept >= DELIVERED {
                kept.push(took.as_nanos() as f64 / ops as f64);
                ipis.push(interrupts(Row::Call, watch)?.saturating_sub(cal) as f64 / ops as f64);
            }
        }
        let mut m = Measurement::of(&kept, opts.runs, ops).ok_or_else(|| {
            format!("in no run did the reader on CPU {cpu} block before every write")
        })?;
        m.ipis_per_op = crate::stats::percentile(&ipis, 0.5);
        if kept.len() < opts.runs {
            m.note = Some(format!(
                "{} of {} runs dropped: the reader was not blocked before every write",
                opts.runs - kept.len(),
                opts.runs
            ));
        }
        Ok(m)
    })();
    let _ = nix::unistd::write(&w, &[0_u8; MESSAGE]);
    let joined = partner.join().map_err(|_| "the reader thread panicked".to_owned())?;
    let m = result?;
    joined?;
    Ok(m)
}

/// `fork_exit` and `fork_exit_grown`, measured together by a child of this process that passes
/// on to its own children none of the private anonymous memory it inherited (`MADV_DONTFORK`)
/// but the stack it runs on: the fork timed is that of a small process, whatever this one's
/// size (tlblab after a study holds tens of MiB, which a fork copies page by page). Each timed
/// fork is `clone(SIGCHLD)`; its child `_exit`s at once; the measurer `waitpid`s. The grown
/// runs let [`crate::FORK_GROWN_PAGES`] written pages (4 KiB, as the model copies and frees
/// them) be inherited too; plain and grown runs alternate, so a drift of the host's speed
/// affects both alike. Each records the anonymous pages its forks copy.
fn fork_pair(opts: &Options) -> Result<[Measurement; 2], String> {
    let out = sys::in_child(|| {
        let result = fork_pair_here(opts);
        serde_json::to_string(&result).unwrap_or_else(|e| format!("{e}"))
    })?;
    serde_json::from_str::<Result<[Measurement; 2], String>>(&out)
        .map_err(|e| format!("the measuring child's result ({out:?}): {e}"))?
}

/// The measurer of [`fork_pair`], in the child.
fn fork_pair_here(opts: &Options) -> Result<[Measurement; 2], String> {
    let here = 0u8;
    let stack = std::hint::black_box(&here) as *const u8 as usize;
    let smaps = std::fs::read_to_string(SMAPS).map_err(|e| format!("cannot read {SMAPS}: {e}"))?;
    let layout = fork_layout(&smaps, stack).map_err(|e| format!("{SMAPS}: {e}"))?;
    for range in &layout.withheld {
        sys::withhold_from_children(range.clone())
            .map_err(|e| format!("madvise(MADV_DONTFORK) of {range:x?}: {e}"))?;
    }
    let pages = crate::FORK_GROWN_PAGES;
    let region = Anon::map(pages as usize).map_err(|e| format!("mmap of {pages} pages: {e}"))?;
    (0..pages as usize).for_each(|p| region.write(p));
    let mut forks = |ops: u64| {
        let t = Instant::now();
        for _ in 0..ops {
            sys::clone_exit_wait().map_err(|e| format!("clone/exit/waitpid: {e}"))?;
        }
        Ok(t.elapsed())
    };
    let inherit = |yes: bool| region.inherited(yes).map_err(|e| format!("madvise: {e}"));
    inherit(false)?;
    let plain_ops = calibrate(opts.min_run, 1 << 16, &mut forks)?;
    inherit(true)?;
    let grown_ops = calibrate(opts.min_run, 1 << 16, &mut forks)?;
    let (mut plain, mut grown) = (Vec::new(), Vec::new());
    for _ in 0..opts.runs {
        inherit(false)?;
        plain.push(forks(plain_ops)?.as_nanos() as f64 / plain_ops as f64);
        inherit(true)?;
        grown.push(forks(grown_ops)?.as_nanos() as f64 / grown_ops as f64);
    }
    let of = |per_op: &[f64], ops: u64, anon_pages: u64| {
        let m = Measurement::of(per_op, opts.runs, ops).ok_or("no timed run")?;
        Ok::<_, String>(Measurement { anon_pages: Some(anon_pages), ..m })
    };
    Ok([
        of(&plain, plain_ops, layout.kept_pages)?,
        of(&grown, grown_ops, layout.kept_pages + pages)?,
    ])
}

/// What a child of the process whose `smaps` these are would inherit.
#[derive(Debug, PartialEq)]
struct ForkLayout {
    /// Private anonymous mappings with resident pages, but for the stack at the given address
    /// and the main thread's: to be withheld from children.
    withheld: Vec<Range<usize>>,
    /// Resident anonymous pages in the mappings kept (stacks, file mappings' private copies).
    kept_pages: u64,
}

/// [`ForkLayout`] from `/proc/PID/smaps` text, for a thread whose stack holds `stack`.
fn fork_layout(smaps: &str, stack: usize) -> Result<ForkLayout, String> {
    let mut layout = ForkLayout { withheld: Vec::new(), kept_pages: 0 };
    // The mapping being read: its range and whether it may be withheld.
    let mut current: Option<(Range<usize>, bool)> = None;
    for (n, line) in smaps.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            else {
                return Err(format!("line {}: no address range in {line:?}", n + 1));
            };
            let perms = fields.next().unwrap_or("");
            let inode = fields.nth(2).unwrap_or("");
            let path = fields.next().unwrap_or("");
            let anonymous = inode == "0" && (path.is_empty() || path == "[heap]");
            let private = perms.ends_with('p');
            current = Some((lo..hi, anonymous && private && !(lo..hi).contains(&stack)));
        } else if first == "Anonymous:" {
            let Some((range, withhold)) = &current else {
                return Err(format!("line {}: `Anonymous:` before any mapping", n + 1));
            };
            let pages = fields
                .next()
                .and_then(|kb| kb.parse::<u64>().ok())
                .ok_or_else(|| format!("line {}: unreadable {line:?}", n + 1))?
                * 1024
                / sys::PAGE as u64;
            match (withhold, pages) {
                (_, 0) => {}
                (true, _) => layout.withheld.push(range.clone()),
                (false, p) => layout.kept_pages += p,
            }
        }
    }
    Ok(layout)
}

/// Where the process's mappings are listed with their resident memory.
const SMAPS: &str = "/proc/self/smaps";

/// `voluntary_ctxt_switches` of the thread whose `/proc/…/status` is at `path`.
fn voluntary_switches(path: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("{path} has no voluntary_ctxt_switches"))
}

/// `sched_setaffinity` to the other CPU and back, alternately; one operation is one migration.
fn migrate(opts: &Options, local: usize, remote: usize) -> Result<Measurement, String> {
    let mut failed = 0u64;
    let mut total = 0u64;
    let sets = [one_cpu(local)?, one_cpu(remote)?];
    let mut m = simple(opts, 1 << 16, &mut |ops| {
        pin(local)?;
        let t = Instant::now();
        for i in 0..ops {
            let to = 1 - (i % 2) as usize;
            sched_setaffinity(Pid::from_raw(0), &sets[to])
                .map_err(|e| format!("sched_setaffinity: {e}"))?;
            if sched_getcpu().ok() != Some([local, remote][to]) {
                failed += 1;
            }
        }
        total += ops;
        Ok(t.elapsed())
    })?;
    if failed > 0 {
        m.note = Some(format!("{failed} of {total} migrations did not land on the target CPU"));
        if failed * 100 > total {
            return Err(format!("{failed} of {total} migrations did not land on the target CPU"));
        }
    }
    Ok(m)
}

/// The CPUs this thread may run on, in order.
fn allowed_cpus() -> Result<Vec<usize>, String> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let cpus: Vec<usize> =
        (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect();
    if cpus.is_empty() {
        return Err("sched_getaffinity gave no CPU".into());
    }
    Ok(cpus)
}

fn one_cpu(cpu: usize) -> Result<CpuSet, String> {
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("CPU {cpu}: {e}"))?;
    Ok(set)
}

/// Pins the calling thread to `cpu` and checks that it runs there.
fn pin(cpu: usize) -> Result<(), String> {
    sched_setaffinity(Pid::from_raw(0), &one_cpu(cpu)?)
        .map_err(|e| format!("sched_setaffinity(CPU {cpu}): {e}"))?;
    for _ in 0..100 {
        if sched_getcpu().ok() == Some(cpu) {
            return Ok(());
        }
        std::thread::yield_now();
    }
    Err(format!("pinned to CPU {cpu} but still running elsewhere"))
}

/// `cpu`'s count in `row` of `/proc/interrupts`.
fn interrupts(row: Row, cpu: usize) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/interrupts")
        .map_err(|e| format!("cannot read /proc/interrupts: {e}"))?;
    let label = row.label();
    parse_row(&text, label, cpu)
        .ok_or_else(|| format!("/proc/interrupts has no {label} count for CPU{cpu}"))
}

/// The count of `cpu` in the row `label` (`CAL`, `TLB`) of the text of `/proc/interrupts`
/// (columns named by its header).
pub fn parse_row(text: &str, label: &str, cpu: usize) -> Option<u64> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let column = header.split_whitespace().position(|c| c == format!("CPU{cpu}"))?;
    let counts = lines.find_map(|l| l.trim_start().strip_prefix(label)?.strip_prefix(':'))?;
    counts.split_whitespace().nth(column)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four mappings as Linux 6.18's `/proc/PID/smaps` lists them (other keys cut): a file
    /// mapping with private copies, the brk heap, a thread's stack and the main stack.
    const SMAPS_TEXT: &str = "\
55ecb80c8000-55ecb811d000 r--p 011dc000 fe:00 5311042                    /work/main/target/release/tlblab
Size:                340 kB
Anonymous:           340 kB
55ecd5603000-55ecd7eb8000 rw-p 00000000 00:00 0                          [heap]
Size:              41684 kB
Anonymous:         41556 kB
7ffb74615000-7ffb74815000 rw-p 00000000 00:00 0
Size:               2048 kB
Anonymous:            16 kB
7ffb74817000-7ffb74a17000 rw-p 00000000 00:00 0
Size:               2048 kB
Anonymous:             0 kB
7ffdea33e000-7ffdea36e000 rw-p 00000000 00:00 0                          [stack]
Size:                192 kB
Anonymous:           188 kB
";

    /// A fork from a thread running on the anonymous mapping at 0x7ffb74615000 withholds the
    /// heap only: that stack, the main stack and the file mapping's copies are kept
    /// ((340 + 16 + 188) kB = 136 pages); the mapping without pages need not be withheld.
    #[test]
    fn a_fork_withholds_the_heap_but_keeps_the_stack_it_runs_on() {
        let layout = fork_layout(SMAPS_TEXT, 0x7ffb_7470_0000).unwrap();
        assert_eq!(layout.withheld, vec![0x55ecd5603000..0x55ecd7eb8000]);
        assert_eq!(layout.kept_pages, 136);
        // From a thread whose stack is elsewhere, its mapping is withheld too.
        let other = fork_layout(SMAPS_TEXT, 0x7ffd_ea36_0000).unwrap();
        assert_eq!(other.withheld.len(), 2);
        assert_eq!(other.kept_pages, (340 + 188) / 4);
    }

    #[test]
    fn an_unreadable_smaps_line_is_named() {
        let e = fork_layout("Anonymous: 4 kB\n", 0).unwrap_err();
        assert!(e.starts_with("line 1: `Anonymous:` before any mapping"), "{e}");
        let e = fork_layout("zz-10 rw-p 0 00:00 0\n", 0).unwrap_err();
        assert!(e.starts_with("line 1: no address range"), "{e}");
        let e = fork_layout(&SMAPS_TEXT.replace("41556 kB", "many kB"), 0).unwrap_err();
        assert!(e.starts_with("line 6: unreadable"), "{e}");
    }

    /// The measurement itself, in a child of the test process: the grown forks cost more, and
    /// their pages are the plain ones' and the region's.
    #[test]
    fn fork_pair_measures_a_small_process_and_the_grown_one() {
        let opts = Options { min_run: Duration::from_millis(1), runs: 3, ..Options::default() };
        let [plain, grown] = fork_pair(&opts).unwrap();
        let (small, large) = (plain.anon_pages.unwrap(), grown.anon_pages.unwrap());
        assert_eq!(large - small, crate::FORK_GROWN_PAGES);
        assert!(grown.median_ns > plain.median_ns, "{grown:?} vs {plain:?}");
        assert_eq!((plain.runs, grown.runs), (3, 3));
    }

    #[test]
    fn interrupt_rows_by_column_name() {
        let text = "           CPU0       CPU1       \n  0:         35          0   IO-APIC    2-edge      timer\n\
                    CAL:      12345       6789   Function call interrupts\n\
                    TLB:          1          2   TLB shootdowns\n";
        assert_eq!(parse_row(text, "CAL", 0), Some(12345));
        assert_eq!(parse_row(text, "CAL", 1), Some(6789));
        assert_eq!(parse_row(text, "CAL", 2), None);
        assert_eq!(parse_row(text, "TLB", 1), Some(2));
        assert_eq!(parse_row("CPU0\nTLB: 1\n", "CAL", 0), None);
    }

    #[test]
    fn calibration_grows_until_a_run_is_long_enough() {
        let mut seen = Vec::new();
        let ops = calibrate(Duration::from_micros(100), 1 << 20, &mut |ops| {
            seen.push(ops);
            Ok(Duration::from_nanos(ops * 10))
        })
        .unwrap();
        assert!(ops * 10 >= 100_000, "{ops} {seen:?}");
        // One uncounted operation first, then growing counts.
        assert_eq!(seen[..2], [1, 1], "{seen:?}");
        assert!(seen[1..].windows(2).all(|w| w[1] > w[0]), "{seen:?}");
        // A cold first call does not fix the count at 1.
        let mut first = true;
        let ops = calibrate(Duration::from_micros(100), 1 << 20, &mut |ops| {
            let cold = std::mem::replace(&mut first, false);
            Ok(Duration::from_nanos(if cold { 1_000_000 } else { ops * 10 }))
        })
        .unwrap();
        assert!(ops >= 10_000, "{ops}");
        let capped =
            calibrate(Duration::from_secs(1), 64, &mut |ops| Ok(Duration::from_nanos(ops)));
        assert_eq!(capped, Ok(64));
    }
}
