//! The host preset's kernel-path costs from this machine's measured paths (tlblab-pathcost):
//! which `[kernel]` figure comes from which measurement, and by which rule.
//!
//! Every rule is a difference or a share of medians, in ns at the host's clock (`S` is the null
//! syscall):
//!
//! | figure | rule | scales |
//! |---|---|---|
//! | `syscall` | `null_syscall` | cycles |
//! | `page_fault_zero`, `page_fault_anon` | `minor_fault_zero`, `minor_fault_anon` | cycles |
//! | `page_fault_anon_hot` | `minor_fault_anon_hot` (faults on frames this CPU freed a moment ago), when below `minor_fault_anon` | cycles |
//! | `page_fault_cow` | `minor_fault_anon` (copying a page assumed to cost what zeroing does) | cycles |
//! | `madvise` | `madvise_empty − S` (no page present: no zap, no flush) | cycles |
//! | `zap_pte` | `(dontneed_256 − dontneed_64) / 192` (both flush fully: the flush cancels) | cycles |
//! | `zap_batch` | `dontneed_1 − madvise_empty − zap_pte − F`, where `F` is the one-page local flush the model charges (`flush_tlb_mm_range` + `flush_tlb_func` + INVLPG at the host clock) | cycles |
//! | `change_pte` | `(mprotect_256 − mprotect_64) / 192` (both flush fully: the flush cancels) | cycles |
//! | `mprotect` | `mprotect_empty − S` (no PTE present: no change, no flush) | cycles |
//! | `mmap`, `munmap` | `(mmap_munmap_untouched − 2 S) / 2` each | cycles |
//! | `split_vma` | `munmap_split − S − munmap` | cycles |
//! | `wakeup` | `pipe_wake_local − pipe_write` (a 100-byte pipe write that wakes a reader blocked on its CPU, less the same write with nobody waiting) | cycles |
//! | `context_switch` | `thread_switch − 2 S − wakeup` (a switch with one eventfd write that wakes and one read that blocks); without a measured wake-up, `thread_switch − 2 S` is split with `wakeup` in the nearest preset's proportion | cycles |
//! | `pipe_op`, `socket_op` | `(pipe_pair − 2 S) / 2`, `(socket_pair − 2 S) / 2`: a 100-byte write and its read by one thread, no wake-up | cycles |
//! | `pipe_remote`, `socket_remote` | `pipe_remote_read`, `socket_remote_read`: per message, a batch written here and read on the other CPU less the same batch read here | time |
//! | `pipe_queued`, `socket_queued` | `pipe_queued`, `socket_queued`: per message, written and read with 200 queued in each of 20 channels less with one queued in each | time |
//! | `cache_line_transfer` | `line_pingpong`: half the round trip of one cache line between the two CPUs | time |
//! | `migrate` | `migrate − S`; under a hypervisor less the target vCPU's wake-up that the guest model adds (`vmexit_cpuid` for the send + the `HLT` wake below (else a second `vmexit_cpuid`) + `ipi_latency` + `ipi_handler` + `context_switch`) | time |
//! | `fork` + `exit` | `fork_exit − P × (fork_exit_grown − fork_exit) / G`, where `fork_exit` forks a small process (its `P` anonymous pages) and `fork_exit_grown` one with `G` more: the fork and exit of a process without pages, since the model charges each process's own; split in the nearest preset's proportion | cycles |
//! | `[guest] ipi_round_trip` | `ipi_call_remote − ipi_call_local` (a synchronous cross-CPU call, made by toggling a perf event on the other CPU, less the same call on the own CPU); if that was not measured, `membarrier_ipi − membarrier_no_ipi` | time |
//! | `ipi_send` + `ipi_latency` + `ipi_handler` + `ipi_ack` | the round trip, less 2 × `vmexit_cpuid` under a hypervisor (the exits the guest model adds to an IPI), split in the nearest preset's proportion | time |
//! | `ipi_return` | `shootdown_target − vmexit_cpuid − ipi_handler − (cache_line_transfer + flush_tlb_func + INVLPG)` (the line as measured, else copied): what a running target loses per one-page shootdown beyond what the model charges it before it acknowledges (the injection exit, under a hypervisor only; the handler; the csd's line and the flush) | time |
//! | `[guest] vm_exit` | `vmexit_cpuid` (under a hypervisor only) | time |
//! | `[idle]` HLT exit latency | `thread_wake_remote − thread_switch − (vmexit_cpuid + ipi_latency + ipi_handler)` under a hypervisor: a pass of a token that wakes a thread on the other, halted vCPU, less the same pass on one CPU and the IPI's pieces the guest model adds (the waker's exit, latency, handler; no injection exit: a halted vCPU is out of guest mode and gets the interrupt at its entry); what is left is the halted vCPU's wake-up on the host | time |
//!
//! A figure whose measurement failed, or whose difference is not positive (noise), keeps the
//! nearest preset's figure, and the provenance says why.

use crate::provenance::{Origin, Provenance};
use tlblab_pathcost::stats::round1;
use tlblab_pathcost::{names, Cached, Measurement, PathCosts};
use tlblab_sim::machine::raw::{KernelFigure, RawKernel, Scales};

/// One derived figure: its value in ns and how it was obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// Nanoseconds at the host clock, to 0.1 ns.
    pub ns: f64,
    /// How it scales to another clock.
    pub scales: Scales,
    /// The rule and its inputs (median, p10–p90).
    pub how: String,
    /// Whether the figure is a share assumed from the preset (not measured alone).
    pub assumed_split: bool,
}

/// The derivation: `[kernel]` figures by field name, and the raw `[guest]` figures; each an
/// error (the reason) when it could not be derived.
#[derive(Clone, Debug, Default)]
pub struct Derivation {
    /// `[kernel]` figures, in rule order.
    pub kernel: Vec<(&'static str, Result<Derived, String>)>,
    /// `[guest] vm_exit`.
    pub vm_exit: Option<Result<Derived, String>>,
    /// `[guest] ipi_round_trip`.
    pub ipi_round_trip: Option<Result<Derived, String>>,
    /// A halted vCPU's wake-up (the exit latency of the guest's `[idle]` HLT state), under a
    /// hypervisor.
    pub halt_wake: Option<Result<Derived, String>>,
}

/// A measurement's median, in ns, and its summary for a figure's source.
pub(crate) fn input(costs: &PathCosts, name: &str) -> Result<(f64, String), String> {
    let m: &Measurement = costs.get(name).map_err(|e| format!("{name} not measured: {e}"))?;
    Ok((m.median_ns, format!("{name} {}", m.summary())))
}

/// `ns`, or an error naming `what` when noise made it not positive.
pub(crate) fn positive(what: &str, ns: f64) -> Result<f64, String> {
    if ns.is_finite() && ns > 0.0 {
        Ok(ns)
    } else {
        Err(format!("{what} = {:.1} ns is not positive (noise)", ns))
    }
}

/// The per-page work of two measurements of [`ZAP_SMALL`](tlblab_pathcost::measure::ZAP_SMALL)
/// and [`ZAP_LARGE`](tlblab_pathcost::measure::ZAP_LARGE) pages that both flush fully (the flush
/// cancels), in ns (not rounded), with its rule and inputs.
pub(crate) fn per_page_ns(
    costs: &PathCosts,
    small_name: &str,
    large_name: &str,
) -> Result<(f64, String), String> {
    let (small, small_how) = input(costs, small_name)?;
    let (large, large_how) = input(costs, large_name)?;
    let pages = (tlblab_pathcost::measure::ZAP_LARGE - tlblab_pathcost::measure::ZAP_SMALL) as f64;
    let rule = format!("({large_name} − {small_name}) / {pages}");
    let ns = positive(&rule, (large - small) / pages)?;
    Ok((ns, format!("{rule}: {large_how}; {small_how}")))
}

/// The one-page local flush the kernel model charges on the host (`flush_tlb_mm_range` +
/// `flush_tlb_func` + INVLPG), in ns at the host clock, and how it was computed; and the part
/// a shootdown's target runs before it acknowledges (the csd's cache line, `flush_tlb_func` +
/// INVLPG).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalFlush {
    /// Nanoseconds at the host clock.
    pub ns: f64,
    /// The figures it sums.
    pub how: String,
    /// A target's part, in ns at the host clock: a cache-line transfer (the csd) +
    /// `flush_tlb_func` + INVLPG.
    pub target_ns: f64,
    /// The figures the target's part sums.
    pub target_how: String,
    /// Of the target's part, the copied cache-line transfer, in ns at the host clock (replaced
    /// by the measured one when there is one).
    pub line_ns: f64,
    /// Where INVLPG drops every translation: the kernel's refill after a ranged flush
    /// (`invlpg_refill`, crate::local_flush::refill), which the model charges once per ranged flush
    /// on the CPU that flushed, or why it could not be derived; `None` where INVLPG keeps the
    /// kernel's translations.
    pub refill: Option<Result<Derived, String>>,
}

impl LocalFlush {
    /// The refill the model charges after a one-page flush, in ns (0 where there is none or it
    /// was not derived).
    pub fn refill_ns(&self) -> f64 {
        match &self.refill {
            Some(Ok(d)) => d.ns,
            _ => 0.0,
        }
    }
}

/// The one-page local flush `kernel` (the host's copied figures, at its clock) makes the model
/// charge: `flush_tlb_mm_range` + `flush_tlb_func` + one INVLPG of `invlpg_cycles`.
pub fn local_flush(kernel: &RawKernel, invlpg_cycles: u64) -> LocalFlush {
    let mhz = kernel.clock.mhz.max(1);
    let at_host =
        |f: &tlblab_sim::machine::raw::KernelFigure| f.written.resolve(mhz).unwrap_or(f.cycles);
    let (range, func) = (at_host(&kernel.flush_tlb_mm_range), at_host(&kernel.flush_tlb_func));
    let line = at_host(&kernel.cache_line_transfer);
    let ns = |cycles: u64| cycles as f64 * 1000.0 / mhz as f64;
    LocalFlush {
        ns: ns(range + func + invlpg_cycles),
        how: format!(
            "flush_tlb_mm_range {range} + flush_tlb_func {func} + INVLPG {invlpg_cycles} cycles \
             at {mhz} MHz"
        ),
        target_ns: ns(line + func + invlpg_cycles),
        target_how: format!(
            "the csd's line {line} + flush_tlb_func {func} + INVLPG {invlpg_cycles} cycles at \
             {mhz} MHz"
        ),
        line_ns: ns(line),
        refill: None,
    }
}

/// Derives the figures from `costs`; `preset` (the nearest preset's costs, resolved) gives the
/// proportions of the split figures, and `local_flush` what a one-page flush costs in the model
/// (it is part of a measured `dontneed_1`). Pure: the same inputs give the same figures.
pub fn derive(
    costs: &PathCosts,
    preset: &RawKernel,
    virtualised: bool,
    local_flush: &LocalFlush,
) -> Derivation {
    let mut out = Derivation::default();
    let syscall = input(costs, names::NULL_SYSCALL);
    let one = |name: &str, scales, rule: &str| -> Result<Derived, String> {
        let (ns, how) = input(costs, name)?;
        let ns = positive(rule, ns)?;
        Ok(Derived { ns: round1(ns), scales, how: format!("{rule}: {how}"), assumed_split: false })
    };
    out.kernel.push(("syscall", one(names::NULL_SYSCALL, Scales::Cycles, "null_syscall")));
    out.kernel
        .push(("page_fault_zero", one(names::FAULT_ZERO, Scales::Cycles, "minor_fault_zero")));
    out.kernel
        .push(("page_fault_anon", one(names::FAULT_ANON, Scales::Cycles, "minor_fault_anon")));
    // Only below the cold figure: a hot fault that costs no less is no saving to model.
    let hot = one(names::FAULT_ANON_HOT, Scales::Cycles, "minor_fault_anon_hot").and_then(|d| {
        let (cold, _) = input(costs, names::FAULT_ANON)?;
        match d.ns < cold {
            true => Ok(d),
            false => Err(format!(
                "minor_fault_anon_hot {:.1} ns is not below minor_fault_anon {cold:.1} ns",
                d.ns
            )),
        }
    });
    out.kernel.push(("page_fault_anon_hot", hot));
    out.kernel.push((
        "page_fault_cow",
        one(
            names::FAULT_ANON,
            Scales::Cycles,
            "minor_fault_anon (a copy assumed to cost a zeroing)",
        )
        .map(|d| Derived { assumed_split: true, ..d }),
    ));
    let minus_syscall = |name: &str, times: f64, per: f64, rule: &str, scales| {
        let (s, s_how) = syscall.clone()?;
        let (ns, how) = input(costs, name)?;
        let ns = positive(rule, (ns - times * s) / per)?;
        let how = format!("{rule}: {how}; {s_how}");
        Ok::<_, String>(Derived { ns: round1(ns), scales, how, assumed_split: false })
    };
    out.kernel.push((
        "madvise",
        minus_syscall(
            names::MADVISE_EMPTY,
            1.0,
            1.0,
            "madvise_empty − null_syscall",
            Scales::Cycles,
        ),
    ));
    // The per-page work of two measurements that both flush fully (the flush cancels).
    let per_page = |small_name: &str, large_name: &str| {
        let (ns, how) = per_page_ns(costs, small_name, large_name)?;
        Ok::<_, String>(Derived {
            ns: round1(ns),
            scales: Scales::Cycles,
            how,
            assumed_split: false,
        })
    };
    // A one-page measurement less the syscall, the figures it holds and the one-page local
    // flush the model charges: what is left is the path's own fixed work.
    let one_page = |name: &str, held: &[(&str, &Result<Derived, String>)]| {
        let (one, one_how) = input(costs, name)?;
        let (s, _) = syscall.clone()?;
        let mut rest = one - s - local_flush.ns;
        let mut rule = format!("{name} − null_syscall");
        let mut parts = format!("null_syscall {s:.1} ns");
        for (label, figure) in held {
            let figure = figure.as_ref().map_err(|e| format!("{label}: {e}"))?;
            rest -= figure.ns;
            rule += &format!(" − {label}");
            parts += &format!("; {label} {:.1} ns", figure.ns);
        }
        rule += " − the model's one-page local flush";
        let ns = positive(&rule, rest)?;
        Ok::<_, String>(Derived {
            ns: round1(ns),
            scales: Scales::Cycles,
            how: format!(
                "{rule}: {one_how}; {parts}; flush {:.1} ns ({})",
                local_flush.ns, local_flush.how
            ),
            assumed_split: false,
        })
    };
    let madvise = out.kernel.last().map(|(_, d)| d.clone()).expect("madvise pushed above");
    let zap = per_page(names::DONTNEED_SMALL, names::DONTNEED_LARGE);
    // madvise is madvise_empty − S; the measured dontneed_1 holds S too.
    let batch = one_page(names::DONTNEED_ONE, &[("madvise", &madvise), ("zap_pte", &zap)]);
    let change_pte = per_page(names::MPROTECT_SMALL, names::MPROTECT_LARGE);
    // The syscall's own work, from the loop that changes no PTE and flushes nothing (the
    // one-page flush and the kernel's refill after it, where INVLPG drops everything, are the
    // model's own pieces). dontneed_1 holds no refill either: in its loop the refill falls in
    // the untimed write fault.
    let mprotect = minus_syscall(
        names::MPROTECT_EMPTY,
        1.0,
        1.0,
        "mprotect_empty − null_syscall",
        Scales::Cycles,
    );
    out.kernel.push(("zap_pte", zap));
    out.kernel.push(("zap_batch", batch));
    out.kernel.push(("mprotect", mprotect));
    out.kernel.push(("change_pte", change_pte));
    if let Some(refill) = &local_flush.refill {
        out.kernel.push(("invlpg_refill", refill.clone()));
    }
    let map = minus_syscall(
        names::MMAP_MUNMAP,
        2.0,
        2.0,
        "(mmap_munmap_untouched − 2 × null_syscall) / 2",
        Scales::Cycles,
    );
    let split_vma = (|| {
        let (split, split_how) = input(costs, names::MUNMAP_SPLIT)?;
        let (s, _) = syscall.clone()?;
        let munmap = map.clone()?;
        let rule = "munmap_split − null_syscall − munmap";
        let ns = positive(rule, split - s - munmap.ns)?;
        Ok(Derived {
            ns: round1(ns),
            scales: Scales::Cycles,
            how: format!("{rule}: {split_how}; munmap {:.1} ns ({})", munmap.ns, munmap.how),
            assumed_split: false,
        })
    })();
    out.kernel.push(("mmap", map.clone()));
    out.kernel.push(("munmap", map));
    out.kernel.push(("split_vma", split_vma));
    let switch = minus_syscall(
        names::THREAD_SWITCH,
        2.0,
        1.0,
        "thread_switch − 2 × null_syscall",
        Scales::Cycles,
    );
    // The wake-up measured alone (a pipe write that wakes a reader on its CPU, less the same
    // write with nobody waiting) and the switch as the rest; else the preset's proportion.
    let wake = (|| {
        let (woke, woke_how) = input(costs, names::PIPE_WAKE_LOCAL)?;
        let (write, write_how) = input(costs, names::PIPE_WRITE)?;
        let rule = "pipe_wake_local − pipe_write";
        let ns = positive(rule, woke - write)?;
        Ok::<_, String>(Derived {
            ns: round1(ns),
            scales: Scales::Cycles,
            how: format!("{rule}: {woke_how}; {write_how}"),
            assumed_split: false,
        })
    })();
    match (&switch, &wake) {
        (Ok(sw), Ok(w)) => {
            let rule = "thread_switch − 2 × null_syscall − wakeup";
            let rest = positive(rule, sw.ns - w.ns).map(|ns| Derived {
                ns: round1(ns),
                scales: Scales::Cycles,
                how: format!(
                    "{rule}: {:.1} − {:.1} ns; {}; wakeup: {}",
                    sw.ns, w.ns, sw.how, w.how
                ),
                assumed_split: false,
            });
            out.kernel.push(("context_switch", rest));
            out.kernel.push(("wakeup", wake.clone()));
        }
        _ => {
            let parts = [
                ("context_switch", preset.context_switch.cycles),
                ("wakeup", preset.wakeup.cycles),
            ];
            let why = wake.as_ref().err().map(|e| format!("wake-up not measured alone ({e})"));
            split(
                &mut out.kernel,
                &switch.clone().map(|d| match &why {
                    Some(w) => Derived { how: format!("{}; {w}", d.how), ..d },
                    None => d,
                }),
                &parts,
            );
        }
    }
    out.kernel.push((
        "pipe_op",
        minus_syscall(
            names::PIPE_PAIR,
            2.0,
            2.0,
            "(pipe_pair − 2 × null_syscall) / 2 (a 100-byte write and its read, no wake-up)",
            Scales::Cycles,
        ),
    ));
    out.kernel.push((
        "socket_op",
        minus_syscall(
            names::SOCKET_PAIR,
            2.0,
            2.0,
            "(socket_pair − 2 × null_syscall) / 2 (a 100-byte write and its read, no wake-up)",
            Scales::Cycles,
        ),
    ));
    // Misses on what another core wrote: latencies, as the line's.
    for (figure, name) in
        [("pipe_remote", names::PIPE_REMOTE_READ), ("socket_remote", names::SOCKET_REMOTE_READ)]
    {
        out.kernel.push((figure, one(name, Scales::Time, name)));
    }
    // Misses on messages that waited behind thousands of others: latencies too.
    for (figure, name) in
        [("pipe_queued", names::PIPE_QUEUED), ("socket_queued", names::SOCKET_QUEUED)]
    {
        out.kernel.push((figure, one(name, Scales::Time, name)));
    }
    out.kernel.push((
        "migrate",
        minus_syscall(names::MIGRATE, 1.0, 1.0, "migrate − null_syscall", Scales::Time),
    ));
    // A line's latency between the two cores: not the core's clock (on AMD it crosses the
    // fabric between core complexes).
    let line = one(names::LINE_PINGPONG, Scales::Time, "line_pingpong (half a round trip)");
    out.kernel.push(("cache_line_transfer", line));
    let fork = fork_exit_alone(costs);
    split(&mut out.kernel, &fork, &[("fork", preset.fork.cycles), ("exit", preset.exit.cycles)]);
    // The round trip: a synchronous cross-CPU call made on demand (a perf event toggled on the
    // other CPU) less the same call on the own CPU; else membarrier's, which IPIs only a CPU
    // that runs a thread of the caller's mm at that moment (docs/calibration.md).
    let pair = |remote: &str, local: &str| {
        let (on, on_how) = input(costs, remote)?;
        let (off, off_how) = input(costs, local)?;
        let rule = format!("{remote} − {local}");
        let ns = positive(&rule, on - off)?;
        Ok::<_, String>(Derived {
            ns: round1(ns),
            scales: Scales::Time,
            how: format!("{rule}: {on_how}; {off_how}"),
            assumed_split: false,
        })
    };
    let ipi = match pair(names::IPI_CALL_REMOTE, names::IPI_CALL_LOCAL) {
        Ok(d) => Ok(d),
        Err(call) => pair(names::MEMBARRIER_IPI, names::MEMBARRIER_NO_IPI)
            .map(|d| Derived { how: format!("{}; the cross-CPU call: {call}", d.how), ..d })
            .map_err(|mb| format!("{call}; {mb}")),
    };
    if virtualised {
        out.vm_exit = Some(one(names::VMEXIT_CPUID, Scales::Time, "vmexit_cpuid"));
    }
    // In a guest the kernel model adds the exits of an emulated APIC to every IPI (the send's,
    // and the injection's on a target without posted interrupts, which a guest cannot tell it
    // has: docs/kernel-model.md, "Virtualisation"); the measured round trip holds them, so the
    // four IPI pieces share what is left.
    let bare = match (&ipi, &out.vm_exit) {
        (Ok(rtt), Some(Ok(exit))) => {
            let rule = "the round trip − 2 × vmexit_cpuid (the send and injection exits the \
                        guest model adds)";
            positive(rule, rtt.ns - 2.0 * exit.ns).map(|ns| Derived {
                ns: round1(ns),
                scales: Scales::Time,
                how: format!("{rule}: {}; {}", rtt.how, exit.how),
                assumed_split: false,
            })
        }
        _ => ipi.clone(),
    };
    let parts = [
        ("ipi_send", preset.ipi_send.cycles),
        ("ipi_latency", preset.ipi_latency.cycles),
        ("ipi_handler", preset.ipi_handler.cycles),
        ("ipi_ack", preset.ipi_ack.cycles),
    ];
    split(&mut out.kernel, &bare, &parts);
    let ret = ipi_return(costs, &out, virtualised, local_flush);
    out.kernel.push(("ipi_return", ret));
    out.ipi_round_trip = Some(ipi);
    if virtualised {
        out.halt_wake = Some(halt_wake(costs, &out));
        migrate_without_wake_up(&mut out);
    }
    out
}

/// `ipi_return`: what a running target loses per shootdown IPI (`shootdown_target`) beyond what
/// the kernel model charges it before it acknowledges the call: the injection exit in a guest
/// (`virtualised`), `ipi_handler` (the round trip's share) and the flush the handler runs (its
/// csd's line, `flush_tlb_func` + INVLPG). What is left comes after the acknowledgement, so
/// the initiator does not wait for it: the interrupt's exit and return (and in a guest the
/// host's side of them).
fn ipi_return(
    costs: &PathCosts,
    out: &Derivation,
    virtualised: bool,
    flush: &LocalFlush,
) -> Result<Derived, String> {
    let (lost, lost_how) = input(costs, names::SHOOTDOWN_TARGET)?;
    let (exit, exit_how) = if virtualised {
        let e = vm_exit_ns(out)?;
        (e, format!("; injection exit: vm_exit {e:.1} ns"))
    } else {
        (0.0, String::new())
    };
    let handler = derived(out, "ipi_handler").ok_or("ipi_handler not derived")?;
    let rule = if virtualised {
        "shootdown_target − vm_exit − ipi_handler − the target's one-page flush"
    } else {
        "shootdown_target − ipi_handler − the target's one-page flush"
    };
    // The csd's line as measured here, when it was; the target's refill after its INVLPG, where
    // the model charges one.
    let (target, line_how) = match derived(out, "cache_line_transfer") {
        Some(line) => (
            flush.target_ns - flush.line_ns + line.ns,
            format!(", with the line measured: {:.1} ns", line.ns),
        ),
        None => (flush.target_ns, String::new()),
    };
    let refill = flush.refill_ns();
    let target = target + refill;
    let line_how = match refill > 0.0 {
        true => format!("{line_how}; + invlpg_refill {refill:.1} ns"),
        false => line_how,
    };
    let ns = positive(rule, lost - exit - handler.ns - target)?;
    Ok(Derived {
        ns: round1(ns),
        scales: Scales::Time,
        how: format!(
            "{rule}: {lost_how}{exit_how}; ipi_handler {:.1} ns; flush {target:.1} ns ({}{line_how})",
            handler.ns, flush.target_how
        ),
        assumed_split: false,
    })
}

/// `[guest] vm_exit` in ns, or why there is none.
fn vm_exit_ns(out: &Derivation) -> Result<f64, String> {
    match &out.vm_exit {
        Some(Ok(e)) => Ok(e.ns),
        Some(Err(e)) => Err(format!("vm_exit: {e}")),
        None => Err("no vm_exit".into()),
    }
}

/// The `[kernel]` figure `name`, if it was derived.
fn derived<'a>(out: &'a Derivation, name: &str) -> Option<&'a Derived> {
    out.kernel.iter().find(|(n, _)| *n == name).and_then(|(_, d)| d.as_ref().ok())
}

/// A halted vCPU's wake-up, the `[idle]` HLT state's exit latency: a token pass that wakes a
/// thread on the other CPU (halted: its thread blocked) less the same pass on one CPU leaves the
/// wake-up's delivery; the guest model charges the IPI's pieces of it itself (the waker's exit,
/// `ipi_latency`, `ipi_handler`; neither the injection exit nor `ipi_return`, which it charges
/// only on a running target: a halted vCPU is out of guest mode and gets the interrupt when KVM
/// enters it again), and the rest is the host's wake-up of the vCPU.
fn halt_wake(costs: &PathCosts, out: &Derivation) -> Result<Derived, String> {
    let (remote, remote_how) = input(costs, names::THREAD_WAKE_REMOTE)?;
    let (local, local_how) = input(costs, names::THREAD_SWITCH)?;
    let exit = vm_exit_ns(out)?;
    let piece =
        |name: &str| derived(out, name).map(|d| d.ns).ok_or_else(|| format!("{name} not derived"));
    let (latency, handler) = (piece("ipi_latency")?, piece("ipi_handler")?);
    let rule = "thread_wake_remote − thread_switch − (vm_exit + ipi_latency + ipi_handler)";
    let ns = positive(rule, remote - local - exit - latency - handler)?;
    Ok(Derived {
        ns: round1(ns),
        scales: Scales::Time,
        how: format!(
            "{rule}: {remote_how}; {local_how}; vm_exit {exit:.1} ns, ipi_latency {latency:.1} \
             ns, ipi_handler {handler:.1} ns"
        ),
        assumed_split: false,
    })
}

/// Under a hypervisor the measured migration waits for the target vCPU, halted, to wake up and
/// run the task; the kernel model adds that wake-up itself (a reschedule IPI delayed by the
/// sender's exit, the halted vCPU's exit latency, the handler and the target's context switch;
/// no injection exit for a halted vCPU: docs/kernel-model.md, "Virtualisation"), so `migrate`
/// keeps only the rest: `migrate − S − (vm_exit + halt wake + ipi_latency + ipi_handler +
/// context_switch)`, the halt wake being [`Derivation::halt_wake`], or one more `vm_exit` (its
/// lower bound) without it.
fn migrate_without_wake_up(out: &mut Derivation) {
    let get = |name: &str| derived(out, name).cloned();
    let (Some(migrate), Some(Ok(exit))) = (get("migrate"), out.vm_exit.clone()) else { return };
    let parts = ["ipi_latency", "ipi_handler", "context_switch"].map(get);
    let [Some(latency), Some(handler), Some(switch)] = parts else { return };
    let (halt, halt_name) = match &out.halt_wake {
        Some(Ok(h)) => (h.ns, "halt wake"),
        _ => (exit.ns, "vm_exit"),
    };
    let wake = exit.ns + halt + latency.ns + handler.ns + switch.ns;
    let rule = format!(
        "less the wake-up the guest model adds (vm_exit + {halt_name} + ipi_latency + \
         ipi_handler + context_switch)"
    );
    let rule = rule.as_str();
    let derived = positive(rule, migrate.ns - wake).map(|ns| Derived {
        ns: round1(ns),
        how: format!("{}; {rule} = {wake:.1} ns", migrate.how),
        ..migrate
    });
    if let Some(slot) = out.kernel.iter_mut().find(|(n, _)| *n == "migrate") {
        slot.1 = derived;
    }
}

/// `fork` + `_exit` + `waitpid` of a process without anonymous pages: `fork_exit` (a small
/// process, tlblab-pathcost) less the pages it still passes on, at the cost per page that
/// `fork_exit_grown` adds, since the model charges each process's pages itself (`fork_pte`, and
/// `mmput()`'s zap).
fn fork_exit_alone(costs: &PathCosts) -> Result<Derived, String> {
    // Each measurement with the process's anonymous pages it was taken at.
    let with_pages = |name: &str| {
        let (ns, how) = input(costs, name)?;
        let pages = costs.get(name).ok().and_then(|m| m.anon_pages);
        let pages =
            pages.ok_or_else(|| format!("{name} has no count of the process's anonymous pages"))?;
        Ok::<_, String>((ns, how, pages))
    };
    let (small, small_how, before) = with_pages(names::FORK_EXIT)?;
    let (grown, grown_how, after) = with_pages(names::FORK_EXIT_GROWN)?;
    if after <= before {
        return Err(format!(
            "fork_exit_grown's process had {after} anonymous pages, not more than fork_exit's \
             {before}"
        ));
    }
    let added = after - before;
    let per_page =
        positive("(fork_exit_grown − fork_exit) per page", (grown - small) / added as f64)?;
    let ns = positive(
        "fork_exit − its anonymous pages × the cost per page",
        small - per_page * before as f64,
    )?;
    Ok(Derived {
        ns: round1(ns),
        scales: Scales::Cycles,
        how: format!(
            "fork_exit − its {before} anonymous pages × {per_page:.1} ns per page, \
             (fork_exit_grown − fork_exit) / {added} pages: {small_how}; {grown_how} \
             ({after} pages)"
        ),
        assumed_split: false,
    })
}

/// Splits `whole` among `parts` in proportion to their weights (the preset's cycles).
pub(crate) fn split(
    out: &mut Vec<(&'static str, Result<Derived, String>)>,
    whole: &Result<Derived, String>,
    parts: &[(&'static str, u64)],
) {
    let total: u64 = parts.iter().map(|(_, w)| w).sum();
    for &(name, weight) in parts {
        let part = whole.clone().and_then(|d| {
            if total == 0 {
                return Err("the nearest preset gives no proportion (all zero)".into());
            }
            let share = weight as f64 / total as f64;
            let names: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
            Ok(Derived {
                ns: round1(d.ns * share),
                scales: d.scales,
                how: format!(
                    "{:.3} of {:.1} ns, the nearest preset's share of {} for {name}; {}",
                    share,
                    d.ns,
                    names.join(" + "),
                    d.how
                ),
                assumed_split: true,
            })
        });
        out.push((name, part));
    }
}

/// Replaces the copied `[kernel]` figures of `kernel` (at `mhz`) with those measured here, and
/// their provenance; a figure that could not be derived keeps the copy, and says why.
pub(crate) fn apply(
    kernel: &mut RawKernel,
    derivation: &Derivation,
    cached: &Cached,
    prov: &mut Vec<Provenance>,
) {
    let mhz = kernel.clock.mhz;
    let cache = cache_text(cached);
    for (name, derived) in &derivation.kernel {
        let Some((_, slot)) = kernel.figures_mut().into_iter().find(|(n, _)| n == name) else {
            continue;
        };
        let figure = format!("kernel.{name}");
        let entry = prov.iter_mut().find(|p| p.figure == figure);
        match derived {
            Ok(d) => {
                let new = figure_of(d, mhz, &cache);
                let value = new.written.describe();
                let source = new.source.clone();
                *slot = new;
                match entry {
                    Some(p) => *p = Provenance::new(figure, value, Origin::Measured, source),
                    None => prov.push(Provenance::new(figure, value, Origin::Measured, source)),
                }
            }
            Err(why) => {
                slot.source = format!("{}; not measured here: {why}", slot.source);
                if let Some(p) = entry {
                    p.origin = Origin::Fallback;
                    p.source = slot.source.clone();
                }
            }
        }
    }
}

/// A measured figure at `mhz`.
pub(crate) fn figure_of(d: &Derived, mhz: u64, cache: &str) -> KernelFigure {
    let rule = match d.scales {
        Scales::Cycles => "scales with cycles: a core-bound path",
        Scales::Time => {
            "scales with time: latency-bound (interrupt delivery, a vCPU's wake-up, exits, a \
             line crossing between cores)"
        }
    };
    KernelFigure::in_ns(
        d.ns,
        mhz,
        d.scales,
        format!("measured on this machine: {}; {rule}; {cache}", d.how),
        d.assumed_split,
    )
}

/// `cache file /root/.cache/tlblab/host-costs-….json (measured now in 4.2 s on CPUs 0, 1)`.
pub(crate) fn cache_text(cached: &Cached) -> String {
    let c = &cached.costs;
    let cpus: Vec<String> = c.cpus.iter().map(|n| n.to_string()).collect();
    let when = if cached.from_cache { "read from" } else { "measured now, written to" };
    let file = cached.file.as_ref().map_or("no cache file".to_owned(), |f| f.display().to_string());
    let mut text = format!(
        "{when} {file} ({:.1} s on CPUs {}, {}, {}, kernel {})",
        c.seconds,
        cpus.join(", "),
        c.key.cpu_model,
        c.key.signature,
        c.key.kernel_release
    );
    for note in &cached.notes {
        text.push_str("; ");
        text.push_str(note);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_pathcost::{CacheKey, Outcome};

    fn m(ns: f64) -> Outcome {
        Outcome::Measured(Measurement {
            median_ns: ns,
            p10_ns: ns * 0.9,
            p90_ns: ns * 1.1,
            runs: 21,
            runs_made: 21,
            ops_per_run: 1000,
            ipis_per_op: None,
            anon_pages: None,
            note: None,
        })
    }

    /// A fork measurement of a process with `pages` anonymous pages.
    fn fork(ns: f64, pages: u64) -> Outcome {
        match m(ns) {
            Outcome::Measured(x) => Outcome::Measured(Measurement { anon_pages: Some(pages), ..x }),
            other => other,
        }
    }

    fn costs(pairs: &[(&str, Outcome)]) -> PathCosts {
        PathCosts {
            key: CacheKey::from_parts("", "test"),
            cpus: vec![0, 1],
            seconds: 1.0,
            results: pairs.iter().map(|(n, o)| (n.to_string(), o.clone())).collect(),
            steal: Err("not sampled".into()),
        }
    }

    fn skylake() -> RawKernel {
        tlblab_sim::machine::builtin("skylake").unwrap().raw().kernel.clone().unwrap()
    }

    fn flush100() -> LocalFlush {
        LocalFlush {
            ns: 100.0,
            how: "test".into(),
            target_ns: 60.0,
            target_how: "test".into(),
            line_ns: 20.0,
            refill: None,
        }
    }

    fn ns(d: &Derivation, name: &str) -> Result<f64, String> {
        d.kernel.iter().find(|(n, _)| *n == name).unwrap().1.clone().map(|d| d.ns)
    }

    /// A fault on a frame freed a moment ago, as measured, only when it is cheaper than one on
    /// a fresh page; the loops' page counts are the kernel model's.
    #[test]
    fn a_hot_fault_is_kept_only_below_the_cold_one() {
        let derive_with = |hot: f64| {
            let c = costs(&[
                (names::NULL_SYSCALL, m(70.0)),
                (names::FAULT_ANON, m(900.0)),
                (names::FAULT_ANON_HOT, m(hot)),
            ]);
            derive(&c, &skylake(), false, &flush100())
        };
        assert_eq!(ns(&derive_with(640.0), "page_fault_anon_hot"), Ok(640.0));
        let e = ns(&derive_with(950.0), "page_fault_anon_hot").unwrap_err();
        assert!(e.contains("not below minor_fault_anon"), "{e}");
        let raw = tlblab_sim::machine::raw::FAULT_HOT_PAGES;
        assert_eq!(tlblab_pathcost::measure::HOT_FAULT_PAGES as u64, raw);
        let cold = tlblab_sim::machine::raw::FAULT_COLD_PAGES;
        assert_eq!(tlblab_pathcost::measure::FAULT_PAGES, cold);
    }

    /// A worked example: the rules with round inputs.
    #[test]
    fn derivation_worked_example() {
        let c = costs(&[
            (names::NULL_SYSCALL, m(100.0)),
            (names::FAULT_ZERO, m(600.0)),
            (names::FAULT_ANON, m(1500.0)),
            (names::MADVISE_EMPTY, m(350.0)),
            (names::DONTNEED_ONE, m(900.0)),
            (names::DONTNEED_SMALL, m(20_000.0)),
            (names::DONTNEED_LARGE, m(50_000.0)),
            (names::MPROTECT_EMPTY, m(800.0)),
            (names::MPROTECT_SMALL, m(10_000.0)),
            (names::MPROTECT_LARGE, m(29_200.0)),
            (names::MMAP_MUNMAP, m(3_200.0)),
            (names::MUNMAP_SPLIT, m(2_800.0)),
            (names::THREAD_SWITCH, m(1_200.0)),
            (names::MEMBARRIER_IPI, m(17_000.0)),
            (names::MEMBARRIER_NO_IPI, m(500.0)),
            (names::VMEXIT_CPUID, m(8_000.0)),
            (names::MIGRATE, m(40_100.0)),
            // 150 ns per page: 267,564 ns for a process without pages.
            (names::FORK_EXIT, fork(1_017_564.0, 5_000)),
            (names::FORK_EXIT_GROWN, fork(1_631_964.0, 9_096)),
        ]);
        let d = derive(&c, &skylake(), true, &flush100());
        assert_eq!(ns(&d, "syscall"), Ok(100.0));
        assert_eq!(ns(&d, "page_fault_zero"), Ok(600.0));
        assert_eq!(ns(&d, "page_fault_anon"), Ok(1500.0));
        assert_eq!(ns(&d, "page_fault_cow"), Ok(1500.0));
        assert_eq!(ns(&d, "madvise"), Ok(250.0)); // 350 − 100
        assert_eq!(ns(&d, "zap_pte"), Ok(156.3)); // 30,000 / 192 = 156.25
        assert_eq!(ns(&d, "mmap"), Ok(1500.0)); // (3,200 − 200) / 2
        assert_eq!(ns(&d, "munmap"), Ok(1500.0));
        // 900 − 100 (syscall) − 250 (madvise) − 156.3 (zap_pte, as derived) − 100 (the flush).
        assert_eq!(ns(&d, "zap_batch"), Ok(293.7));
        // (29,200 − 10,000) / 192 per PTE; 800 − 100 (syscall), with no PTE and no flush.
        assert_eq!(ns(&d, "change_pte"), Ok(100.0));
        assert_eq!(ns(&d, "mprotect"), Ok(700.0));
        // 2,800 − 100 − 1,500.
        assert_eq!(ns(&d, "split_vma"), Ok(1200.0));
        // 1,200 − 200 = 1,000 ns, split 1,770 : 500 (skylake's context_switch : wakeup).
        assert_eq!(ns(&d, "context_switch"), Ok(779.7));
        assert_eq!(ns(&d, "wakeup"), Ok(220.3));
        // 40,100 − 100 less the wake-up the guest model adds: 2 × 8,000 (the send's exit, and
        // one for the halted vCPU's wake-up, its lower bound) + 208.3 + 125.0 + 779.7 = 17,113 ns.
        assert_eq!(ns(&d, "migrate"), Ok(22_887.0));
        // 1,017,564 − 5,000 pages × (1,631,964 − 1,017,564) / 4,096 = 267,564, split 150,000 :
        // 117,564 (skylake's fork : exit, in cycles at 4 GHz).
        assert_eq!(ns(&d, "fork"), Ok(150_000.0));
        assert_eq!(ns(&d, "exit"), Ok(117_564.0));
        // Under a hypervisor: 16,500 ns less the 2 × 8,000 ns of exits the guest model adds
        // (send, injection) = 500 ns, split 800 : 2,000 : 1,200 : 800.
        assert_eq!(ns(&d, "ipi_send"), Ok(83.3));
        assert_eq!(ns(&d, "ipi_latency"), Ok(208.3));
        assert_eq!(ns(&d, "ipi_handler"), Ok(125.0));
        assert_eq!(ns(&d, "ipi_ack"), Ok(83.3));
        // On bare metal the whole round trip is split.
        let bare = derive(&c, &skylake(), false, &flush100());
        assert_eq!(ns(&bare, "migrate"), Ok(40_000.0));
        assert_eq!(ns(&bare, "ipi_send"), Ok(2_750.0));
        assert_eq!(ns(&bare, "ipi_latency"), Ok(6_875.0));
        assert_eq!(d.ipi_round_trip.clone().unwrap().map(|d| d.ns), Ok(16_500.0));
        assert_eq!(
            d.vm_exit.clone().unwrap().map(|d| (d.ns, d.scales)),
            Ok((8_000.0, Scales::Time))
        );
        let scales =
            |name| d.kernel.iter().find(|(n, _)| *n == name).unwrap().1.clone().unwrap().scales;
        assert_eq!(scales("syscall"), Scales::Cycles);
        assert_eq!(scales("migrate"), Scales::Time);
        assert_eq!(scales("ipi_latency"), Scales::Time);
        // On bare metal there is no VM exit to record.
        assert!(derive(&c, &skylake(), false, &flush100()).vm_exit.is_none());
        // Without thread_wake_remote no halt wake-up: migrate keeps vm_exit as its lower bound.
        assert!(d.halt_wake.clone().unwrap().unwrap_err().contains("thread_wake_remote"));
        // With it: 40,000 − 1,200 − (8,000 + 208.3 + 125.0) = 30,466.7 ns (no injection exit:
        // the vCPU was halted), and migrate loses that wake-up instead of the second exit:
        // 40,000 − (8,000 + 30,466.7 + 208.3 + 125.0 + 779.7) = 420.3 ns.
        let mut woken = c.clone();
        woken.results.insert(names::THREAD_WAKE_REMOTE.into(), m(40_000.0));
        let w = derive(&woken, &skylake(), true, &flush100());
        assert_eq!(
            w.halt_wake.clone().unwrap().map(|d| (d.ns, d.scales)),
            Ok((30_466.7, Scales::Time))
        );
        assert_eq!(ns(&w, "migrate"), Ok(420.3));
        // On bare metal a wake-up is not a vCPU's.
        assert!(derive(&woken, &skylake(), false, &flush100()).halt_wake.is_none());
        // Without the cross-CPU call the round trip is membarrier's, and says why.
        let rtt = d.ipi_round_trip.clone().unwrap().unwrap();
        assert!(rtt.how.contains("ipi_call_remote not measured"), "{}", rtt.how);
        assert!(ns(&d, "pipe_op").unwrap_err().contains("pipe_pair not measured"));
    }

    /// With the target's loss per shootdown measured, `ipi_return` is what the target loses
    /// beyond what the model charges it before the acknowledgement; the round trip's four
    /// pieces are as without it. A loss the model already charges in full leaves no figure.
    #[test]
    fn the_interrupts_return_is_what_the_target_loses_past_its_acknowledgement() {
        let mut c = costs(&[
            (names::NULL_SYSCALL, m(100.0)),
            (names::IPI_CALL_REMOTE, m(20_000.0)),
            (names::IPI_CALL_LOCAL, m(1_500.0)),
            (names::SHOOTDOWN_TARGET, m(9_000.0)),
            (names::VMEXIT_CPUID, m(8_000.0)),
        ]);
        let d = derive(&c, &skylake(), true, &flush100());
        // The round trip's pieces as in call_ipi_wake_up_and_channel_pairs: 2,500 ns shared.
        assert_eq!(ns(&d, "ipi_handler"), Ok(625.0));
        assert_eq!(ns(&d, "ipi_latency"), Ok(1_041.7));
        // 9,000 − 8,000 (the injection exit) − 625 (ipi_handler) − 60 (the target's flush).
        assert_eq!(ns(&d, "ipi_return"), Ok(315.0));
        let ret = d.kernel.iter().find(|(n, _)| *n == "ipi_return").unwrap().1.clone().unwrap();
        assert!(!ret.assumed_split && ret.scales == Scales::Time);
        assert!(ret.how.starts_with("shootdown_target − vm_exit − ipi_handler"), "{}", ret.how);
        // On bare metal there is no injection exit, and the whole round trip is shared:
        // 9,000 − 18,500 × 1,200 / 4,800 − 60.
        let bare = derive(&c, &skylake(), false, &flush100());
        assert_eq!(ns(&bare, "ipi_return"), Ok(4_315.0));
        // With the line measured (line_pingpong 50 ns, already half a round trip) the flush holds
        // it instead of the copied 20 ns: 9,000 − 8,000 − 625 − (60 − 20 + 50).
        assert!(ns(&d, "cache_line_transfer").unwrap_err().contains("line_pingpong not measured"));
        let mut lined = c.clone();
        lined.results.insert(names::LINE_PINGPONG.into(), m(50.0));
        let l = derive(&lined, &skylake(), true, &flush100());
        assert_eq!(ns(&l, "cache_line_transfer"), Ok(50.0));
        assert_eq!(ns(&l, "ipi_return"), Ok(285.0));
        // The halted vCPU's wake-up and the migration keep the return: the model charges it
        // only on a running target. 40,000 − 1,200 − (8,000 + 1,041.7 + 625).
        let mut woken = c.clone();
        woken.results.insert(names::THREAD_WAKE_REMOTE.into(), m(40_000.0));
        woken.results.insert(names::THREAD_SWITCH.into(), m(1_200.0));
        woken.results.insert(names::MIGRATE.into(), m(40_100.0));
        let w = derive(&woken, &skylake(), true, &flush100());
        assert_eq!(w.halt_wake.clone().unwrap().map(|d| d.ns), Ok(29_133.3));
        // 40,000 − (8,000 + 29,133.3 + 1,041.7 + 625 + 779.7).
        assert_eq!(ns(&w, "migrate"), Ok(420.3));
        // A loss the model already charges before the acknowledgement: no figure, and why.
        c.results.insert(names::SHOOTDOWN_TARGET.into(), m(8_600.0));
        let d = derive(&c, &skylake(), true, &flush100());
        assert!(ns(&d, "ipi_return").unwrap_err().contains("not positive"));
        // Not measured: the reason names the measurement.
        c.results.remove(names::SHOOTDOWN_TARGET);
        let d = derive(&c, &skylake(), true, &flush100());
        assert!(ns(&d, "ipi_return").unwrap_err().contains("shootdown_target not measured"));
    }

    /// The same worked example with the cross-CPU call, the wake-up alone and the message
    /// pairs measured.
    #[test]
    fn call_ipi_wake_up_and_channel_pairs() {
        let c = costs(&[
            (names::NULL_SYSCALL, m(100.0)),
            (names::THREAD_SWITCH, m(1_200.0)),
            (names::MEMBARRIER_IPI, Outcome::Failed("no run delivered".into())),
            (names::IPI_CALL_REMOTE, m(20_000.0)),
            (names::IPI_CALL_LOCAL, m(1_500.0)),
            (names::PIPE_WRITE, m(700.0)),
            (names::PIPE_WAKE_LOCAL, m(950.0)),
            (names::PIPE_PAIR, m(1_000.0)),
            (names::SOCKET_PAIR, m(1_600.0)),
            (names::PIPE_REMOTE_READ, m(150.0)),
            (names::SOCKET_REMOTE_READ, m(-20.0)),
            (names::SOCKET_QUEUED, m(480.0)),
            (names::VMEXIT_CPUID, m(8_000.0)),
            (names::MIGRATE, m(40_100.0)),
        ]);
        let d = derive(&c, &skylake(), true, &flush100());
        // Remote reads as measured, in time; one lost in noise keeps the preset's, and why.
        assert_eq!(ns(&d, "pipe_remote"), Ok(150.0));
        let remote = d.kernel.iter().find(|(n, _)| *n == "pipe_remote").unwrap().1.clone();
        assert_eq!(remote.clone().map(|r| r.scales), Ok(Scales::Time));
        assert!(remote.unwrap().how.starts_with("pipe_remote_read: pipe_remote_read 150 ns"));
        assert!(ns(&d, "socket_remote").unwrap_err().contains("not positive"));
        // Queued messages as measured, in time; one not measured keeps the preset's.
        assert_eq!(ns(&d, "socket_queued"), Ok(480.0));
        assert!(ns(&d, "pipe_queued").is_err());
        // The depth the loops measure at is the one the kernel model scales by.
        assert_eq!(tlblab_pathcost::QUEUED_SINCE_MEAN, tlblab_sim::machine::raw::QUEUED_SINCE_MEAN);
        // 950 − 700; the switch is the rest of 1,200 − 200.
        assert_eq!(ns(&d, "wakeup"), Ok(250.0));
        assert_eq!(ns(&d, "context_switch"), Ok(750.0));
        // (1,000 − 200) / 2 and (1,600 − 200) / 2.
        assert_eq!(ns(&d, "pipe_op"), Ok(400.0));
        assert_eq!(ns(&d, "socket_op"), Ok(700.0));
        // 20,000 − 1,500 = 18,500 ns, membarrier's failure notwithstanding; less 2 × 8,000 =
        // 2,500 ns split 800 : 2,000 : 1,200 : 800.
        assert_eq!(d.ipi_round_trip.clone().unwrap().map(|d| d.ns), Ok(18_500.0));
        assert_eq!(ns(&d, "ipi_send"), Ok(416.7));
        assert_eq!(ns(&d, "ipi_latency"), Ok(1_041.7));
        assert_eq!(ns(&d, "ipi_handler"), Ok(625.0));
        assert_eq!(ns(&d, "ipi_ack"), Ok(416.7));
        // 40,000 less 2 × 8,000 (the send's exit, and the halted vCPU's wake-up at its lower
        // bound) + 1,041.7 + 625 + 750 (the measured switch) = 21,583.3.
        assert_eq!(ns(&d, "migrate"), Ok(21_583.3));
        let how = |name| d.kernel.iter().find(|(n, _)| *n == name).unwrap().1.clone().unwrap();
        assert!(!how("wakeup").assumed_split && !how("context_switch").assumed_split);
        assert!(how("ipi_send").assumed_split);
        // A wake-up that is not positive leaves the preset's proportion, with the reason.
        let mut noisy = c.clone();
        noisy.results.insert(names::PIPE_WAKE_LOCAL.into(), m(600.0));
        let d = derive(&noisy, &skylake(), true, &flush100());
        assert_eq!(ns(&d, "wakeup"), Ok(220.3));
        assert!(how_of(&d, "wakeup").contains("wake-up not measured alone"));
    }

    fn how_of(d: &Derivation, name: &str) -> String {
        d.kernel.iter().find(|(n, _)| *n == name).unwrap().1.clone().unwrap().how
    }

    #[test]
    fn failures_and_noise_keep_the_reason() {
        let c = costs(&[
            (names::NULL_SYSCALL, m(100.0)),
            (names::MADVISE_EMPTY, m(90.0)),
            (names::MEMBARRIER_IPI, Outcome::Failed("needs 2 CPUs".into())),
        ]);
        let d = derive(&c, &skylake(), false, &flush100());
        assert!(ns(&d, "madvise").unwrap_err().contains("not positive"));
        assert!(ns(&d, "ipi_latency").unwrap_err().contains("needs 2 CPUs"));
        assert!(ns(&d, "fork").unwrap_err().contains("fork_exit was not measured"));
    }

    /// The fork figures need both sizes, a larger second process, and a positive remainder.
    #[test]
    fn fork_and_exit_are_those_of_a_process_without_pages_or_none() {
        let with = |small: Outcome, grown: Outcome| {
            let c = costs(&[(names::FORK_EXIT, small), (names::FORK_EXIT_GROWN, grown)]);
            ns(&derive(&c, &skylake(), false, &flush100()), "fork")
        };
        // 200 + 100 ns per page × 1,000 pages; the split gives fork 150,000 / 267,564 of it.
        let fork_ns = with(fork(300_000.0, 1_000), fork(709_600.0, 5_096)).unwrap();
        assert!((fork_ns - 200_000.0 * 150_000.0 / 267_564.0).abs() < 0.1, "{fork_ns}");
        assert!(with(fork(300_000.0, 1_000), m(700_000.0)).unwrap_err().contains("no count"));
        assert!(with(fork(300_000.0, 1_000), fork(700_000.0, 1_000))
            .unwrap_err()
            .contains("not more than"));
        // A per-page cost so high that nothing is left: noise, not a figure.
        assert!(with(fork(300_000.0, 1_000), fork(1_600_000.0, 5_096))
            .unwrap_err()
            .contains("not positive"));
    }
}
