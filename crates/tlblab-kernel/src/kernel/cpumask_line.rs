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
use crate::ids::MmId;
use crate::observer::Observer;
use tlblab_types::CpuId;

impl<O: Observer> Kernel<O> {
    /// The socket of CPU `c` (0 on a preset without `[topology]`).
    fn socket(&self, c: u16) -> u32 {
        self.spec
            .raw()
            .topology
            .as_ref()
            .map_or(0, |t| t.socket_of(usize::from(c), self.cpus.len()))
    }

    /// The cycles of one line move.
    fn cpumask_transfer(&mut self, remote: bool) -> u64 {
        self.counters.cpumask.transfers += 1;
        if remote {
            self.counters.cpumask.remote_transfers += 1;
            let t = self.spec.raw().topology.as_ref().expect("remote implies a topology");
            t.cache_line_transfer_remote.cycles
        } else {
            self.costs.cache_line_transfer.cycles
        }
    }

    /// A locked bit set or clear in `mm`'s `mm_cpumask` by `cpu`; returns its cycles beyond the
    /// instruction (the line's move, if any).
    pub(crate) fn cpumask_write(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.writes += 1;
        let line = &self.mms[mm.0 as usize].cpumask_line;
        let me = cpu.0;
        let exclusive = match line.owner {
            Some(o) => o == me,
            None => line.sharers.iter().all(|&s| s == me),
        };
        let holders: Vec<u16> = line.owner.iter().chain(&line.sharers).copied().collect();
        let cycles = if exclusive || holders.is_empty() {
            0
        } else {
            // The RFO must reach every other holder: remote if any is on another socket.
            let mine = self.socket(me);
            let remote = holders.iter().any(|&h| h != me && self.socket(h) != mine);
            self.cpumask_transfer(remote)
        };
        let line = &mut self.mms[mm.0 as usize].cpumask_line;
        line.owner = Some(me);
        line.sharers.clear();
        cycles
    }

    /// A read of `mm`'s `mm_cpumask` by `cpu`; returns the cycles of the line's move, if any.
    pub(crate) fn cpumask_read(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        self.counters.cpumask.reads += 1;
        let line = &self.mms[mm.0 as usize].cpumask_line;
        let me = cpu.0;
        if line.owner == Some(me) || line.sharers.contains(&me) {
            return 0;
        }
        let holders: Vec<u16> = line.owner.iter().chain(&line.sharers).copied().collect();
        let cycles = if holders.is_empty() {
            0
        } else {
            // A shared copy comes from the nearest holder: remote only if none is on this
            // CPU's socket.
            let mine = self.socket(me);
            let remote = holders.iter().all(|&h| self.socket(h) != mine);
            self.cpumask_transfer(remote)
        };
        let line = &mut self.mms[mm.0 as usize].cpumask_line;
        if let Some(o) = line.owner.take() {
            line.sharers.push(o);
        }
        line.sharers.push(me);
        cycles
    }

    /// The cpumask cycles a switch accumulated on `cpu` (taken by whoever spends them).
    pub(crate) fn take_cpumask_cycles(&mut self, cpu: CpuId) -> u64 {
        std::mem::take(&mut self.cpus[usize::from(cpu.0)].cpumask_cycles)
    }
}
