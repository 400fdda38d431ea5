//! The cost of touching `mm_cpumask(mm)`: the mask is one cache line (up to 512 CPUs) shared
//! by every CPU that runs the mm. A bit set or clear is a locked RMW (`lock bts` / `lock btr`):
//! the writer needs the line exclusively, so it moves from the CPU that wrote it last (and the
//! copies of CPUs that read it since are invalidated). A read (`cpumask_test_cpu()`, a flush
//! initiator's `cpumask_any_but()` and iteration) pulls a shared copy when the line was written
//! elsewhere since this CPU last held it. Each such move is a `cache_line_transfer`, or
//! `[topology] cache_line_transfer_remote` when a holder sits on another socket, or
//! `cache_line_transfer_llc` when every holder shares the mover's CCX (mechanism `llc-domains`);
//! a CPU that rewrites the line it holds alone moves nothing. [`Kernel::line_move_cycles`]
//! costs the other lines that move between CPUs (a csd, a pipe's, the mmap_lock's) the same
//! way. Deterministic: the line's state is the
//! writer and the readers since.

use super::Kernel;
use crate::cpumask::CpumaskLine;
use crate::ids::MmId;
use crate::mechanisms::Mechanism;
use crate::observer::Observer;
use tlblab_types::CpuId;

/// How far a cache line moves between two CPUs, which sets the move's cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Distance {
    /// Between two cores of one last-level cache (`[topology] cache_line_transfer_llc`).
    Llc,
    /// Between two LLCs of a socket, or within a socket whose cores share one LLC
    /// (`[kernel] cache_line_transfer`).
    Socket,
    /// Between sockets (`[topology] cache_line_transfer_remote`).
    Remote,
}

impl<O: Observer> Kernel<O> {
    /// The socket of CPU `c` (0 on a preset without `[topology]`).
    pub(super) fn socket(&self, c: u16) -> u32 {
        self.spec
            .raw()
            .topology
            .as_ref()
            .map_or(0, |t| t.socket_of(usize::from(c), self.cpus.len()))
    }

    /// The last-level cache of CPU `c`: its socket's, or its CCX's with `[topology]
    /// cores_per_llc` (mechanism `llc-domains`).
    pub(super) fn llc(&self, c: u16) -> u32 {
        let n = self.cpus.len();
        match self.spec.raw().topology.as_ref() {
            Some(t) if self.config.mechanisms.is_on(Mechanism::LlcDomains) => {
                t.llc_of(usize::from(c), n)
            }
            Some(t) => t.socket_of(usize::from(c), n),
            None => 0,
        }
    }

    /// How far a line moves from CPU `a` to CPU `b`.
    pub(super) fn distance(&self, a: u16, b: u16) -> Distance {
        if self.socket(a) != self.socket(b) {
            Distance::Remote
        } else if self.llc(a) != self.llc(b) {
            Distance::Socket
        } else if self.llc_transfer().is_some() {
            Distance::Llc
        } else {
            Distance::Socket
        }
    }

    /// A move within one LLC, where the preset splits its sockets into several.
    fn llc_transfer(&self) -> Option<u64> {
        if !self.config.mechanisms.is_on(Mechanism::LlcDomains) {
            return None;
        }
        let t = self.spec.raw().topology.as_ref()?;
        t.cache_line_transfer_llc.as_ref().map(|f| f.cycles)
    }

    /// The cycles of one line move (not counted: the caller counts it as its line's).
    pub(super) fn line_transfer_cycles(&self, d: Distance) -> u64 {
        match d {
            Distance::Llc => self.llc_transfer().expect("Llc implies a transfer within an LLC"),
            Distance::Socket => self.costs.cache_line_transfer.cycles,
            Distance::Remote => {
                let t = self.spec.raw().topology.as_ref().expect("Remote implies a topology");
                t.cache_line_transfer_remote
                    .as_ref()
                    .expect("two sockets have a transfer between them (checked)")
                    .cycles
            }
        }
    }

    /// The cycles of a line last written on `from` that `to` now needs (0 when it is `to`'s
    /// own, or nobody's): by how far it moves, or, with mechanism `llc-domains` off, one
    /// `cache_line_transfer` wherever it comes from (the model before it).
    pub(super) fn line_move_cycles(&self, from: Option<u16>, to: u16) -> u64 {
        match from {
            Some(f) if f != to && self.config.mechanisms.is_on(Mechanism::LlcDomains) => {
                self.line_transfer_cycles(self.distance(f, to))
            }
            Some(f) if f != to => self.costs.cache_line_transfer.cycles,
            _ => 0,
        }
    }

    /// A locked write of `line` by CPU `me`: `Some(distance)` when the line must move (the RFO
    /// must reach every other holder: the farthest sets the distance), `None` when `me` holds
    /// it alone or nobody does. The line is `me`'s, exclusively, afterwards.
    pub(super) fn line_write(&self, line: &mut CpumaskLine, me: u16) -> Option<Distance> {
        let exclusive = match line.owner {
            Some(o) => o == me,
            None => line.sharers.iter().all(|&s| s == me),
        };
        let holders = line.owner.iter().chain(&line.sharers);
        let moved = if exclusive || line.owner.is_none() && line.sharers.is_empty() {
            None
        } else {
            holders.copied().filter(|&h| h != me).map(|h| self.distance(h, me)).max()
        };
        line.owner = Some(me);
        line.sharers.clear();
        moved
    }

    /// A read of `line` by CPU `me`: `Some(remote)` when a shared copy must come from another
    /// cache (from the nearest holder: remote only if none is on `me`'s socket), `None` when
    /// `me` holds it already or nobody does. `me` holds a shared copy afterwards.
    pub(super) fn line_read(&self, line: &mut CpumaskLine, me: u16) -> Option<Distance> {
        if line.owner == Some(me) || line.sharers.contains(&me) {
            return None;
        }
        let moved = line.owner.iter().chain(&line.sharers).map(|&h| self.distance(h, me)).min();
        if let Some(o) = line.owner.take() {
            line.sharers.push(o);
        }
        line.sharers.push(me);
        moved
    }

    /// The cycles of one `mm_cpumask` line move, counted.
    fn cpumask_transfer(&mut self, d: Distance) -> u64 {
        self.counters.cpumask.count_transfer(d == Distance::Remote);
        self.line_transfer_cycles(d)
    }

    /// A locked bit set or clear in `mm`'s `mm_cpumask` by `cpu`; returns its cycles beyond the
    /// instruction (the line's move, if any).
    pub(crate) fn cpumask_write(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.writes += 1;
        let mut line = std::mem::take(&mut self.mms[mm.0 as usize].cpumask_line);
        let moved = self.line_write(&mut line, cpu.0);
        self.mms[mm.0 as usize].cpumask_line = line;
        moved.map_or(0, |d| self.cpumask_transfer(d))
    }

    /// A read of `mm`'s `mm_cpumask` by `cpu`; returns the cycles of the line's move, if any.
    pub(crate) fn cpumask_read(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.reads += 1;
        let mut line = std::mem::take(&mut self.mms[mm.0 as usize].cpumask_line);
        let moved = self.line_read(&mut line, cpu.0);
        self.mms[mm.0 as usize].cpumask_line = line;
        moved.map_or(0, |d| self.cpumask_transfer(d))
    }

    /// The cpumask cycles a switch accumulated on `cpu` (taken by whoever spends them).
    pub(crate) fn take_cpumask_cycles(&mut self, cpu: CpuId) -> u64 {
        std::mem::take(&mut self.cpus[usize::from(cpu.0)].cpumask_cycles)
    }
}
