//! AMD INVLPGB/TLBSYNC broadcast flushes with global ASIDs (Linux 6.15, Rik van Riel;
//! arch/x86/mm/tlb.c, arch/x86/include/asm/tlb.h).
//!
//! An mm that is busy on more than three CPUs at once gets a global ASID (the same on every
//! CPU); its flushes are then broadcast by INVLPGB and waited for by TLBSYNC, with no IPI and no
//! `tlb_gen` bookkeeping. CPUs still running it under a dynamic ASID (the transition) are
//! interrupted as before until none is left.

use super::{CallId, Kernel};
use crate::ids::{Asid, MmId, TaskId, TLB_NR_DYN_ASIDS};
use crate::kernel::flush::FLUSH_ALL_END;
use crate::observer::Observer;
use crate::tlb_state::LoadedMm;
use tlblab_types::{CpuId, InvlpgbRange, InvlpgbScope, PageSize, Pcid, TlbOp, Vpn};

/// The global-ASID allocator (`global_asid_used`, `global_asid_freed`, `last_global_asid`).
#[derive(Clone, Debug)]
pub(crate) struct GlobalAsids {
    pub(super) used: Vec<bool>,
    pub(super) freed: Vec<bool>,
    pub(super) last: u16,
    pub(super) available: u16,
}

impl GlobalAsids {
    /// `MAX_ASID_AVAILABLE`: `(1 << 12) - 2`, halved with PTI compiled in (the model: with
    /// PTI on, since 6.16 disables INVLPGB under PTI anyway).
    pub(crate) fn new(pti: bool) -> GlobalAsids {
        let max = if pti { (1 << 11) - 2 } else { (1 << 12) - 2 };
        GlobalAsids {
            used: vec![false; max],
            freed: vec![false; max],
            last: max as u16,
            available: max as u16 - TLB_NR_DYN_ASIDS - 1,
        }
    }

    pub(super) fn max(&self) -> u16 {
        self.used.len() as u16
    }
}

impl<O: Observer> Kernel<O> {
    /// `mm_active_cpus_exceeds(mm, threshold)`: more than `threshold` CPUs of the mm's
    /// `mm_cpumask` have it loaded and are not lazy. The kernel first rules out masks of
    /// `threshold` CPUs or fewer (`cpumask_weight()`), then walks the mask.
    pub(super) fn mm_active_cpus_exceeds(&self, mm: MmId, threshold: usize) -> bool {
        let mask = &self.mms[mm.0 as usize].cpumask;
        if mask.iter().count() <= threshold {
            return false;
        }
        let active = mask
            .iter()
            .filter(|c| {
                let st = &self.cpus[usize::from(c.0)].tlb;
                st.loaded_mm == LoadedMm::Mm(mm) && !st.is_lazy
            })
            .count();
        active > threshold
    }

    /// `consider_global_asid()`, called by `flush_tlb_mm_range()` after an IPI flush of `mm`
    /// by task `t` (only there: not after a local-only flush, nor after a broadcast): sampled
    /// when the task's pid matches the jiffy (`(pid & 0x1f) == (jiffies & 0x1f)`, 1 in 32),
    /// it gives a global ASID to an mm active on four or more CPUs
    /// (`mm_active_cpus_exceeds(mm, 3)`) through `use_global_asid()`. Returns the cycles of
    /// the system-wide flush an ASID-space reset needed.
    pub(super) fn consider_global_asid(&mut self, cpu: CpuId, t: TaskId, mm: MmId) -> u64 {
        if !self.global_asid_policy() || self.mms[mm.0 as usize].global_asid.is_some() {
            return 0;
        }
        // NOTE (6.15): the sampling uses the pid of the task that flushes (the thread id, here
        // the task's id), so that which thread of a process flushes decides how soon the check
        // runs.
        if u64::from(t.0) & 0x1f != self.jiffies() & 0x1f {
            return 0;
        }
        if !self.mm_active_cpus_exceeds(mm, 3) {
            return 0;
        }
        self.use_global_asid(cpu, mm)
    }

    /// `use_global_asid()` (under `global_asid_lock`): none when the space is exhausted
    /// (`global_asid_available == 0`: the kernel warns once), else `allocate_global_asid()`
    /// and `mm_assign_global_asid()`, which starts the transition. Returns the cycles of any
    /// reset.
    pub(super) fn use_global_asid(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        if self.global_asids.available == 0 {
            return 0;
        }
        let (asid, cycles) = self.allocate_global_asid(cpu);
        let Some(asid) = asid else { return cycles };
        let m = &mut self.mms[mm.0 as usize];
        m.asid_transition = true;
        m.global_asid = Some(Asid(asid));
        cycles
    }

    /// `allocate_global_asid()`: when the previous allocation reached the top of the space
    /// (`last_global_asid >= MAX_ASID_AVAILABLE - 1`), `reset_global_asid_space()` first; then
    /// the next unused ASID from `last_global_asid` up.
    fn allocate_global_asid(&mut self, cpu: CpuId) -> (Option<u16>, u64) {
        let mut cycles = 0;
        // NOTE (6.15): `last_global_asid` starts at MAX_ASID_AVAILABLE, so the very first
        // allocation after boot resets the space too, with its system-wide flush.
        if self.global_asids.last >= self.global_asids.max() - 1 {
            cycles += self.reset_global_asid_space(cpu);
        }
        let g = &mut self.global_asids;
        let Some(asid) = (g.last..g.max()).find(|&a| !g.used[usize::from(a)]) else {
            // "Unable to allocate global ASID despite %d available": never expected.
            return (None, cycles);
        };
        g.used[usize::from(asid)] = true;
        g.last = asid;
        g.available -= 1;
        (Some(asid), cycles)
    }

    /// `reset_global_asid_space()`: flush every non-global translation on every CPU, after
    /// which the ASIDs freed since the last reset are free again; the search restarts at the
    /// first global ASID. Returns the initiator's cycles.
    fn reset_global_asid_space(&mut self, cpu: CpuId) -> u64 {
        // With INVLPGB: invlpgb_flush_all_nonglobals(). The RAR series (2025 RFC) does a
        // flush_tlb_all() instead: an IPI to every CPU (kernel/rar.rs).
        let cycles = if self.policy.rar {
            self.rar_flush_all(cpu)
        } else {
            self.invlpgb_flush_sync(cpu, (0, FLUSH_ALL_END), None, false)
        };
        let g = &mut self.global_asids;
        for (used, freed) in g.used.iter_mut().zip(g.freed.iter_mut()) {
            *used &= !*freed;
            *freed = false;
        }
        g.last = TLB_NR_DYN_ASIDS;
        self.counters.broadcast.global_asid_resets += 1;
        cycles
    }

    /// `mm_free_global_asid()`: a torn-down mm's global ASID is reused only after the next
    /// wrap of the space (which flushes it).
    pub(super) fn free_global_asid(&mut self, mm: MmId) {
        if let Some(asid) = self.mms[mm.0 as usize].global_asid.take() {
            self.global_asids.freed[usize::from(asid.0)] = true;
            self.global_asids.available += 1;
        }
    }

    /// One INVLPGB from `cpu`: its own TLB at once (and its cycles), every other CPU's too
    /// (the broadcast; completion is what TLBSYNC waits for).
    pub(super) fn invlpgb_broadcast(&mut self, cpu: CpuId, scope: InvlpgbScope) -> u64 {
        let cycles = self.hw_op(cpu, TlbOp::Invlpgb(scope));
        for c in (0..self.cpus.len()).filter(|&c| c != usize::from(cpu.0)) {
            self.hw[c].invlpgb_remote(&scope, &mut self.hw_stats[c]);
        }
        cycles
    }

    /// INVLPGBs covering pages `start..end` (every address for [`FLUSH_ALL_END`]) of `pcid`
    /// (every PCID for `None`), in chunks of `invlpgb_count_max` pages, then TLBSYNC. Returns
    /// the initiator's cycles.
    pub(super) fn invlpgb_flush_sync(
        &mut self,
        cpu: CpuId,
        (start, end): (u64, u64),
        pcid: Option<Pcid>,
        include_global: bool,
    ) -> u64 {
        let scope = |range| InvlpgbScope { range, pcid, include_global, final_only: false };
        let mut cycles = 0;
        if end == FLUSH_ALL_END {
            cycles += self.invlpgb_broadcast(cpu, scope(None));
        } else {
            let max = u64::from(self.spec.raw().features.invlpgb_count_max.unwrap_or(1).max(1));
            let mut first = start;
            while first < end {
                let pages = (end - first).min(max);
                let range = InvlpgbRange {
                    start: Vpn(first),
                    pages: pages as u32,
                    stride: PageSize::Size4K,
                };
                cycles += self.invlpgb_broadcast(cpu, scope(Some(range)));
                first += pages;
            }
        }
        cycles + self.hw_op(cpu, TlbOp::Tlbsync)
    }

    /// `broadcast_tlb_flush()` for `call` (an mm with a global ASID): INVLPGB of its PCID, whole
    /// or in chunks, then TLBSYNC. No IPI, no tracepoint, no `tlb_gen` update on any CPU.
    /// Returns the initiator's cycles.
    pub(super) fn broadcast_tlb_flush(&mut self, cpu: CpuId, call: CallId) -> u64 {
        let info = self.calls[call.0 as usize].info;
        let mm = info.mm.expect("mm flushes only");
        let asid = self.mms[mm.0 as usize].global_asid.expect("a global ASID");
        // `pmd = info->stride_shift == PMD_SHIFT`: then one INVLPGB entry per 2 MiB.
        if info.stride_shift == super::collapse::PMD_SHIFT && info.end != FLUSH_ALL_END {
            return self.invlpgb_flush_pmd_stride_sync(cpu, &info);
        }
        self.invlpgb_flush_sync(cpu, (info.start, info.end), Some(asid.kern_pcid()), false)
    }

    /// `finish_asid_transition()`: whether CPUs of the mask still run the mm under a dynamic
    /// ASID (they need the IPI flush); clears `asid_transition` once none does.
    ///
    /// The kernel spins while a CPU of the mask is in `LOADED_MM_SWITCHING` and then judges
    /// the ASID it ended on; the model looks at where the switch will end instead (the ASID it
    /// chose, or the mm's global ASID that `choose_new_asid()` is about to pick), which is the
    /// same verdict without the spin's few cycles.
    /// NOTE (6.15): the kernel calls this inside `broadcast_tlb_flush()` between the INVLPGBs
    /// and TLBSYNC, so the IPIs overlap the broadcast; the model sends them after TLBSYNC.
    pub(super) fn asid_stragglers(&mut self, mm: MmId) -> bool {
        let m = &self.mms[mm.0 as usize];
        if !m.asid_transition {
            return false;
        }
        let global = m.global_asid;
        let straggler = m.cpumask.iter().any(|c| {
            let cpu = &self.cpus[usize::from(c.0)];
            let st = &cpu.tlb;
            match st.loaded_mm {
                LoadedMm::Switching => {
                    let Some(sw) = cpu.switch else { return true };
                    if self.tasks[sw.next.0 as usize].mm != Some(mm) {
                        return false;
                    }
                    match sw.phase {
                        super::SwitchPhase::End(asid) => Some(asid) != global,
                        super::SwitchPhase::Load(Some(ns)) => Some(ns.asid) != global,
                        // choose_new_asid() picks the global ASID now that the mm has one.
                        _ => global.is_none(),
                    }
                }
                LoadedMm::Mm(m) => m == mm && Some(st.loaded_mm_asid) != global,
            }
        });
        if !straggler {
            self.mms[mm.0 as usize].asid_transition = false;
        }
        straggler
    }

    /// Whether the policy hands out global ASIDs (INVLPGB, or RAR's use of them).
    pub(super) fn global_asid_policy(&self) -> bool {
        self.policy.invlpgb || self.policy.rar
    }
}
