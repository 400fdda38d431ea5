//! The safety checker's side of a declared deferral (docs/safety.md §4.4, rule 7).
//!
//! When an operation whose flush a policy deferred on purpose (LATR) completes, every other CPU
//! that still holds a stale translation of a PTE it changed is *exposed*: until that CPU catches
//! up, the checker keeps for it, per PTE, the version it has settled (`lag`), and a stale use at
//! or above that version is counted as exposure, not as a violation. A CPU catches up when its
//! `tlb_gen` bookkeeping reaches the operation's generation (it applied the LATR state, took a
//! full flush, or switched back to the mm and flushed), or when the mm's slot is given up (its
//! PCID is flushed before reuse). A CPU that passes a declared catch-up point (LATR's hooks: a
//! busy tick, the start of a context switch, each after it applied its states) still running
//! the mm without having caught up *missed* it: later stale uses are violations. (A context
//! switch that began before the state was written is not its catch-up point: the hook ran
//! before there was anything to apply.) Each (operation, CPU) is one exposure window, from the
//! completion to the catch-up.

use super::Kernel;
use crate::exposure::{ExposureLog, OperationExposure};
use crate::ids::{Asid, TaskId, TlbGen, TLB_NR_DYN_ASIDS};
use crate::kernel::flush::FlushTlbInfo;
use crate::observer::Observer;
use crate::tlb_state::{LoadedMm, TlbState};
use rustc_hash::FxHashMap;
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, Vpn};

/// A flush deferred for a task's running operation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Declared {
    ctx_id: u64,
    gen: TlbGen,
    /// The CPU that flushed itself (LATR); `None` when the deferral leaves it too (migrc, LUF).
    initiator: Option<CpuId>,
}

/// A completed deferred operation.
#[derive(Clone, Debug)]
struct Op {
    completed_at: u64,
    ctx_id: u64,
    gen: TlbGen,
    /// The pages it changed and the versions it made.
    ptes: Vec<(u64, u32)>,
    /// Per exposed CPU: when it caught up.
    windows: Vec<(CpuId, Option<u64>)>,
}

/// An exposure window still open on a CPU.
#[derive(Clone, Copy, Debug)]
struct Open {
    op: usize,
    /// The declared catch-up passed without the CPU catching up.
    missed: bool,
}

/// Declared deferrals inside the checker.
#[derive(Clone, Debug)]
pub(crate) struct Deferrals {
    declared: FxHashMap<TaskId, Declared>,
    ops: Vec<Op>,
    /// Per CPU, its open windows.
    open: Vec<Vec<Open>>,
    /// Per CPU: (ctx_id, page) → the newest version of that PTE this CPU has settled, where
    /// an exposure left it below the global one.
    lag: Vec<FxHashMap<(u64, u64), u32>>,
    /// Stale uses inside declared windows.
    uses: u64,
    missed: u64,
}

impl Deferrals {
    pub(crate) fn new(nr_cpus: usize) -> Deferrals {
        Deferrals {
            declared: FxHashMap::default(),
            ops: Vec::new(),
            open: vec![Vec::new(); nr_cpus],
            lag: vec![FxHashMap::default(); nr_cpus],
            uses: 0,
            missed: 0,
        }
    }

    /// The PTE of `vpn` in `ctx_id` settled at version `before` until now; the operation that
    /// completes now settles a newer one everywhere but on the `exposed` CPUs.
    pub(crate) fn settling(&mut self, ctx_id: u64, vpn: u64, before: u32, exposed: &[CpuId]) {
        for (c, lag) in self.lag.iter_mut().enumerate() {
            if exposed.iter().any(|e| usize::from(e.0) == c) {
                lag.entry((ctx_id, vpn)).or_insert(before);
            } else if !lag.is_empty() {
                lag.remove(&(ctx_id, vpn));
            }
        }
    }

    /// A deferred operation completed at `now`, changing `ptes`: one window per exposed CPU.
    pub(crate) fn opened(
        &mut self,
        d: Declared,
        exposed: &[CpuId],
        ptes: Vec<(u64, u32)>,
        now: u64,
    ) {
        let op = self.ops.len();
        for &c in exposed {
            self.open[usize::from(c.0)].push(Open { op, missed: false });
        }
        self.ops.push(Op {
            completed_at: now,
            ctx_id: d.ctx_id,
            gen: d.gen,
            ptes,
            windows: exposed.iter().map(|&c| (c, None)).collect(),
        });
    }

    /// Whether a use on `cpu` of an entry filled from `version` of the PTE of `vpn` in `ctx_id`,
    /// older than the PTE's settled version, is inside a declared window; counts it if so.
    pub(crate) fn excuses(&mut self, cpu: CpuId, ctx_id: u64, vpn: u64, version: u32) -> bool {
        let inside =
            self.lag[usize::from(cpu.0)].get(&(ctx_id, vpn)).is_some_and(|&s| version >= s);
        self.uses += u64::from(inside);
        inside
    }

    /// `cpu` now settles every version `op` made.
    fn settle_on(&mut self, cpu: CpuId, op: usize) {
        let Op { ctx_id, ref ptes, .. } = self.ops[op];
        let lag = &mut self.lag[usize::from(cpu.0)];
        for &(vpn, version) in ptes {
            if let Some(s) = lag.get_mut(&(ctx_id, vpn)) {
                *s = (*s).max(version);
            }
        }
    }

    /// `cpu`'s TLB bookkeeping is now `st`: close the windows it caught up on.
    fn progress(&mut self, cpu: CpuId, st: &TlbState, now: u64) {
        let c = usize::from(cpu.0);
        let mut i = 0;
        while i < self.open[c].len() {
            let Open { op, missed } = self.open[c][i];
            if behind(st, self.ops[op].ctx_id, self.ops[op].gen) {
                i += 1;
                continue;
            }
            self.open[c].swap_remove(i);
            if !missed {
                self.settle_on(cpu, op);
            }
            let o = &mut self.ops[op];
            if let Some(w) = o.windows.iter_mut().find(|w| w.0 == cpu) {
                w.1 = Some(now - o.completed_at);
            }
        }
    }

    /// A declared catch-up point of `cpu`, which now runs the mm `running` (not lazily): a
    /// window of that mm still open there (of an operation at or below generation `upto`,
    /// when given) was missed.
    fn due(&mut self, cpu: CpuId, running: Option<u64>, upto: Option<TlbGen>) {
        let Some(ctx_id) = running else { return };
        for i in 0..self.open[usize::from(cpu.0)].len() {
            let Open { op, missed } = self.open[usize::from(cpu.0)][i];
            let covered = upto.is_none_or(|g| self.ops[op].gen <= g);
            if !missed && self.ops[op].ctx_id == ctx_id && covered {
                self.open[usize::from(cpu.0)][i].missed = true;
                self.missed += 1;
                self.settle_on(cpu, op);
            }
        }
    }

    /// The run's exposure so far (windows still open are censored).
    pub(crate) fn log(&self) -> ExposureLog {
        ExposureLog {
            operations: self
                .ops
                .iter()
                .map(|o| OperationExposure {
                    completed_at: o.completed_at,
                    windows: o.windows.iter().map(|w| w.1).collect(),
                })
                .collect(),
            uses: Some(self.uses),
            missed_catch_ups: self.missed,
        }
    }
}

/// Whether a CPU whose bookkeeping is `st` is behind generation `gen` of mm `ctx_id`: an ASID
/// slot still holds the mm at an older one. A slot given to another mm is flushed before reuse.
fn behind(st: &TlbState, ctx_id: u64, gen: TlbGen) -> bool {
    st.ctxs.iter().any(|x| x.ctx_id == ctx_id && x.tlb_gen < gen)
}

impl<O: Observer> Kernel<O> {
    /// Task `t`'s running operation deferred its flush `info` (LATR).
    pub(super) fn deferral_declared(&mut self, t: TaskId, info: &FlushTlbInfo) {
        let Some(ck) = self.check.as_deref_mut() else { return };
        let mm = info.mm.expect("deferred flushes are of an mm");
        let ctx_id = self.mms[mm.0 as usize].ctx_id;
        let d = Declared { ctx_id, gen: info.new_tlb_gen, initiator: Some(info.initiating_cpu) };
        ck.deferral.declared.insert(t, d);
    }

    /// Task `t`'s running operation left the flush of its unmap of `mm`, which brought the mm
    /// to generation `gen`, pending on every CPU, its own included (migrc, LUF).
    pub(super) fn deferral_declared_gen(&mut self, t: TaskId, mm: crate::ids::MmId, gen: TlbGen) {
        let ctx_id = self.mms[mm.0 as usize].ctx_id;
        let Some(ck) = self.check.as_deref_mut() else { return };
        ck.deferral.declared.insert(t, Declared { ctx_id, gen, initiator: None });
    }

    /// Task `t`'s operation completes: if it deferred its flush, the declaration and the
    /// other CPUs that are still behind its generation and hold a stale translation of a PTE it
    /// changed. (A CPU already caught up may still hold one in a user PCID marked for a flush at
    /// the return to user, which user mode cannot reach before: §4.3.)
    pub(super) fn deferred_exposure(&mut self, t: TaskId) -> Option<(Declared, Vec<CpuId>)> {
        let d = self.check.as_deref_mut()?.deferral.declared.remove(&t)?;
        let ck = self.check.as_deref()?;
        let changes = ck.pending_changes(t);
        let exposed = (0..self.cpus.len() as u16)
            .map(CpuId)
            .filter(|&c| {
                Some(c) != d.initiator && behind(&self.cpus[usize::from(c.0)].tlb, d.ctx_id, d.gen)
            })
            .filter(|&c| changes.iter().any(|&(ctx, vpn, v)| self.holds_stale(c, ctx, vpn, v)))
            .collect();
        Some((d, exposed))
    }

    /// Whether `cpu` holds, in a PCID its slots give mm `ctx_id`, a translation of `vpn` filled
    /// from a version older than `version` (the checker's fills say which; the hardware whether
    /// it is still there).
    fn holds_stale(&self, cpu: CpuId, ctx_id: u64, vpn: u64, version: u32) -> bool {
        let Some(ck) = self.check.as_deref() else { return false };
        let c = usize::from(cpu.0);
        let page = Page::new(Vpn(vpn), PageSize::Size4K).expect("4 KiB pages are aligned");
        let mut tags = Vec::new();
        if self.hw[c].cr4().pcide {
            for s in 0..TLB_NR_DYN_ASIDS {
                if self.cpus[c].tlb.ctxs[usize::from(s)].ctx_id == ctx_id {
                    tags.push(Asid(s).kern_pcid());
                    tags.push(Asid(s).user_pcid());
                }
            }
        } else {
            tags.push(Pcid::new(0).expect("0 is a PCID"));
        }
        tags.into_iter().any(|pcid| {
            ck.fill_of(cpu, pcid.get(), vpn).is_some_and(|(ctx, v)| ctx == ctx_id && v < version)
                && self.hw[c].holds(&Access::new(cpu, pcid, page, AccessKind::Load))
        })
    }

    /// `cpu`'s `tlb_gen` bookkeeping changed (a flush, an mm switch): windows it caught up on
    /// close now.
    pub(super) fn deferral_progress(&mut self, cpu: CpuId) {
        let Some(ck) = self.check.as_deref_mut() else { return };
        if ck.deferral.open[usize::from(cpu.0)].is_empty() {
            return;
        }
        ck.deferral.progress(cpu, &self.cpus[usize::from(cpu.0)].tlb, self.queue.now().0);
    }

    /// A declared catch-up point of `cpu` (LATR's tick or `__schedule()` hook, after it applied
    /// the states) has passed.
    pub(super) fn deferral_due(&mut self, cpu: CpuId) {
        let Some(ck) = self.check.as_deref_mut() else { return };
        let st = &self.cpus[usize::from(cpu.0)].tlb;
        let running = match st.loaded_mm {
            LoadedMm::Mm(m) if !st.is_lazy => Some(self.mms[m.0 as usize].ctx_id),
            _ => None,
        };
        ck.deferral.due(cpu, running, None);
    }

    /// A declared catch-up point of `cpu` for the deferred operations of mm `ctx_id` up to
    /// generation `upto` (migrc's and LUF's reuse of a page, or their other catch-ups), after
    /// the flush it makes has been done.
    pub(super) fn deferral_due_upto(&mut self, cpu: CpuId, ctx_id: u64, upto: TlbGen) {
        let Some(ck) = self.check.as_deref_mut() else { return };
        let st = &self.cpus[usize::from(cpu.0)].tlb;
        let running = match st.loaded_mm {
            LoadedMm::Mm(m) if !st.is_lazy && self.mms[m.0 as usize].ctx_id == ctx_id => {
                Some(ctx_id)
            }
            _ => None,
        };
        ck.deferral.due(cpu, running, Some(upto));
    }

    /// The exposure of the declared deferrals so far: user mappings (`latr`, with the checker
    /// on) and kernel mappings (`xpfo-deferred`).
    pub fn exposure(&self) -> crate::exposure::RunExposure {
        crate::exposure::RunExposure {
            user: self
                .check
                .as_deref()
                .filter(|_| {
                    self.policy.latr || self.policy.unmap_flush != crate::policy::UnmapFlush::Off
                })
                .map(|ck| ck.deferral.log()),
            kernel: (self.policy.xpfo == crate::policy::Xpfo::Deferred)
                .then(|| self.xpfo.exposure_log(self.cpus.len())),
        }
    }
}
