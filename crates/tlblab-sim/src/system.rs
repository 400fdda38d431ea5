//! A set of CPUs driven by a trace: accesses go to their CPU, invalidating instructions execute
//! on their CPU, and INVLPGB reaches every CPU.

use crate::hw::{new_stats, Cpu, Fault};
use crate::machine::MachineSpec;
use crate::stats::HwStats;
use thiserror::Error;
use tlblab_types::{CpuId, TlbOp, TraceEvent};

/// Most distinct CPUs one run may use; keeps a corrupt CPU field from exhausting memory.
pub const MAX_CPUS: usize = 4096;

/// Why an event could not be applied.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// The instruction faulted on the modelled CPU.
    #[error("event {index} ({cpu}): {fault}")]
    Fault {
        /// 0-based index of the event in the run.
        index: u64,
        /// The executing CPU.
        cpu: CpuId,
        /// The exception.
        fault: Fault,
    },
    /// More distinct CPUs than [`MAX_CPUS`].
    #[error("event {index}: {cpu} would be distinct CPU number {count}, more than the {MAX_CPUS} a run may use")]
    TooManyCpus {
        /// 0-based index of the event.
        index: u64,
        /// The CPU named.
        cpu: CpuId,
        /// Distinct CPUs including this one.
        count: usize,
    },
}

/// CPUs created on first use, each with its own statistics.
#[derive(Clone, Debug)]
pub struct System {
    spec: MachineSpec,
    /// Dense slot of each CPU id, `u32::MAX` if unused.
    slot_of: Vec<u32>,
    cpus: Vec<Cpu>,
    ids: Vec<CpuId>,
    stats: Vec<HwStats>,
    events: u64,
}

impl System {
    /// An empty system of `spec` CPUs.
    pub fn new(spec: &MachineSpec) -> System {
        System {
            spec: spec.clone(),
            slot_of: vec![u32::MAX; usize::from(u16::MAX) + 1],
            cpus: Vec::new(),
            ids: Vec::new(),
            stats: Vec::new(),
            events: 0,
        }
    }

    /// The machine.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// Events applied so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    #[inline]
    fn slot(&mut self, cpu: CpuId) -> Result<usize, SimError> {
        let slot = self.slot_of[usize::from(cpu.0)];
        if slot != u32::MAX {
            return Ok(slot as usize);
        }
        if self.cpus.len() == MAX_CPUS {
            return Err(SimError::TooManyCpus {
                index: self.events,
                cpu,
                count: self.cpus.len() + 1,
            });
        }
        self.slot_of[usize::from(cpu.0)] = self.cpus.len() as u32;
        self.cpus.push(Cpu::new(&self.spec));
        self.ids.push(cpu);
        self.stats.push(new_stats(&self.spec));
        Ok(self.cpus.len() - 1)
    }

    /// Applies one event.
    #[inline]
    pub fn apply(&mut self, event: &TraceEvent) -> Result<(), SimError> {
        let slot = self.slot(event.cpu())?;
        match event {
            TraceEvent::Access { access, repeat } => {
                self.cpus[slot].access(access, *repeat, &mut self.stats[slot]);
            }
            TraceEvent::Op { cpu, op } => {
                let fault = |fault| SimError::Fault { index: self.events, cpu: *cpu, fault };
                self.cpus[slot].execute(op, &mut self.stats[slot]).map_err(fault)?;
                if let TlbOp::Invlpgb(scope) = op {
                    for other in (0..self.cpus.len()).filter(|&s| s != slot) {
                        self.cpus[other].invlpgb_remote(scope, &mut self.stats[other]);
                    }
                }
            }
        }
        self.events += 1;
        Ok(())
    }

    /// Applies a batch of events in order.
    pub fn apply_all(&mut self, events: &[TraceEvent]) -> Result<(), SimError> {
        events.iter().try_for_each(|e| self.apply(e))
    }

    /// `(cpu, its statistics)` for every CPU used, by CPU number.
    pub fn per_cpu(&self) -> Vec<(CpuId, &HwStats)> {
        let mut out: Vec<_> = self.ids.iter().copied().zip(&self.stats).collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// The CPU model of `cpu`, if it has been used.
    pub fn cpu(&self, cpu: CpuId) -> Option<&Cpu> {
        let slot = self.slot_of[usize::from(cpu.0)];
        (slot != u32::MAX).then(|| &self.cpus[slot as usize])
    }

    /// The sum of every CPU's statistics.
    pub fn total(&self) -> HwStats {
        let mut total = new_stats(&self.spec);
        for s in &self.stats {
            total += s;
        }
        total
    }
}
