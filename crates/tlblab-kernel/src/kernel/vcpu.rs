//! The host preempting vCPUs, and KVM's paravirtual TLB flush (docs/kernel-model.md,
//! "Virtualisation").
//!
//! **Preemption** (mechanism `vcpu-preemption`). On an overcommitted host a physical CPU is
//! shared by `overcommit` runnable threads on average (the vCPU and others). The host scheduler
//! runs each for its slice in turn: EEVDF gives every runnable task a request of
//! `sysctl_sched_base_slice` (0.75 ms × (1 + ilog2(min(ncpus, 8))), kernel/sched/fair.c,
//! 6.6+); CFS gave each `sysctl_sched_latency / nr_running` (6 ms × the same factor, at least
//! `sysctl_sched_min_granularity`). Without `HRTICK` (a scheduler feature off by default) the
//! host notices a used slice at its next tick (`task_tick_fair()` → `update_curr()`), so a run
//! lasts `host_slice` plus a uniform part of a host tick (`1 / host_hz`). A vCPU runs one such
//! slice, then waits while `k` other threads run theirs: steal. `k` is `⌊overcommit − 1⌋`, plus
//! one with probability `frac(overcommit − 1)`, drawn per slice from the run's seed (its own
//! stream, so that nothing else draws differently); the first slice's end is uniform within a
//! slice. The vCPU's share is then `1 / overcommit` on average, as a fair scheduler gives it.
//! (The tick's part also keeps the vCPUs from locking into one phase, as exact slices would.)
//!
//! While preempted a vCPU runs nothing: its step, interrupt handlers and the acknowledgements it
//! waits for all wait for the end of the preemption, which is steal time
//! (`CpuTime::steal_cycles`). A native shootdown's initiator therefore waits out a preempted
//! target's remaining preemption. NOTE: the model preempts a vCPU whatever it does, idle
//! included: right for `idle=poll` (the vCPU spins, runnable on the host), where a halted vCPU
//! would instead not be runnable on the host and wait for a pCPU only when woken. A preemption
//! that comes while a handler runs starts after it (the host's timer interrupt is taken at the
//! handler's end). Guest ticks that fall in a preemption are dropped (the kernel takes one, late).
//!
//! **PV TLB flush** (mechanism `pv-tlb-flush`). With `KVM_FEATURE_PV_TLB_FLUSH` (and steal time)
//! a 4.16+ guest's `pv_ops.mmu.flush_tlb_multi` is `kvm_flush_tlb_multi()`
//! (arch/x86/kernel/kvm.c, v6.18; `kvm_flush_tlb_others()` before 5.12): for each CPU of the
//! flush's mask it reads the target's `steal_time.preempted`; if `KVM_VCPU_PREEMPTED` is set it
//! sets `KVM_VCPU_FLUSH_TLB` there (cmpxchg) and drops the CPU from the mask, then calls
//! `native_flush_tlb_multi()` with what is left. At the vCPU's next entry, `record_steal_time()`
//! (arch/x86/kvm/x86.c) exchanges the flag for 0 and, if `KVM_VCPU_FLUSH_TLB` was set, calls
//! `kvm_vcpu_flush_tlb_guest()`: on VMX `vpid_sync_context()`, an INVVPID single-context that
//! drops every translation and paging-structure-cache entry of the guest, all PCIDs and global
//! ones included (SVM flushes the guest's ASID alike). That is before the vCPU runs guest code.
//! Consequences the model keeps: the marked vCPU runs no `flush_tlb_func()`, so its
//! `cpu_tlbstate` generations stay behind (it catches up at its next flush or switch, a
//! redundant flush), the guest's `tlb:tlb_flush` shows no `remote shootdown` for it, and
//! NOTE: the marking is done on the mask as given, before `native_flush_tlb_multi()` skips lazy
//! CPUs, so a preempted lazy vCPU is flushed in full by the host although a native flush would
//! not have interrupted it. The host's flush costs the guest nothing but the refills (it runs
//! in the entry path, steal time).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::acct::Inserted;
use super::guest::HostPreemption;
use super::{Event, Kernel};
use crate::cpumask::CpuMask;
use crate::observer::Observer;
use tlblab_types::{CpuId, Cycles};

/// The host's side of the vCPUs: when each is preempted, and the PV flushes it owes them.
#[derive(Clone, Debug)]
pub(super) struct HostSched {
    host: HostPreemption,
    /// Its own stream (the run's seed, derived), so that runs without it draw as before.
    rng: Pcg64Mcg,
    /// The guest uses KVM's PV TLB flush (and the mechanism is on).
    pub pv_tlb_flush: bool,
    vcpus: Vec<VcpuState>,
    /// Preemptions begun, and their cycles, all vCPUs.
    pub preemptions: u64,
    /// Flushes left to the host (`KVM_VCPU_FLUSH_TLB` set).
    pub pv_marked: u64,
    /// Full flushes the host did at a vCPU's entry (`kvm_vcpu_flush_tlb_guest()`).
    pub pv_flushed: u64,
    /// Tests: a host that marks but never flushes (the checker must catch it).
    #[cfg(test)]
    pub skip_host_flush: bool,
}

/// One vCPU as the host sees it.
#[derive(Clone, Copy, Debug, Default)]
struct VcpuState {
    /// The current (or last) preemption: `[from, until)`.
    from: Cycles,
    until: Cycles,
    /// `KVM_VCPU_FLUSH_TLB` is set in its `steal_time.preempted`.
    flush_on_entry: bool,
}

/// The seed's derivation for the host's stream.
const HOST_SCHED_STREAM: u64 = 0x6b76_6d5f_7374_6561;

impl HostSched {
    pub(super) fn new(host: HostPreemption, pv_tlb_flush: bool, nr_cpus: usize, seed: u64) -> Self {
        HostSched {
            host,
            rng: Pcg64Mcg::seed_from_u64(seed ^ HOST_SCHED_STREAM),
            pv_tlb_flush,
            vcpus: vec![VcpuState::default(); nr_cpus],
            preemptions: 0,
            pv_marked: 0,
            pv_flushed: 0,
            #[cfg(test)]
            skip_host_flush: false,
        }
    }

    /// Threads that run on the vCPU's pCPU before it runs again: `⌊r − 1⌋`, plus one with
    /// probability `frac(r − 1)`.
    fn competitors(&mut self) -> u64 {
        let extra = self.host.overcommit - 1.0;
        let whole = extra.floor();
        let more = self.rng.random_range(0.0..1.0) < extra - whole;
        whole as u64 + u64::from(more)
    }

    /// One thread's run on the host: its slice, until the host's next tick.
    fn run_length(&mut self) -> u64 {
        self.host.slice.max(1) + self.rng.random_range(0..self.host.tick.max(1))
    }
}

impl<O: Observer> Kernel<O> {
    /// Schedules every vCPU's first slice end (at boot).
    pub(super) fn start_host_sched(&mut self) {
        let Some(h) = self.host_sched.as_mut() else { return };
        let firsts: Vec<u64> = (0..h.vcpus.len())
            .map(|_| {
                let run = h.run_length();
                h.rng.random_range(0..run)
            })
            .collect();
        for (c, at) in firsts.into_iter().enumerate() {
            self.push(Cycles(at), Event::VcpuPreempt { cpu: CpuId(c as u16) });
        }
    }

    /// `cpu`'s host slice ends: the host runs the threads it shares its pCPU with, if any this
    /// time, and `cpu` waits for them (steal time); else it runs another slice.
    pub(super) fn vcpu_slice_ends(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        let now = self.queue.now();
        let Some(h) = self.host_sched.as_mut() else { return };
        let k = h.competitors();
        if k == 0 {
            let run = h.run_length();
            self.push(Cycles(now.0 + run), Event::VcpuPreempt { cpu });
            return;
        }
        let len = (0..k).map(|_| h.run_length()).sum::<u64>();
        h.preemptions += 1;
        // Laid after a handler still running (as every insertion is): the preemption starts
        // where the CPU's running insertions end.
        let start = self.acct_insert(cpu, len, Inserted::Steal);
        let until = Cycles(start.0 + len);
        let h = self.host_sched.as_mut().expect("checked above");
        h.vcpus[c].from = start;
        h.vcpus[c].until = until;
        // Its pending step, its interrupts and the acknowledgements it waits for all wait.
        self.delay_step(cpu, len);
        let st = &mut self.cpus[c];
        st.irq_free_at = st.irq_free_at.max(until);
        self.push(until, Event::VcpuResume { cpu });
    }

    /// The host runs `cpu` again: `record_steal_time()` at its entry (a full flush if a PV
    /// flush was left to it), then the guest's waiting interrupts.
    pub(super) fn vcpu_resumes(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        let now = self.queue.now();
        let Some(h) = self.host_sched.as_mut() else { return };
        let run = h.run_length();
        if std::mem::take(&mut h.vcpus[c].flush_on_entry) {
            h.pv_flushed += 1;
            // kvm_vcpu_flush_tlb_guest(): INVVPID single-context, globals included.
            #[cfg(test)]
            if h.skip_host_flush {
                return self.push(Cycles(now.0 + run), Event::VcpuPreempt { cpu });
            }
            self.hw[c].lose_translations(&mut self.hw_stats[c]);
        }
        self.push(Cycles(now.0 + run), Event::VcpuPreempt { cpu });
        self.queue_drain(cpu);
    }

    /// Whether the host has `cpu` preempted now (its `steal_time.preempted` is set).
    pub(super) fn vcpu_preempted(&self, cpu: CpuId) -> bool {
        let now = self.queue.now();
        self.host_sched.as_ref().is_some_and(|h| {
            let v = &h.vcpus[usize::from(cpu.0)];
            v.from <= now && now < v.until
        })
    }

    /// Whether the host owes `cpu` a full flush before it runs again (`KVM_VCPU_FLUSH_TLB`).
    pub(super) fn vcpu_flush_on_entry(&self, cpu: usize) -> bool {
        self.host_sched.as_ref().is_some_and(|h| h.vcpus[cpu].flush_on_entry)
    }

    /// Whether the guest's remote flushes go through `kvm_flush_tlb_multi()`.
    pub(super) fn pv_tlb_flush(&self) -> bool {
        self.host_sched.as_ref().is_some_and(|h| h.pv_tlb_flush)
    }

    /// `kvm_flush_tlb_multi()`'s filter: every preempted CPU of `mask` but the initiator is
    /// marked `KVM_VCPU_FLUSH_TLB` and dropped from it.
    pub(super) fn kvm_flush_tlb_multi(&mut self, cpu: CpuId, mask: &mut CpuMask) {
        let preempted: Vec<CpuId> =
            mask.iter().filter(|&t| t != cpu && self.vcpu_preempted(t)).collect();
        let h = self.host_sched.as_mut().expect("only with PV flush");
        for t in preempted {
            h.vcpus[usize::from(t.0)].flush_on_entry = true;
            h.pv_marked += 1;
            mask.clear(t);
        }
    }

    /// Preemptions begun, flushes left to the host and host flushes done (all 0 without vCPU
    /// preemption).
    pub fn vcpu_counts(&self) -> (u64, u64, u64) {
        self.host_sched.as_ref().map_or((0, 0, 0), |h| (h.preemptions, h.pv_marked, h.pv_flushed))
    }

    /// The host's side of the run, when it preempts vCPUs.
    pub(crate) fn vcpu_stats(&self) -> Option<crate::stats::VcpuStats> {
        self.host_sched.as_ref().map(|h| crate::stats::VcpuStats {
            preemptions: h.preemptions,
            pv_marked: h.pv_marked,
            pv_flushed: h.pv_flushed,
        })
    }

    /// Tests: the host marks but never flushes.
    #[cfg(test)]
    pub(super) fn skip_host_flush(&mut self) {
        self.host_sched.as_mut().expect("an overcommitted guest").skip_host_flush = true;
    }
}
