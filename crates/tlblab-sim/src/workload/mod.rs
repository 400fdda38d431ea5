//! Built-in synthetic workloads: seeded, deterministic streams of trace events.
//!
//! They exercise the hardware model without a trace file (the `tlblab sim demo` command) and are
//! the streams of the throughput benchmarks. Every access is a 4 KiB load or store on CPU 0.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TlbOp, TraceEvent, Vpn};

/// A built-in workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Long runs (32–96 accesses, mean 64) on a hot set of 16 pages, in random order; a quarter of
    /// the runs are stores.
    PageLocal,
    /// One load per page, cycling over 1,024 consecutive pages (4 MiB): misses a 64-entry L1 dTLB,
    /// fits a 1,536-entry STLB.
    Loop1024,
    /// One load per page, uniformly random over 65,536 pages (256 MiB): mostly page walks.
    Random65536,
    /// Two processes (PCIDs 1 and 2), each with 512 random pages, switching every 2,000 accesses
    /// with a MOV to CR3 with NOFLUSH: PCID keeps both working sets.
    CtxSwitchPcid,
    /// The same with CR4.PCIDE=0: every switch's MOV to CR3 flushes all non-global entries.
    CtxSwitchNoPcid,
}

impl Workload {
    /// Every built-in workload.
    pub const ALL: [Workload; 5] = [
        Workload::PageLocal,
        Workload::Loop1024,
        Workload::Random65536,
        Workload::CtxSwitchPcid,
        Workload::CtxSwitchNoPcid,
    ];

    /// The name used on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Workload::PageLocal => "page-local",
            Workload::Loop1024 => "loop-1024",
            Workload::Random65536 => "random-65536",
            Workload::CtxSwitchPcid => "ctx-switch-pcid",
            Workload::CtxSwitchNoPcid => "ctx-switch-nopcid",
        }
    }

    /// The workload with this name.
    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }

    /// One line saying what it does.
    pub const fn description(self) -> &'static str {
        match self {
            Workload::PageLocal => "runs of ~64 accesses on 16 hot pages",
            Workload::Loop1024 => "one load per page over 1,024 pages, cyclically",
            Workload::Random65536 => "one load per page, uniformly over 65,536 pages",
            Workload::CtxSwitchPcid => {
                "2 processes × 512 pages, switch every 2,000 (PCID, NOFLUSH)"
            }
            Workload::CtxSwitchNoPcid => "the same with CR4.PCIDE=0: each switch flushes",
        }
    }

    /// A generator of `accesses` accesses (counting repeats), seeded with `seed`.
    pub fn generator(self, accesses: u64, seed: u64) -> Generator {
        Generator {
            workload: self,
            rng: Pcg64Mcg::seed_from_u64(seed),
            remaining: accesses,
            position: 0,
            started: false,
            switched_at: 0,
        }
    }
}

/// A stream of events from a built-in workload.
#[derive(Clone, Debug)]
pub struct Generator {
    workload: Workload,
    rng: Pcg64Mcg,
    remaining: u64,
    /// Accesses made so far (the loop position, the time since the last switch).
    position: u64,
    started: bool,
    /// Position of the last context switch emitted.
    switched_at: u64,
}

const BASE: u64 = 0x7f00_0000; // VPN of the first page: 0x7f00_0000_0000
const SWITCH_EVERY: u64 = 2_000;
const CTX_PAGES: u64 = 512;

/// A non-global 4 KiB access on CPU 0.
fn access_4k(pcid: u16, vpn: u64, kind: AccessKind) -> Access {
    let page = Page::new(Vpn(vpn), PageSize::Size4K).expect("workload pages are 4K");
    Access::new(CpuId(0), Pcid::new(pcid).expect("PCID < 4096"), page, kind)
}

impl Generator {
    /// Clears `out` and appends up to `max` events; returns `false` once the stream has ended.
    pub fn fill(&mut self, out: &mut Vec<TraceEvent>, max: usize) -> bool {
        out.clear();
        while out.len() < max && self.remaining > 0 {
            if let Some(event) = self.next_event() {
                self.remaining -= event.accesses();
                out.push(event);
            }
        }
        !out.is_empty()
    }

    fn next_event(&mut self) -> Option<TraceEvent> {
        let one = |access| TraceEvent::Access { access, repeat: 1 };
        let op = |op| TraceEvent::Op { cpu: CpuId(0), op };
        let event = match self.workload {
            Workload::PageLocal => {
                let page = BASE + self.rng.random_range(0..16u64);
                let kind = if self.rng.random_range(0..4) == 0 {
                    AccessKind::Store
                } else {
                    AccessKind::Load
                };
                let run = self.rng.random_range(32..=96u64).min(self.remaining);
                TraceEvent::Access { access: access_4k(1, page, kind), repeat: run as u32 }
            }
            Workload::Loop1024 => one(access_4k(1, BASE + self.position % 1024, AccessKind::Load)),
            Workload::Random65536 => {
                one(access_4k(1, BASE + self.rng.random_range(0..65_536u64), AccessKind::Load))
            }
            Workload::CtxSwitchPcid | Workload::CtxSwitchNoPcid => {
                let pcid_on = self.workload == Workload::CtxSwitchPcid;
                if !self.started {
                    self.started = true;
                    return Some(op(TlbOp::MovCr4 { pge: true, pcide: pcid_on }));
                }
                let process = (self.position / SWITCH_EVERY) % 2;
                let pcid = if pcid_on { 1 + process as u16 } else { 0 };
                if self.position.is_multiple_of(SWITCH_EVERY) && self.position != self.switched_at {
                    self.switched_at = self.position;
                    let pcid = Pcid::new(pcid).expect("PCID < 4096");
                    return Some(op(TlbOp::MovCr3 { pcid, noflush: pcid_on }));
                }
                // Each process has its own pages (different address ranges).
                let vpn = BASE + process * 0x10_0000 + self.rng.random_range(0..CTX_PAGES);
                one(access_4k(pcid, vpn, AccessKind::Load))
            }
        };
        self.position += event.accesses();
        self.started = true;
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(w: Workload, accesses: u64, seed: u64) -> Vec<TraceEvent> {
        let (mut g, mut all, mut batch) = (w.generator(accesses, seed), Vec::new(), Vec::new());
        while g.fill(&mut batch, 1000) {
            all.extend_from_slice(&batch);
        }
        all
    }

    #[test]
    fn every_workload_makes_exactly_the_accesses_asked_for_and_is_seeded() {
        for w in Workload::ALL {
            let events = collect(w, 10_001, 7);
            assert_eq!(
                events.iter().map(TraceEvent::accesses).sum::<u64>(),
                10_001,
                "{}",
                w.name()
            );
            assert_eq!(events, collect(w, 10_001, 7), "{} is deterministic", w.name());
            assert_eq!(Workload::from_name(w.name()), Some(w));
        }
        assert_ne!(collect(Workload::Random65536, 100, 1), collect(Workload::Random65536, 100, 2));
    }

    #[test]
    fn context_switches_happen_every_slice() {
        let events = collect(Workload::CtxSwitchNoPcid, 10_000, 1);
        let switches = events
            .iter()
            .filter(|e| matches!(e, TraceEvent::Op { op: TlbOp::MovCr3 { .. }, .. }))
            .count();
        assert_eq!(switches, 4, "at 2,000, 4,000, 6,000 and 8,000 accesses");
    }
}
