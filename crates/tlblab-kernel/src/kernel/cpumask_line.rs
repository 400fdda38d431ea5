//! The cost of touching `mm_cpumask(mm)`: the mask is one cache line (up to 512 CPUs) shared
//! by every CPU that runs the mm. A bit set or clear is a locked RMW (`lock bts` / `lock btr`):
//! the writer needs the line exclusively, so it moves from the CPU that wrote it last (and the
//! copies of CPUs that read it since are invalidated). A read (`cpumask_test_cpu()`, a flush
//! initiator's `cpumask_any_but()` and iteration) pulls a shared copy when the line was written
//! elsewhere since this CPU last held it. Each such move is a `cache_line_transfer`, or
//! `[topology] cache_line_transfer_remote` when a holder sits on another socket; a CPU that
//! rewrites the line it holds alone moves nothing. Deterministic: the line's state is the
//! writer and the readers since.

use super::Kernel;
use crate::cpumask::CpumaskLine;
use crate::ids::MmId;
use crate::observer::Observer;
use tlblab_types::CpuId;

impl<O: Observer> Kernel<O> {
    /// The socket of CPU `c` (0 on a preset without `[topology]`).
    pub(super) fn socket(&self, c: u16) -> u32 {
        self.spec
            .raw()
            .topology
            .as_ref()
            .map_or(0, |t| t.socket_of(usize::from(c), self.cpus.len()))
    }

    /// The cycles of one line move (not counted: the caller counts it as its line's).
    pub(super) fn line_transfer_cycles(&self, remote: bool) -> u64 {
        if remote {
            let t = self.spec.raw().topology.as_ref().expect("remote implies a topology");
            t.cache_line_transfer_remote.cycles
        } else {
            self.costs.cache_line_transfer.cycles
        }
    }

    /// A locked write of `line` by CPU `me`: `Some(remote)` when the line must move (the RFO
    /// must reach every other holder: remote if any is on another socket), `None` when `me`
    /// holds it alone or nobody does. The line is `me`'s, exclusively, afterwards.
    pub(super) fn line_write(&self, line: &mut CpumaskLine, me: u16) -> Option<bool> {
        let exclusive = match line.owner {
            Some(o) => o == me,
            None => line.sharers.iter().all(|&s| s == me),
        };
        let holders = line.owner.iter().chain(&line.sharers);
        let moved = if exclusive || line.owner.is_none() && line.sharers.is_empty() {
            None
        } else {
            let mine = self.socket(me);
            Some(holders.copied().any(|h| h != me && self.socket(h) != mine))
        };
        line.owner = Some(me);
        line.sharers.clear();
        moved
    }

    /// A read of `line` by CPU `me`: `Some(remote)` when a shared copy must come from another
    /// cache (from the nearest holder: remote only if none is on `me`'s socket), `None` when
    /// `me` holds it already or nobody does. `me` holds a shared copy afterwards.
    pub(super) fn line_read(&self, line: &mut CpumaskLine, me: u16) -> Option<bool> {
        if line.owner == Some(me) || line.sharers.contains(&me) {
            return None;
        }
        let holders: Vec<u16> = line.owner.iter().chain(&line.sharers).copied().collect();
        let moved = (!holders.is_empty()).then(|| {
            let mine = self.socket(me);
            holders.iter().all(|&h| self.socket(h) != mine)
        });
        if let Some(o) = line.owner.take() {
            line.sharers.push(o);
        }
        line.sharers.push(me);
        moved
    }

    /// The cycles of one `mm_cpumask` line move, counted.
    fn cpumask_transfer(&mut self, remote: bool) -> u64 {
        self.counters.cpumask.count_transfer(remote);
        self.line_transfer_cycles(remote)
    }

    /// A locked bit set or clear in `mm`'s `mm_cpumask` by `cpu`; returns its cycles beyond the
    /// instruction (the line's move, if any).
    pub(crate) fn cpumask_write(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.writes += 1;
        let mut line = std::mem::take(&mut self.mms[mm.0 as usize].cpumask_line);
        let moved = self.line_write(&mut line, cpu.0);
        self.mms[mm.0 as usize].cpumask_line = line;
        moved.map_or(0, |remote| self.cpumask_transfer(remote))
    }

    /// A read of `mm`'s `mm_cpumask` by `cpu`; returns the cycles of the line's move, if any.
    pub(crate) fn cpumask_read(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.reads += 1;
        let mut line = std::mem::take(&mut self.mms[mm.0 as usize].cpumask_line);
        let moved = self.line_read(&mut line, cpu.0);
        self.mms[mm.0 as usize].cpumask_line = line;
        moved.map_or(0, |remote| self.cpumask_transfer(remote))
    }

    /// The cpumask cycles a switch accumulated on `cpu` (taken by whoever spends them).
    pub(crate) fn take_cpumask_cycles(&mut self, cpu: CpuId) -> u64 {
        std::mem::take(&mut self.cpus[usize::from(cpu.0)].cpumask_cycles)
    }
}
