//! The safety checker's ground truth (docs/safety.md): a version per PTE, bumped by every change
//! the kernel must flush before the operation that made it completes, and for each CPU the
//! version each cached translation was filled with. An access translated by a TLB entry filled
//! before the PTE's *settled* version (the newest whose operation has completed) uses a stale
//! translation the kernel promised was gone: a violation. One filled before a change still in
//! progress is the stale use the kernel allows during an operation's own window, counted apart.

use rustc_hash::FxHashMap;

use serde::Serialize;
use tlblab_types::{CpuId, Cycles};

use super::deferral::{Declared, Deferrals};
use crate::ids::TaskId;

/// Versions of one PTE.
#[derive(Clone, Copy, Debug, Default)]
struct PteVersions {
    /// Bumped by every change that needs a flush.
    version: u32,
    /// The newest version whose operation has completed.
    settled: u32,
    /// When the newest change was made, by which CPU and task.
    changed: Option<(Cycles, CpuId, TaskId)>,
    /// When the settled version's change was made, by which CPU and task.
    settled_change: Option<(Cycles, CpuId, TaskId)>,
    /// When it settled.
    settled_at: Option<Cycles>,
}

/// Where a cached translation came from: the mm (`ctx_id`) and the PTE's version at the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fill {
    ctx_id: u64,
    version: u32,
    at: Cycles,
}

/// A change the running operation of a task made and has not completed yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    ctx_id: u64,
    vpn: u64,
    version: u32,
    changed: (Cycles, CpuId, TaskId),
}

/// What kind of stale use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViolationKind {
    /// A translation older than a change whose operation has completed.
    StaleAfterCompletion,
    /// A translation another address space filled (an ASID reused without a flush).
    OtherAddressSpace,
    /// A paging-structure-cache entry that points at a page table freed by an operation that
    /// has completed, held in a PCID the CPU can translate with before any flush (a state rule:
    /// the CPU may walk through it speculatively, no access needed). In its witness `vpn` is
    /// the first page of the table's 2 MiB block, `used_at` the completion, `filled_*` the PDE
    /// entry's fill with `filled_version` the table allocation it points at, `changed` the free,
    /// `settled` the first allocation after the freed one and `version` the block's now.
    FreedTableCached,
}

impl ViolationKind {
    /// Every kind, in the order witnesses are shown.
    pub const ALL: [ViolationKind; 3] = [
        ViolationKind::StaleAfterCompletion,
        ViolationKind::OtherAddressSpace,
        ViolationKind::FreedTableCached,
    ];
}

/// A stale translation used after the kernel promised it was gone, with the trail from the
/// change to the use: the witness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// What kind.
    pub kind: ViolationKind,
    /// The CPU that used it.
    pub cpu: CpuId,
    /// The task that used it.
    pub task: TaskId,
    /// The mm (`ctx_id`) and page of the access.
    pub ctx_id: u64,
    /// The page.
    pub vpn: u64,
    /// When it was used.
    pub used_at: Cycles,
    /// When the stale entry was filled, and from which mm and PTE version.
    pub filled_at: Cycles,
    /// The mm whose walk filled it.
    pub filled_ctx_id: u64,
    /// The PTE version it was filled with.
    pub filled_version: u32,
    /// The PTE's version and settled version at the use.
    pub version: u32,
    /// See [`Violation::version`].
    pub settled: u32,
    /// The settled version's change (the one the use is stale against): when, on which CPU,
    /// by which task.
    pub changed: Option<(Cycles, CpuId, TaskId)>,
    /// When that change's operation completed.
    pub settled_at: Option<Cycles>,
}

/// A page table an operation freed: `ctx_id`'s table for the 2 MiB block starting at page
/// `block`, allocation `allocation` of that block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FreedTable {
    pub(crate) ctx_id: u64,
    pub(crate) block: u64,
    pub(crate) allocation: u32,
    /// The `new_tlb_gen` of the flush that covers it (0 until that flush starts).
    pub(crate) flush_gen: u64,
    /// When, on which CPU, by which task.
    pub(crate) freed: (Cycles, CpuId, TaskId),
}

/// The checker's state inside the kernel model.
#[derive(Clone, Debug)]
pub(crate) struct Checker {
    ptes: FxHashMap<(u64, u64), PteVersions>,
    /// Per CPU: (PCID tag as loaded in CR3, page) → its fill.
    fills: Vec<FxHashMap<(u16, u64), Fill>>,
    pending: FxHashMap<TaskId, Vec<Pending>>,
    /// Per (mm, block): how many times its page table was freed (the live table's allocation).
    tables: FxHashMap<(u64, u64), u32>,
    /// Per CPU: (PCID tag, block) → the PDE-cache entry's fill (`version` = table allocation).
    pde_fills: Vec<FxHashMap<(u16, u64), Fill>>,
    /// Per task: the page tables its running operation freed.
    freed: FxHashMap<TaskId, Vec<FreedTable>>,
    pub(crate) violations: Vec<Violation>,
    /// Stale uses within an operation's own window (allowed).
    pub(crate) window_uses: u64,
    /// Accesses checked.
    pub(crate) accesses: u64,
    /// Declared deferrals: their exposure windows and the uses inside them.
    pub(crate) deferral: Deferrals,
}

impl Checker {
    pub(crate) fn new(nr_cpus: usize) -> Checker {
        Checker {
            ptes: FxHashMap::default(),
            fills: vec![FxHashMap::default(); nr_cpus],
            pending: FxHashMap::default(),
            tables: FxHashMap::default(),
            pde_fills: vec![FxHashMap::default(); nr_cpus],
            freed: FxHashMap::default(),
            violations: Vec::new(),
            window_uses: 0,
            accesses: 0,
            deferral: Deferrals::new(nr_cpus),
        }
    }

    /// Task `t`'s operation on `cpu` changed the PTE of `vpn` in mm `ctx_id` in a way that needs
    /// a flush (cleared it, write-protected it, or gave it another page).
    pub(crate) fn changed(&mut self, t: TaskId, cpu: CpuId, ctx_id: u64, vpn: u64, now: Cycles) {
        let p = self.ptes.entry((ctx_id, vpn)).or_default();
        p.version += 1;
        p.changed = Some((now, cpu, t));
        let changed = (now, cpu, t);
        self.pending.entry(t).or_default().push(Pending {
            ctx_id,
            vpn,
            version: p.version,
            changed,
        });
    }

    /// Task `t`'s operation completed (the system call or fault returns): its changes settle,
    /// except on the CPUs a deferred flush left exposed (`deferred`: the declaration and them).
    pub(crate) fn completed(
        &mut self,
        t: TaskId,
        now: Cycles,
        deferred: Option<(Declared, Vec<CpuId>)>,
    ) {
        let Some(changes) = self.pending.remove(&t) else { return };
        let exposed = deferred.as_ref().map_or(&[][..], |d| &d.1[..]);
        for c in &changes {
            if let Some(p) = self.ptes.get_mut(&(c.ctx_id, c.vpn)) {
                self.deferral.settling(c.ctx_id, c.vpn, p.settled, exposed);
                if c.version > p.settled {
                    p.settled = c.version;
                    p.settled_change = Some(c.changed);
                    p.settled_at = Some(now);
                }
            }
        }
        if let Some((d, exposed)) = deferred {
            let ptes = changes.iter().map(|c| (c.vpn, c.version)).collect();
            self.deferral.opened(d, &exposed, ptes, now.0);
        }
    }

    /// The changes task `t`'s running operation made: `(ctx_id, page, version)`.
    pub(crate) fn pending_changes(&self, t: TaskId) -> Vec<(u64, u64, u32)> {
        self.pending
            .get(&t)
            .map_or_else(Vec::new, |v| v.iter().map(|c| (c.ctx_id, c.vpn, c.version)).collect())
    }

    /// The last fill on `cpu` under PCID tag `tag` of `vpn`: its mm and PTE version.
    pub(crate) fn fill_of(&self, cpu: CpuId, tag: u16, vpn: u64) -> Option<(u64, u32)> {
        self.fills[usize::from(cpu.0)].get(&(tag, vpn)).map(|f| (f.ctx_id, f.version))
    }

    /// Task `t`'s operation on `cpu` freed the page table of the 2 MiB block starting at page
    /// `block` of mm `ctx_id`.
    pub(crate) fn table_freed(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        ctx_id: u64,
        block: u64,
        now: Cycles,
    ) {
        let allocation = self.tables.entry((ctx_id, block)).or_default();
        let freed = FreedTable {
            ctx_id,
            block,
            allocation: *allocation,
            flush_gen: 0,
            freed: (now, cpu, t),
        };
        *allocation += 1;
        self.freed.entry(t).or_default().push(freed);
    }

    /// Task `t`'s flush of the tables it freed got generation `gen` (`inc_mm_tlb_gen()`).
    pub(crate) fn tables_flush_gen(&mut self, t: TaskId, gen: u64) {
        for f in self.freed.get_mut(&t).into_iter().flatten().filter(|f| f.flush_gen == 0) {
            f.flush_gen = gen;
        }
    }

    /// The tables task `t`'s operation freed, now that it completes (the caller judges the
    /// CPUs' paging-structure caches with [`Checker::freed_table_cached`]).
    pub(crate) fn take_freed(&mut self, t: TaskId) -> Vec<FreedTable> {
        self.freed.remove(&t).unwrap_or_default()
    }

    /// A walk on `cpu` under PCID tag `tag` filled the PDE-cache entry of `block` of mm `ctx_id`.
    pub(crate) fn pde_filled(
        &mut self,
        cpu: CpuId,
        tag: u16,
        ctx_id: u64,
        block: u64,
        now: Cycles,
    ) {
        let version = self.tables.get(&(ctx_id, block)).copied().unwrap_or(0);
        self.pde_fills[usize::from(cpu.0)].insert((tag, block), Fill { ctx_id, version, at: now });
    }

    /// At the completion of the operation that freed `f`, `cpu` holds a PDE-cache entry for its
    /// block under PCID tag `tag`, a PCID it can translate with before a flush: a violation if
    /// that entry was filled from the freed table (or an older one) of the same mm.
    pub(crate) fn freed_table_cached(&mut self, cpu: CpuId, tag: u16, f: &FreedTable, now: Cycles) {
        let Some(fill) = self.pde_fills[usize::from(cpu.0)].get(&(tag, f.block)).copied() else {
            return;
        };
        if fill.ctx_id != f.ctx_id || fill.version > f.allocation {
            return;
        }
        self.violations.push(Violation {
            kind: ViolationKind::FreedTableCached,
            cpu,
            task: f.freed.2,
            ctx_id: f.ctx_id,
            vpn: f.block,
            used_at: now,
            filled_at: fill.at,
            filled_ctx_id: fill.ctx_id,
            filled_version: fill.version,
            version: self.tables.get(&(f.ctx_id, f.block)).copied().unwrap_or(0),
            settled: f.allocation + 1,
            changed: Some(f.freed),
            settled_at: Some(now),
        });
    }

    /// A walk on `cpu` filled a translation of `vpn` of mm `ctx_id` under PCID tag `tag`, from
    /// the PTE as it is now.
    pub(crate) fn filled(&mut self, cpu: CpuId, tag: u16, ctx_id: u64, vpn: u64, now: Cycles) {
        self.accesses += 1;
        let version = self.ptes.get(&(ctx_id, vpn)).map_or(0, |p| p.version);
        self.fills[usize::from(cpu.0)].insert((tag, vpn), Fill { ctx_id, version, at: now });
    }

    /// An access by task `t` on `cpu` to `vpn` of mm `ctx_id` that the hardware translates with
    /// the entry it holds under PCID tag `tag` (whatever the page table now says).
    pub(crate) fn used_cached(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        tag: u16,
        ctx_id: u64,
        vpn: u64,
        now: Cycles,
    ) {
        self.accesses += 1;
        let p = self.ptes.get(&(ctx_id, vpn)).copied().unwrap_or_default();
        // Every fill of a user page goes through `filled`; an entry without one predates the
        // checker and is not judged.
        let Some(fill) = self.fills[usize::from(cpu.0)].get(&(tag, vpn)).copied() else {
            return;
        };
        let kind = if fill.ctx_id != ctx_id {
            ViolationKind::OtherAddressSpace
        } else if fill.version < p.settled {
            if self.deferral.excuses(cpu, ctx_id, vpn, fill.version) {
                return; // inside a declared deferral's window: exposure
            }
            ViolationKind::StaleAfterCompletion
        } else {
            if fill.version < p.version {
                self.window_uses += 1;
            }
            return;
        };
        self.violations.push(Violation {
            kind,
            cpu,
            task: t,
            ctx_id,
            vpn,
            used_at: now,
            filled_at: fill.at,
            filled_ctx_id: fill.ctx_id,
            filled_version: fill.version,
            version: p.version,
            settled: p.settled,
            changed: p.settled_change,
            settled_at: p.settled_at,
        });
    }
}
