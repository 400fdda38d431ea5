//! A set of CPUs (`struct cpumask`).

use serde::Serialize;
use tlblab_types::CpuId;

/// A bitmap of CPUs, sized for the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct CpuMask {
    words: Vec<u64>,
}

impl CpuMask {
    /// An empty mask for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> CpuMask {
        CpuMask { words: vec![0; nr_cpus.div_ceil(64)] }
    }

    /// A mask holding every one of `nr_cpus` CPUs.
    pub fn full(nr_cpus: usize) -> CpuMask {
        let mut m = CpuMask::new(nr_cpus);
        for c in 0..nr_cpus {
            m.set(CpuId(c as u16));
        }
        m
    }

    /// `cpumask_test_cpu()`.
    pub fn test(&self, cpu: CpuId) -> bool {
        let i = usize::from(cpu.0);
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// `cpumask_set_cpu()`.
    pub fn set(&mut self, cpu: CpuId) {
        let i = usize::from(cpu.0);
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// `cpumask_clear_cpu()`.
    pub fn clear(&mut self, cpu: CpuId) {
        let i = usize::from(cpu.0);
        self.words[i / 64] &= !(1 << (i % 64));
    }

    /// `cpumask_or()` into `self`.
    pub fn or(&mut self, other: &CpuMask) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Removes every CPU.
    pub fn clear_all(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// `cpumask_weight()`.
    pub fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether a CPU other than `cpu` is set (`cpumask_any_but() < nr_cpu_ids`).
    pub fn any_but(&self, cpu: CpuId) -> bool {
        self.iter().any(|c| c != cpu)
    }

    /// The CPUs in the mask, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64).filter(move |b| bits >> b & 1 == 1).map(move |b| CpuId((w * 64 + b) as u16))
        })
    }
}

/// Who holds a cache line (MESI-like: one modified owner, or shared copies): an mm's
/// `mm_cpumask` line, or a CPU's TLB-state lines (mechanism `tlbstate-lines`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpumaskLine {
    /// The CPU that wrote it last, while nobody has read it since.
    pub(crate) owner: Option<u16>,
    /// CPUs holding a shared copy (the last writer among them, once another CPU read it).
    pub(crate) sharers: Vec<u16>,
}

/// Writes, reads and transfers of a kind of cache line (`mm_cpumask`, or the CPUs'
/// TLB-state lines) over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpumaskStats {
    /// Locked bit sets and clears.
    pub writes: u64,
    /// Reads by `cpumask_test_cpu()` before a set (6.14+) and by flush initiators.
    pub reads: u64,
    /// Line moves between CPUs (writes and reads that found the line elsewhere).
    pub transfers: u64,
    /// Of those, moves that crossed sockets.
    pub remote_transfers: u64,
}

impl CpumaskStats {
    /// Nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == CpumaskStats::default()
    }

    /// Counts one move of the line, `remote` when it crossed sockets.
    pub(crate) fn count_transfer(&mut self, remote: bool) {
        self.transfers += 1;
        if remote {
            self.remote_transfers += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_iterate() {
        let mut m = CpuMask::new(130);
        for c in [0, 63, 64, 129] {
            m.set(CpuId(c));
        }
        m.clear(CpuId(63));
        assert_eq!(m.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 64, 129]);
        assert_eq!(m.weight(), 3);
        assert!(m.any_but(CpuId(0)));
        let mut one = CpuMask::new(130);
        one.set(CpuId(5));
        assert!(!one.any_but(CpuId(5)));
    }
}
