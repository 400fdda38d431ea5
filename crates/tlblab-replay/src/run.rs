//! One run of the model on a plan: the threads and the timer installed, the model run until
//! every thread has followed its schedule, and what it counted.

use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{KindCounts, Plan};
use crate::program::{Meter, RunSetup, ThreadProgram, Timer};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use tlblab_kernel::observer::{Observer, TlbFlushEvent};
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::{Kernel, KernelConfig, Policy};
use tlblab_sim::machine::MachineSpec;
use tlblab_types::{CpuId, Cycles};

/// Pages of each process's reclaim pool, at most.
const MAX_POOL_PAGES: u64 = 256;

/// Counts the model's `tlb:tlb_flush` events on the trace's CPUs from the first record's time.
pub(crate) struct FlushCounter {
    start: u64,
    cpus: usize,
    pub counts: [KindCounts; 6],
}

impl Observer for FlushCounter {
    fn tlb_flush(&mut self, e: &TlbFlushEvent) {
        if e.time.0 >= self.start && usize::from(e.cpu.0) < self.cpus {
            self.counts[e.reason as usize].add(e.pages);
        }
    }
}

/// What one run produced.
pub(crate) struct RunOutput {
    pub kernel: KernelReport,
    pub meter: Meter,
    pub flushes: [KindCounts; 6],
    /// Threads that had not finished their schedule when the run was stopped.
    pub unfinished: usize,
    /// Simulated time of the first record.
    pub lead: u64,
}

/// The setup shared by a replay and its twin: `censored_pages` must be above every ceiling the
/// setup is used with.
pub(crate) fn setup(
    plan: &Plan,
    spec: &MachineSpec,
    opts: &ReplayOptions,
    censored_pages: u64,
    twin: bool,
) -> RunSetup {
    let costs = spec.raw().kernel.as_ref();
    let mhz = costs.map_or(1000, |k| k.clock.mhz).max(1);
    let pool_pages = plan.summary.requests.batches.min(MAX_POOL_PAGES);
    let mut s = RunSetup { lead: 0, mhz, twin, refill: opts.refill, censored_pages, pool_pages };
    // Setup (mapping and writing the regions) must end before the first record's time: an
    // estimate of its cycles on each CPU, doubled, plus a millisecond.
    let (fault, call) = costs.map_or((10_000, 1_000), |k| {
        (
            k.page_fault_anon.cycles + k.syscall.cycles + 1_000,
            k.syscall.cycles + k.mmap.cycles + k.context_switch.cycles + k.switch_mm.cycles,
        )
    });
    let mut per_cpu = vec![0u64; plan.cpus];
    for p in &plan.processes {
        for (j, &t) in p.threads.iter().enumerate() {
            let th = &plan.threads[t];
            let pool = if j == 0 { pool_pages } else { 0 };
            let pages = s.main_pages(&th.requests) + pool;
            if let Some(seg) = th.segments.first() {
                per_cpu[usize::from(seg.cpu)] += pages * fault + 4 * call;
            }
        }
    }
    s.lead = 2 * per_cpu.into_iter().max().unwrap_or(0) + mhz * 1000;
    s
}

/// The most simulated cycles a replay runs to: far beyond any trace whose quiet gaps are
/// shortened, and far below the model's 64-bit clock.
const MAX_REPLAY_CYCLES: u64 = 1 << 60;

/// Refuses a plan whose replayed span does not fit the model's clock at `spec`'s frequency.
pub(crate) fn check_span(plan: &Plan, spec: &MachineSpec) -> Result<(), ReplayError> {
    let mhz = spec.raw().kernel.as_ref().map_or(1000, |k| k.clock.mhz).max(1);
    let cycles = u128::from(plan.end_ns) * u128::from(mhz) / 1000;
    if cycles > u128::from(MAX_REPLAY_CYCLES) {
        return Err(ReplayError::TooLong {
            span_ns: plan.end_ns,
            mhz,
            max_cycles: MAX_REPLAY_CYCLES,
        });
    }
    Ok(())
}

/// Runs the plan once under `policy`.
pub(crate) fn run(
    plan: &Arc<Plan>,
    spec: &MachineSpec,
    policy: &Policy,
    setup: RunSetup,
    seed: u64,
) -> Result<RunOutput, ReplayError> {
    let n = plan.cpus;
    // Threads whose wake-up the model lost (see the wake-ups below) never finish: the loop
    // gives up on them past the trace's end and reports them: blocked tasks are no error.
    let config = KernelConfig { stop_when_blocked: false, ..KernelConfig::new(n + 1, seed) };
    let observer = FlushCounter { start: setup.lead, cpus: n, counts: Default::default() };
    let mut k = Kernel::new(spec, policy, config, observer)
        .map_err(|source| ReplayError::Kernel { policy: policy.shown(), source })?;
    let setup = Arc::new(setup);
    let meter =
        Rc::new(RefCell::new(Meter { writes: vec![0; plan.threads.len()], ..Meter::default() }));
    let fds: Vec<_> = plan.threads.iter().map(|_| k.eventfd()).collect();
    let mut wakes = Vec::new();
    for (t, th) in plan.threads.iter().enumerate() {
        for (i, s) in th.segments.iter().enumerate() {
            if th.sleeps_before(i) {
                wakes.push((setup.at(s.from_ns), fds[t], t));
            }
        }
    }
    wakes.sort_by_key(|&(at, fd, _)| (at, fd.0));
    // Each wake-up must reach its CPU before the thread that ran there leaves it (a wake-up
    // that reaches a CPU while it switches to idle is lost in the model, docs/replay.md); the
    // timer writes one after another, so k wake-ups due at once start k + 1 µs early.
    let mut i = 0;
    while i < wakes.len() {
        let at = wakes[i].0;
        let k = wakes[i..].iter().take_while(|w| w.0 == at).count();
        let early = at.saturating_sub((k as u64 + 1) * setup.mhz);
        for w in &mut wakes[i..i + k] {
            w.0 = early;
        }
        i += k;
    }
    let mut leaders = vec![tlblab_kernel::ids::TaskId(0); plan.threads.len()];
    for p in &plan.processes {
        let mut leader = None;
        for (j, &t) in p.threads.iter().enumerate() {
            let pool = if j == 0 { setup.pool_pages } else { 0 };
            let program = ThreadProgram::new(
                Arc::clone(plan),
                t,
                Arc::clone(&setup),
                Rc::clone(&meter),
                fds[t],
                pool,
            );
            let cpu = CpuId(plan.threads[t].segments[0].cpu);
            let l = match leader {
                None => *leader.insert(k.spawn_process(Box::new(program), cpu, true)),
                Some(l) => {
                    k.spawn_thread(l, Box::new(program), cpu, true);
                    l
                }
            };
            leaders[t] = l;
        }
    }
    let fd = k.eventfd();
    let timer = Timer { wakes, next: 0, meter: Rc::clone(&meter), fd };
    k.spawn_process(Box::new(timer), CpuId(n as u16), false);
    // Run in slices of a millisecond until every thread is done; give up well past the trace's
    // end (the report then says how many threads did not finish).
    let slice = setup.mhz * 1000;
    let end = setup.at(plan.end_ns);
    let give_up = end.saturating_mul(4).saturating_add(10_000 * slice);
    let mut horizon = 0u64;
    let threads = plan.threads.len();
    loop {
        horizon += slice;
        k.run_until(Cycles(horizon));
        k.event_limit_reached()
            .map_err(|source| ReplayError::Kernel { policy: policy.shown(), source })?;
        if meter.borrow().done == threads || horizon > give_up {
            break;
        }
    }
    let meter = meter.borrow().clone();
    Ok(RunOutput {
        lead: setup.lead,
        kernel: k.report(),
        flushes: k.observer().counts,
        unfinished: threads - meter.done,
        meter,
    })
}
