//! The safety checker's ground truth (docs/safety.md): a version per PTE, bumped by every change
//! the kernel must flush before the operation that made it completes, and for each CPU the
//! version each cached translation was filled with. An access translated by a TLB entry filled
//! before the PTE's *settled* version (the newest whose operation has completed) uses a stale
//! translation the kernel promised was gone: a violation. One filled before a change still in
//! progress is the stale use the kernel allows during an operation's own window, counted apart.

use std::collections::HashMap;

use serde::Serialize;
use tlblab_types::{CpuId, Cycles};

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
}

/// What kind of stale use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViolationKind {
    /// A translation older than a change whose operation has completed.
    StaleAfterCompletion,
    /// A translation another address space filled (an ASID reused without a flush).
    OtherAddressSpace,
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
    /// The newest change: when, on which CPU, by which task.
    pub changed: Option<(Cycles, CpuId, TaskId)>,
    /// When that change's operation completed.
    pub settled_at: Option<Cycles>,
}

/// The checker's state inside the kernel model.
#[derive(Clone, Debug)]
pub(crate) struct Checker {
    ptes: HashMap<(u64, u64), PteVersions>,
    /// Per CPU: (PCID tag as loaded in CR3, page) → its fill.
    fills: Vec<HashMap<(u16, u64), Fill>>,
    pending: HashMap<TaskId, Vec<Pending>>,
    pub(crate) violations: Vec<Violation>,
    /// Stale uses within an operation's own window (allowed).
    pub(crate) window_uses: u64,
    /// Accesses checked.
    pub(crate) accesses: u64,
}

impl Checker {
    pub(crate) fn new(nr_cpus: usize) -> Checker {
        Checker {
            ptes: HashMap::new(),
            fills: vec![HashMap::new(); nr_cpus],
            pending: HashMap::new(),
            violations: Vec::new(),
            window_uses: 0,
            accesses: 0,
        }
    }

    /// Task `t`'s operation on `cpu` changed the PTE of `vpn` in mm `ctx_id` in a way that needs
    /// a flush (cleared it, write-protected it, or gave it another page).
    pub(crate) fn changed(&mut self, t: TaskId, cpu: CpuId, ctx_id: u64, vpn: u64, now: Cycles) {
        let p = self.ptes.entry((ctx_id, vpn)).or_default();
        p.version += 1;
        p.changed = Some((now, cpu, t));
        self.pending.entry(t).or_default().push(Pending { ctx_id, vpn, version: p.version });
    }

    /// Task `t`'s operation completed (the system call or fault returns): its changes settle.
    pub(crate) fn completed(&mut self, t: TaskId, now: Cycles) {
        let Some(changes) = self.pending.remove(&t) else { return };
        for c in changes {
            if let Some(p) = self.ptes.get_mut(&(c.ctx_id, c.vpn)) {
                if c.version > p.settled {
                    p.settled = c.version;
                    p.settled_at = Some(now);
                }
            }
        }
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
            changed: p.changed,
            settled_at: p.settled_at,
        });
    }
}
