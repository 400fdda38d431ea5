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
    /// Accesses still to simulate before statistics start (see [`System::set_warmup`]).
    warmup_left: u64,
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
            warmup_left: 0,
        }
    }

    /// Makes the next `accesses` accesses (repeats included) a warm-up: they change the model's
    /// state as usual, then every statistic is cleared, so that the counts describe only what
    /// follows. A run of repeats that straddles the end of the warm-up is split there, which is
    /// exact: every repeat after the first is a hit that changes no state.
    pub fn set_warmup(&mut self, accesses: u64) {
        self.warmup_left = accesses;
    }

    /// Accesses of the warm-up not simulated yet (0 once statistics count).
    pub fn warmup_left(&self) -> u64 {
        self.warmup_left
    }

    /// Clears every CPU's statistics; the model's state is kept.
    pub fn reset_stats(&mut self) {
        for s in &mut self.stats {
            *s = new_stats(&self.spec);
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

    /// Applies one event (and ends the warm-up if it falls there).
    pub fn apply(&mut self, event: &TraceEvent) -> Result<(), SimError> {
        self.apply_all(std::slice::from_ref(event))
    }

    /// Applies one event, warm-up aside.
    #[inline]
    fn apply_one(&mut self, event: &TraceEvent) -> Result<(), SimError> {
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

    /// Applies a batch of events in order (and ends the warm-up where it falls).
    pub fn apply_all(&mut self, events: &[TraceEvent]) -> Result<(), SimError> {
        let mut rest = events;
        while self.warmup_left > 0 {
            let Some((event, after)) = rest.split_first() else { return Ok(()) };
            self.apply_warming(event)?;
            rest = after;
        }
        // Accesses go straight to their CPU; the slot of the last CPU seen is reused (slots of
        // existing CPUs never move).
        let mut last: Option<(CpuId, usize)> = None;
        for event in rest {
            match event {
                TraceEvent::Access { access, repeat } => {
                    let slot = match last {
                        Some((cpu, slot)) if cpu == access.cpu => slot,
                        _ => {
                            let slot = self.slot(access.cpu)?;
                            last = Some((access.cpu, slot));
                            slot
                        }
                    };
                    self.cpus[slot].access(access, *repeat, &mut self.stats[slot]);
                    self.events += 1;
                }
                TraceEvent::Op { .. } => self.apply_one(event)?,
            }
        }
        Ok(())
    }

    /// Applies one event of the warm-up.
    fn apply_warming(&mut self, event: &TraceEvent) -> Result<(), SimError> {
        let left = self.warmup_left;
        match *event {
            TraceEvent::Access { access, repeat } if u64::from(repeat) > left => {
                // Split the run: `left` accesses end the warm-up, the others are measured. It is
                // one event of the trace, counted once.
                self.apply_one(&TraceEvent::Access { access, repeat: left as u32 })?;
                self.events -= 1;
                self.warmup_left = 0;
                self.reset_stats();
                self.apply_one(&TraceEvent::Access { access, repeat: repeat - left as u32 })
            }
            _ => {
                self.apply_one(event)?;
                self.warmup_left = left - event.accesses();
                if self.warmup_left == 0 {
                    self.reset_stats();
                }
                Ok(())
            }
        }
    }

    /// `(cpu, its statistics)` for every CPU used, by CPU number. While a warm-up is still
    /// running, nothing has been measured: the statistics are zero.
    pub fn per_cpu(&self) -> Vec<(CpuId, HwStats)> {
        let mut out: Vec<_> = self
            .ids
            .iter()
            .zip(&self.stats)
            .map(|(id, s)| {
                (*id, if self.warmup_left > 0 { new_stats(&self.spec) } else { s.clone() })
            })
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// The CPU model of `cpu`, if it has been used.
    pub fn cpu(&self, cpu: CpuId) -> Option<&Cpu> {
        let slot = self.slot_of[usize::from(cpu.0)];
        (slot != u32::MAX).then(|| &self.cpus[slot as usize])
    }

    /// The sum of every CPU's statistics (zero while a warm-up is still running).
    pub fn total(&self) -> HwStats {
        let mut total = new_stats(&self.spec);
        if self.warmup_left == 0 {
            for s in &self.stats {
                total += s;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    fn run(events: &[TraceEvent], warmup: u64) -> System {
        let mut system = System::new(&crate::machine::builtin("skylake").unwrap());
        system.set_warmup(warmup);
        for batch in events.chunks(1000) {
            system.apply_all(batch).unwrap();
        }
        // One event at a time, the warm-up ends at the same place.
        let mut one_by_one = System::new(system.spec());
        one_by_one.set_warmup(warmup);
        for event in events {
            one_by_one.apply(event).unwrap();
        }
        assert_eq!(one_by_one.total(), system.total(), "apply and apply_all agree");
        system
    }

    /// The first `accesses` accesses of `events`, splitting the last run if needed.
    fn prefix(events: &[TraceEvent], mut accesses: u64) -> Vec<TraceEvent> {
        let mut out = Vec::new();
        for e in events {
            if accesses == 0 {
                break;
            }
            match *e {
                TraceEvent::Access { access, repeat } => {
                    let take = u64::from(repeat).min(accesses);
                    out.push(TraceEvent::Access { access, repeat: take as u32 });
                    accesses -= take;
                }
                op => out.push(op),
            }
        }
        out
    }

    #[test]
    fn warmup_counts_exactly_what_follows_it() {
        let (mut g, mut events, mut batch) =
            (Workload::CtxSwitchNoPcid.generator(50_000, 3), Vec::new(), Vec::new());
        while g.fill(&mut batch, 999) {
            events.extend_from_slice(&batch);
        }
        let mut page_local = Vec::new();
        let mut g = Workload::PageLocal.generator(50_000, 3);
        while g.fill(&mut batch, 999) {
            page_local.extend_from_slice(&batch);
        }
        for events in [events, page_local] {
            let all = run(&events, 0).total();
            // Warm-up ends inside runs of repeats (page-local) and between events.
            for warmup in [1, 777, 12_345, 49_999] {
                let measured = run(&events, warmup);
                assert_eq!(measured.warmup_left(), 0);
                assert_eq!(measured.events(), run(&events, 0).events(), "a split run is one event");
                let mut sum = measured.total();
                sum += &run(&prefix(&events, warmup), 0).total();
                assert_eq!(sum, all, "warm-up {warmup} + measured = everything");
                assert_eq!(measured.total().total_accesses(), 50_000 - warmup);
            }
            let all_warmup = run(&events, 60_000);
            assert_eq!(all_warmup.total().total_accesses(), 0);
            assert_eq!(all_warmup.warmup_left(), 10_000);
        }
    }
}
