//! The studies: what each one mirrors, and the table of its parts (machine, CPUs, scenario,
//! settings, policies), each setting with the reason for it.
//!
//! Inputs come from the project's study descriptions (`studies.md`): workload sizes, thread
//! counts, machines. Where a study's real run is far too long to simulate whole, a part runs a
//! *representative window* and says why the window stands for the whole. No setting is chosen
//! to make a result come out one way.

use crate::measure::Measure::{self, *};
use serde::{Deserialize, Serialize};
use tlblab_kernel::workloads::Params;

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    /// The study's settings.
    Full,
    /// Every part shrunk (fewer iterations, smaller windows, fewer worker counts): for tests
    /// and smoke runs. Its figures are not the study's.
    Quick,
}

impl Size {
    /// `full` in a full run, `quick` in a quick one.
    pub fn pick<T>(self, full: T, quick: T) -> T {
        match self {
            Size::Full => full,
            Size::Quick => quick,
        }
    }
}

/// How a study's results are laid out as text (each study has its own format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// S1: times, walks, and a flush-size histogram per policy.
    Pti,
    /// S2: one table per scenario.
    Pcid,
    /// S3: a `perf stat -r N`-like block per policy.
    La57,
    /// S4: madvise-busy, mmtests-style madvise-scale, rt-latency.
    FlushInfo,
    /// S5: times, IPIs, flushes and exposure windows.
    Xpfo,
    /// S6: one sweep table per machine (loops/s, invalidation and lock-wait shares, latency).
    Broadcast,
    /// S7: hackbench seconds and will-it-scale ops with IPIs and mm_cpumask transfers.
    LazyCpumask,
    /// S9: one curve per host setting over the vCPUs, PV flush against native IPIs.
    PvFlush,
    /// S8: per part, speed, IPIs, the checker's verdict and exposure side by side.
    Deferred,
    /// S10: per part, the cost curve along the ceiling and the best ceiling.
    Ceiling,
}

/// A built-in study.
pub struct Study {
    /// Its name (`s1-pti`).
    pub name: &'static str,
    /// Its short name (`s1`; `S1` is accepted too).
    pub short: &'static str,
    /// One line saying what it compares.
    pub title: &'static str,
    /// The kernel debate and measurements it mirrors.
    pub mirrors: &'static str,
    /// Seeds per policy unless `--seeds` says otherwise.
    pub default_seeds: u64,
    /// Why that many.
    pub seeds_why: &'static str,
    /// Its text format.
    pub layout: Layout,
    /// One of the studies beyond the five debates (S6–S10, studies.md): the main job
    /// (`tlblab study`) runs these at their quick settings.
    pub beyond: bool,
    parts: fn(Size) -> Vec<Part>,
}

impl Study {
    /// Its parts at this size.
    pub fn parts(&self, size: Size) -> Vec<Part> {
        (self.parts)(size)
    }
}

/// One scenario on one machine under the study's policies.
#[derive(Clone, Debug)]
pub struct Part {
    /// What it is, as printed (`pingpong --touch 512`).
    pub label: String,
    /// The machine preset.
    pub machine: &'static str,
    /// Why this preset stands for the study's machine.
    pub machine_why: &'static str,
    /// For a guest preset: how the host is set for this part (posted interrupts, overcommit);
    /// `None`: as the preset says.
    pub guest: Option<GuestSetting>,
    /// Simulated CPUs.
    pub cpus: usize,
    /// The scenario (`tlblab_kernel::workloads::scenario`).
    pub scenario: &'static str,
    /// Its parameters.
    pub params: Params,
    /// Why these settings: figures from the study, or the representative window and why.
    pub settings_why: &'static str,
    /// The policies; the first is the baseline of every ratio.
    pub policies: Vec<&'static str>,
    /// What is reported, in order.
    pub measures: Vec<Measure>,
    /// The sweep this part is a point of, if any.
    pub sweep: Option<Sweep>,
}

/// How a part sets the host of a guest preset (study S9's axes), over the preset's `[guest]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GuestSetting {
    /// Posted interrupts (APICv, AVIC): a running vCPU takes an IPI without an exit.
    pub posted_interrupts: bool,
    /// Runnable host threads per physical CPU (1: dedicated pCPUs).
    pub overcommit: f64,
}

impl GuestSetting {
    /// As printed in labels: `posted interrupts, overcommit 1.5×`.
    pub fn label(&self) -> String {
        format!(
            "{}, overcommit {}×",
            if self.posted_interrupts { "posted interrupts" } else { "no posted interrupts" },
            self.overcommit
        )
    }
}

/// Parts that repeat one scenario along one axis (workers, CPUs): each is a point, and the
/// points together are one curve per policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sweep {
    /// Its name; the parts that carry it form the sweep, in the study's order.
    pub name: &'static str,
    /// What varies from point to point.
    pub axis: SweepAxis,
    /// How each other policy is set against the baseline along the axis.
    pub relative: Relative,
}

/// What varies along a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepAxis {
    /// The scenario's workers (`params.tasks`).
    Workers,
    /// The simulated CPUs (`cpus`).
    Cpus,
}

impl SweepAxis {
    /// The axis value of a point.
    pub fn value(self, cpus: usize, params: &Params) -> usize {
        match self {
            SweepAxis::Workers => params.tasks,
            SweepAxis::Cpus => cpus,
        }
    }

    /// Its name in tables and on plots.
    pub fn label(self) -> &'static str {
        match self {
            SweepAxis::Workers => "workers",
            SweepAxis::Cpus => "CPUs",
        }
    }
}

/// How a sweep sets each policy against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relative {
    /// The first measure's change in % (mmtests' style).
    Change,
    /// For a speed (higher is better): how many times as long the same work takes, 1 / the
    /// speed ratio.
    Slowdown,
}

/// Every built-in study, in order.
pub const STUDIES: &[Study] = &[
    Study {
        name: "s1-pti",
        short: "s1",
        title: "PTI user flushes: INVPCID per page vs a deferred CR3 flush (Linux 4.15-era, 2017)",
        mirrors: "the 2017 PTI review: INVLPG + INVPCID type 0 on the user PCID at once (4.15, 6cff64b86aaa) against marking user_pcid_flush_mask and flushing the whole user PCID at the next return to user (Dave Hansen's measurements on a Skylake desktop)",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change only each CPU's timer phase and the workload's random draws",
        layout: Layout::Pti,
        beyond: false,
        parts: s1_parts,
    },
    Study {
        name: "s2-pcid",
        short: "s2",
        title: "PCID with 6 dynamic ASIDs, tlb_gen tracking and the reworked lazy TLB mode (Linux 4.14, 2017)",
        mirrors: "Andy Lutomirski's PCID series merged for 4.14 and the microbenchmarks it was argued with: 4.13, 4.14 booted with nopcid, and 4.14 with PCID",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change only each CPU's timer phase",
        layout: Layout::Pcid,
        beyond: false,
        parts: s2_parts,
    },
    Study {
        name: "s3-la57",
        short: "s3",
        title: "4- vs 5-level paging chosen at boot: run-time p4d_folded tests vs boot-time patching (Linux 4.14-rc, 2017)",
        mirrors: "the 4.14-rc boot-time LA57 switch (a load and a branch of p4d_folded in hot paths) measured with `perf stat -r 5` of an allmodconfig build, against a 4-level-only kernel and ALTERNATIVES patching; plus real 5-level walks (beyond the study)",
        default_seeds: 5,
        seeds_why: "5 seeds, as `perf stat -r 5`",
        layout: Layout::La57,
        beyond: false,
        parts: s3_parts,
    },
    Study {
        name: "s4-flush-info",
        short: "s4",
        title: "flush_tlb_info per CPU (preemption off until every ack) vs on the stack (preemptible wait) (2019 / 2026)",
        mirrors: "the per-CPU flush_tlb_info of 5.3 (3db6d5a5ecaf) and the 2026 series that puts it back on the stack and re-enables preemption while waiting for acknowledgements; madvise microbenchmarks and mmtests stressng-madvise on a 128-CPU Ice Lake Xeon",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change only each CPU's timer phase",
        layout: Layout::FlushInfo,
        beyond: false,
        parts: s4_parts,
    },
    Study {
        name: "s5-xpfo",
        short: "s5",
        title: "XPFO: synchronous vs deferred kernel flushes when pages leave the direct map (2019 RFC)",
        mirrors: "XPFO v9 (Khalid Aziz, 2019): flush_tlb_kernel_range() on every CPU per page given to user space, against v9 12/13's deferral of the other CPUs' flushes to their next context switch; kernel builds on a 96-CPU Xeon Platinum 8160 and a 4-core i5-3550",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change only each CPU's timer phase and the workload's random draws",
        layout: Layout::Xpfo,
        beyond: false,
        parts: s5_parts,
    },
    Study {
        name: "s6-broadcast",
        short: "s6",
        title: "Broadcast invalidation: IPIs vs AMD INVLPGB (6.15 global ASIDs) vs Intel RAR, with and without lru_add_drain() in the zap path (2025)",
        mirrors: "Rik van Riel's INVLPGB series (6.15: global ASIDs for mms active on 4+ CPUs, sampled on jiffies, IPIs during the transition) and his Intel RAR RFC (May 2025), measured with will-it-scale tlb_flush2_threads together with \"mm: remove unnecessary calls to lru_add_drain\" (6.15); Milan, Zen 4 and Sapphire Rapids",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change only each CPU's timer phase, which moves the jiffies against the loop",
        layout: Layout::Broadcast,
        beyond: true,
        parts: crate::beyond_s6::s6_parts,
    },
    Study {
        name: "s7-lazy-cpumask",
        short: "s7",
        title: "lazy mm_cpumask and its trimming (Linux 6.14) vs eager clearing at every switch (6.13)",
        mirrors: "Rik van Riel's 6.14 changes: 209954cbc7d0 (a CPU's mm_cpumask bit set at switch time and cleared only by the first flush IPI it gets while not running the mm) and 6db2526c1d69 (at most once a second per mm, a flush also IPIs the CPUs whose bit is stale); hackbench on a 72-CPU AMD Milan-class machine and will-it-scale tlb_flush2_threads at 104 threads on a 2-socket Skylake-SP",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change each CPU's timer phase, and through it the interleaving of wake-ups and switches",
        layout: Layout::LazyCpumask,
        beyond: true,
        parts: crate::beyond_s7::parts,
    },
    Study {
        name: "s8-deferred",
        short: "s8",
        title: "Asynchronous and deferred shootdowns: LATR (2018), migrc and LUF (2023–2025) — speed beside the safety checker's verdict",
        mirrors: "LATR (Kumar et al., ASPLOS'18: munmap and MADV_DONTNEED flushes left as per-CPU states applied at each CPU's next tick or context switch) on its own workloads, a munmap-latency microbenchmark and a multi-threaded web server that maps and unmaps files; and Byungchul Park's migrc / LUF RFCs (a migration's flush of read-only pages deferred until the page allocator reuses them) on a migration workload",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change each CPU's timer phase and the workload's random draws; each seed also checks 4 perturbed schedules with the safety checker (12 in all, as `sim check --schedules 12`)",
        layout: Layout::Deferred,
        beyond: true,
        parts: crate::beyond_s8::s8_parts,
    },
    Study {
        name: "s9-pv-flush",
        short: "s9",
        title: "KVM's paravirtual TLB flush vs native IPIs in a guest, with and without posted interrupts, under host overcommit",
        mirrors: "KVM PV TLB flush (Wanpeng Li, 4.16, 858a43aae236: kvm_flush_tlb_multi() marks a preempted vCPU KVM_VCPU_FLUSH_TLB in its steal-time record instead of interrupting it, and the host flushes its TLB at the vCPU's next entry) against native_flush_tlb_multi() in the same 6.x guest (pv_tlb_flush_supported() false), at 4 … 64 vCPUs on a host with dedicated or shared pCPUs (overcommit 1×, 1.5×, 2×), with and without posted interrupts",
        default_seeds: 3,
        seeds_why: "3 seeds: seeds change each CPU's timer phase and the host's scheduling of the vCPUs (who is preempted when)",
        layout: Layout::PvFlush,
        beyond: true,
        parts: crate::beyond_s9::parts,
    },
    Study {
        name: "s10-ceiling",
        short: "s10",
        title: "tlb_single_page_flush_ceiling from 1 to 512 on recorded traces and S1's flush sizes: the best ceiling per machine",
        mirrors: "the ceiling of 33 pages in arch/x86/mm/tlb.c (since 2014; its comment: large enough for at least 95% of allocations' flushes, and at about 100 ns per single-page flush it caps a ranged flush near 3 µs), swept on two traces recorded on this project's machine and on S1's kernel-build flush sizes",
        default_seeds: 3,
        seeds_why: "3 seeds: a replay's seed changes only each CPU's timer phase (the trace fixes the requests and the schedule); the kbuild part's seeds draw different job mixes too",
        layout: Layout::Ceiling,
        beyond: true,
        parts: crate::beyond_s10::s10_parts,
    },
];

/// The study called `name`: its name (`s2-pcid`) or short name (`s2`, `S2`), in any case.
pub fn find(name: &str) -> Option<&'static Study> {
    STUDIES.iter().find(|s| s.name.eq_ignore_ascii_case(name) || s.short.eq_ignore_ascii_case(name))
}

/// The known names, for error messages.
pub fn known_names() -> String {
    STUDIES.iter().map(|s| format!("{} ({})", s.name, s.short)).collect::<Vec<_>>().join(", ")
}

const SKYLAKE_DESKTOP: &str = "studies.md: a 4-core Skylake desktop/laptop without SMT; the skylake preset (client core, PCID and INVPCID, 4 GHz)";

const SKYLAKE_KVM: &str = "studies.md S2: measured inside a KVM guest booted with idle=poll on a 4-core Skylake laptop at 2.3 GHz (turbo off); the skylake-kvm preset: skylake's core at 2.3 GHz, idle vCPUs that poll (no idle states, so an IPI or a wake-up finds them running), and the guest's virtualisation ([guest]: an exit per IPI sent through the emulated x2APIC, an exit on a running target to inject it, no PV TLB flush or PV send-IPI in a 4.13/4.14 guest)";

// ---------------------------------------------------------------------------------------------
// S1
// ---------------------------------------------------------------------------------------------
fn s1_parts(size: Size) -> Vec<Part> {
    vec![Part {
        label: "kbuild (make -j8)".into(),
        sweep: None,
        machine: "skylake",
        machine_why: SKYLAKE_DESKTOP,
        guest: None,
        // studies.md S1: 4 cores, no SMT.
        cpus: 4,
        scenario: "kbuild",
        params: Params {
            // make -j8 (studies.md S1).
            tasks: 8,
            // Representative window: kbuild's own (0 = 1,000 ms of simulated time). Quick: 40 ms.
            window_ms: size.pick(0, 40),
            ..Params::default()
        },
        settings_why: "make -j8 on 4 CPUs (studies.md S1), at S1's fault rate (58.4 M faults over ≈ 880 user-seconds). Representative window: kbuild's own window of simulated time (1,000 ms) in the middle of the ≈ 255 s build, not the whole build: slots never run out of jobs and their first jobs are already under way, so the window is in steady state from its start, and the flush traffic per unit of work is set by the build's rates, not by its length. 1,000 ms on 4 CPUs is ≈ 4 CPU-seconds, ≈ 15 compile jobs of 274 ms median; the seeds draw different job mixes",
        policies: vec!["pti-invpcid", "pti-deferred"],
        measures: vec![ScenarioMetric, UserS, SystemS, ElapsedS, DtlbWalks, WalkCyclesPerWalk],
    }]
}

// ---------------------------------------------------------------------------------------------
// S2
// ---------------------------------------------------------------------------------------------
fn s2_parts(size: Size) -> Vec<Part> {
    let policies = || vec!["linux-4.13", "linux-4.14-nopcid", "linux-4.14"];
    vec![
        Part {
            label: "madv-migrate".into(),
            sweep: None,
            machine: "skylake-kvm",
            machine_why: SKYLAKE_KVM,
            guest: None,
            cpus: 4,
            scenario: "madv-migrate",
            params: Params {
                // Representative window: 2,000 iterations (quick: 100). Every iteration is the
                // same write / DONTNEED / migrate cycle; 2,000 of them span ≈ 58 ms, ≈ 14 timer
                // ticks per CPU, so the ticks that land in the loop are sampled.
                iterations: size.pick(2_000, 100),
                ..Params::default()
            },
            settings_why: "representative window: 2,000 iterations; every iteration repeats the same write / MADV_DONTNEED / sched_setaffinity cycle, and 2,000 of them span about 14 timer ticks per CPU, so ticks are sampled at their real rate",
            policies: policies(),
            measures: vec![ScenarioMetric, IpisPerOp],
        },
        Part {
            label: "pthread-mmap (8 threads)".into(),
            sweep: None,
            machine: "skylake-kvm",
            machine_why: SKYLAKE_KVM,
            guest: None,
            cpus: 4,
            scenario: "pthread-mmap",
            params: Params {
                // studies.md: 8 threads on 4 cores.
                tasks: 8,
                // studies.md: 256 MB over 8 threads per round = 32 MiB = 8,192 pages each.
                pages: 8_192,
                // Representative window: 10 of the 100 rounds (quick: 2).
                iterations: size.pick(10, 2),
                ..Params::default()
            },
            settings_why: "studies.md: 8 threads on 4 cores, 100 rounds of 256 MB over 8 threads = 8,192 pages per thread per round. Representative window: 10 of the 100 rounds, because every round repeats the same mmap / write / munmap and the time per round is steady after the first (checked at 5, 10 and 20 rounds); the metric is the seconds of these 10 rounds",
            policies: policies(),
            measures: vec![ScenarioMetric, IpisPerOp],
        },
        Part {
            label: "pingpong".into(),
            sweep: None,
            machine: "skylake-kvm",
            machine_why: SKYLAKE_KVM,
            guest: None,
            cpus: 4,
            scenario: "pingpong",
            params: Params {
                // Representative window: 2,000 round trips (quick: 100), identical each.
                iterations: size.pick(2_000, 100),
                touch: 0,
                ..Params::default()
            },
            settings_why: "two processes pinned to one CPU pass a token through eventfds (studies.md). Representative window: 2,000 round trips, each the same pair of context switches",
            policies: policies(),
            measures: vec![ScenarioMetric, IpisPerOp],
        },
        Part {
            label: "pingpong --touch 512".into(),
            sweep: None,
            machine: "skylake-kvm",
            machine_why: SKYLAKE_KVM,
            guest: None,
            cpus: 4,
            scenario: "pingpong",
            params: Params {
                // Representative window: 2,000 round trips (quick: 100).
                iterations: size.pick(2_000, 100),
                // studies.md: each side touches 512 zero-page pages per round trip.
                touch: 512,
                ..Params::default()
            },
            settings_why: "as pingpong, each side touching 512 pages mapped to the zero page per round trip (studies.md). Representative window: 2,000 round trips, each the same",
            policies: policies(),
            measures: vec![ScenarioMetric, DtlbWalksPerOp, IpisPerOp],
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// S3
// ---------------------------------------------------------------------------------------------
const S3_SERVER: &str = "studies.md S3: a large Intel server without LA57 hardware at 2.52 GHz. Stand-in: skylake-server (Xeon Platinum 8160, Skylake-SP: the Intel server core of 2017, no LA57, so every walk is 4-level as on the real machine); its clock is 2.1 GHz, which scales seconds but not the ratios between policies";

fn s3_params(size: Size) -> Params {
    Params {
        // make -j100 (studies.md S3); quick: -j8.
        tasks: size.pick(100, 8),
        // Representative window: 300 ms of simulated time (kbuild's default is 1,000 ms), to
        // keep 5 seeds × 5 policy runs on 27 CPUs within the studies' time budget. Quick: 40 ms.
        window_ms: size.pick(300, 40),
        ..Params::default()
    }
}

const S3_SETTINGS: &str = "make -j100 -B -k of allmodconfig (studies.md S3) on 27 CPUs: the real run kept ≈ 27 CPUs busy on average (≈ 17,300 task-clock seconds), and make -j100 keeps every simulated CPU fed. Representative window: 300 ms of simulated time in the middle of the build (kbuild's default is 1,000 ms; 300 keeps the 25 runs of this study within its time budget), at the allmodconfig fault rate (studies.md: 332 M faults over 17,300 task-clock seconds): slots never run out of jobs and their first jobs are already under way, so the window is in steady state from its start, and the run-time checks and walks per unit of work are set by the rates, not by the build's length. 300 ms on 27 CPUs is ≈ 8 CPU-seconds, ≈ 30 compile jobs of 274 ms median";

fn s3_parts(size: Size) -> Vec<Part> {
    let measures = || vec![ScenarioMetric, TaskClockMs, PageFaults, Cycles, La57Checks, ElapsedS];
    vec![
        Part {
            label: "kbuild-allmod (make -j100), 4-level hardware".into(),
            sweep: None,
            machine: "skylake-server",
            machine_why: S3_SERVER,
            guest: None,
            // ≈ 27 CPUs busy on average (studies.md S3).
            cpus: 27,
            scenario: "kbuild-allmod",
            params: s3_params(size),
            settings_why: S3_SETTINGS,
            policies: vec!["la57-off", "la57-runtime", "la57-patched"],
            measures: measures(),
        },
        Part {
            label: "kbuild-allmod (make -j100), la57-on vs la57-off on LA57 hardware (beyond the study)".into(),
            sweep: None,
            machine: "icelake-server",
            machine_why: "beyond the study: real 5-level walks need LA57 hardware; icelake-server ([features] la57 = true), with the same 27 CPUs. Both policies are on the 4.14 base (linux-4.14+la57-on), so only the paging depth differs",
            guest: None,
            cpus: 27,
            scenario: "kbuild-allmod",
            params: s3_params(size),
            settings_why: S3_SETTINGS,
            policies: vec!["la57-off", "linux-4.14+la57-on"],
            measures: {
                let mut m = measures();
                m.extend([DtlbWalks, WalkCyclesPerWalk]);
                m
            },
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// S4
// ---------------------------------------------------------------------------------------------
const ICELAKE_128: &str = "studies.md S4: Intel Ice Lake Xeon Platinum 8336C, 128 CPUs; the icelake-server preset (2.3 GHz) with 128 CPUs (its 2 NUMA nodes are not modelled)";

fn s4_parts(size: Size) -> Vec<Part> {
    let policies = || vec!["flush-info-percpu", "flush-info-stack"];
    let mut parts = vec![Part {
        label: "madvise-busy (3 busy siblings)".into(),
        sweep: None,
        machine: "icelake-server",
        machine_why: ICELAKE_128,
        guest: None,
        cpus: 128,
        scenario: "madvise-busy",
        params: Params {
            // studies.md: 3 other threads spin, so every DONTNEED shoots down 3 remote TLBs.
            busy: 3,
            // Representative window: 100,000 of 1,000,000 iterations (quick: 2,000).
            iterations: size.pick(100_000, 2_000),
            ..Params::default()
        },
        settings_why: "studies.md: 3 sibling threads spin on other CPUs; 1 M iterations × 5 runs. Representative window: 100,000 iterations per run (K seeds stand for the runs): every iteration is the same write / DONTNEED / 3-CPU shootdown, and 100,000 of them span ≈ 0.4 s, ≈ 100 timer ticks per CPU, so ticks that land in a shootdown are sampled at their real rate",
        policies: policies(),
        measures: vec![ScenarioMetric, PreemptOffMaxUs, PreemptOffP99Us],
    }];
    // mmtests stressng-madvise: 1, 2, 4, … workers (quick: 1, 4, 16).
    let workers = size.pick::<&[usize]>(&[1, 2, 4, 8, 16, 32, 64, 128], &[1, 4, 16]);
    for &n in workers {
        parts.push(Part {
            label: format!("madvise-scale, {n} worker{}", if n == 1 { "" } else { "s" }),
            sweep: Some(Sweep {
                name: "madvise-scale (mmtests stressng-madvise)",
                axis: SweepAxis::Workers,
                relative: Relative::Change,
            }),
            machine: "icelake-server",
            machine_why: ICELAKE_128,
            guest: None,
            cpus: 128,
            scenario: "madvise-scale",
            params: Params {
                tasks: n,
                // Representative window: 2,000 iterations per worker (quick: 100).
                iterations: size.pick(2_000, 100),
                ..Params::default()
            },
            settings_why: "mmtests stressng-madvise at 1, 2, 4, … 128 workers (one per CPU at most; studies.md goes to 256 on its 128 CPUs). Representative window: 2,000 iterations per worker; each worker's start-up (mmap, first fault, exit) is about 1% of the run at this length (checked against 10,000)",
            policies: policies(),
            measures: vec![ScenarioMetric],
        });
    }
    parts.push(Part {
        label: "rt-latency (madvise-busy with interrupts-off bursts)".into(),
        sweep: None,
        machine: "icelake-server",
        machine_why: ICELAKE_128,
        guest: None,
        cpus: 128,
        scenario: "rt-latency",
        params: Params {
            // As madvise-busy: 3 siblings, the first of which runs interrupts-off bursts.
            busy: 3,
            // Representative window: 20,000 iterations (quick: 1,000).
            iterations: size.pick(20_000, 1_000),
            ..Params::default()
        },
        settings_why: "beyond the study: madvise-busy while one sibling CPU runs with interrupts off in bursts (the scenario's default burst length). Representative window: 20,000 iterations, many bursts each; every shootdown that meets a burst waits for it",
        policies: policies(),
        measures: vec![PreemptOffMaxUs, PreemptOffP99Us, ScenarioMetric],
    });
    parts
}

// ---------------------------------------------------------------------------------------------
// S5
// ---------------------------------------------------------------------------------------------
/// S5's warm-up, ms: simulated before each window and not measured. A window starts with every
/// slot setting up at once (make's own memory, each slot's first exec), which in a real build
/// happened long before; under xpfo-sync every one of those pages interrupts every other CPU,
/// so the burst is far from the build's steady state. Checked on 128 CPUs (make -j128,
/// xpfo-sync, the worst case here): without a warm-up a 10 ms window ran 0.27 CPU-s/s against
/// 18.4 in steady state; after 50 ms, the 50, 100 and 200 ms that follow agree within 1.5%.
const S5_WARMUP_MS: u64 = 50;

fn s5_parts(size: Size) -> Vec<Part> {
    let policies = || vec!["no-xpfo", "xpfo-sync", "xpfo-deferred"];
    let measures = || {
        vec![
            TimeSystemPerWork,
            ScenarioMetric,
            SystemS,
            ElapsedS,
            IpisSent,
            IpisReceived,
            FullFlushes,
            XpfoFullFlushes,
            ExposureMedianUs,
            ExposureP99Us,
            ExposureMaxUs,
            ExposureCensored,
        ]
    };
    let mut parts = vec![
        Part {
            label: "kbuild-xpfo (make -j60), 96 CPUs".into(),
            sweep: None,
            machine: "skylake-server",
            machine_why: "studies.md S5 (a): 96-core Intel Xeon Platinum 8160 at 2.1 GHz; the skylake-server preset (two 24-core sockets with SMT = 96 CPUs; the second socket's extra latency is not modelled)",
            guest: None,
            cpus: 96,
            scenario: "kbuild-xpfo",
            params: Params {
                // make -j60 (studies.md S5 (a)); quick: -j4.
                tasks: size.pick(60, 4),
                // Representative window: 300 ms of simulated time (kbuild's default is 1,000
                // ms): under xpfo-sync every unmap costs 95 IPIs, and 300 ms
                // keeps the study within its time budget. Quick: 20 ms.
                window_ms: size.pick(300, 20),
                // Quick: 20 ms.
                warmup_ms: size.pick(S5_WARMUP_MS, 20),
                ..Params::default()
            },
            settings_why: "make -j60 all (studies.md S5 (a)); studies.md gives no fault rate for S5, so kbuild-xpfo uses S1's. Representative window: 300 ms of simulated time in the middle of the build (kbuild's default is 1,000 ms; under xpfo-sync every unmap costs 95 IPIs, and 300 ms keeps the study within its time budget): slots never run out of jobs and their first jobs are already under way, so the window is in steady state, and each page given to user space is a fixed number of unmaps (at allocation, and after each kmap of it: docs/kernel-model.md, XPFO), so the flush and IPI traffic per unit of work is set by the build's rates. 300 ms × 60 slots is ≈ 18 CPU-seconds, ≈ 65 compile jobs of 274 ms median. Warm-up: the first 50 ms are run but not measured. A window starts with every slot setting up at once (make's own memory, each slot's first exec), a burst that in the real build happened long before; under xpfo-sync each of those pages interrupts every other CPU. Checked on 128 CPUs under xpfo-sync: the 50, 100 and 200 ms after a 50 ms warm-up run within 1.5% of each other, while a 10 ms window with no warm-up ran at 1.5% of that rate. Headline: system time as time(1) reports it (studies.md S5: the published comparison is of the build's system time as `time` prints it, tick-based, interrupt handlers charged to the task they interrupted), per CPU-second of the build's own work, since a window does not hold the whole build and every policy does the same work",
            policies: policies(),
            measures: measures(),
        },
        Part {
            label: "kbuild-xpfo (make -j4), 4 CPUs".into(),
            sweep: None,
            machine: "ivybridge",
            machine_why: "studies.md S5 (b): 4-core Intel Core i5-3550 at 3.3 GHz; the ivybridge preset (PCID, no INVPCID)",
            guest: None,
            cpus: 4,
            scenario: "kbuild-xpfo",
            params: Params {
                // make -j4 (studies.md S5 (b)).
                tasks: 4,
                // Representative window: kbuild's own (0 = 1,000 ms). Quick: 40 ms.
                window_ms: size.pick(0, 40),
                // Quick: 20 ms.
                warmup_ms: size.pick(S5_WARMUP_MS, 20),
                ..Params::default()
            },
            settings_why: "make -j4 all (studies.md S5 (b)), at S1's fault rate (none is given for S5). Representative window: kbuild's own window of simulated time (1,000 ms) after the same 50 ms warm-up as on 96 CPUs, for the same reasons; 1,000 ms on 4 CPUs is ≈ 4 CPU-seconds, ≈ 15 compile jobs. Headline: system time as time(1) reports it (studies.md S5: the published comparison is of the build's system time as `time` prints it, tick-based, interrupt handlers charged to the task they interrupted), per CPU-second of the build's own work, since a window does not hold the whole build and every policy does the same work",
            policies: policies(),
            measures: measures(),
        },
    ];
    // The core sweep: make -jN on N CPUs, N = 4 … 128 (quick: 4, 16, 64).
    let cpus = size.pick::<&[usize]>(&[4, 8, 16, 32, 64, 128], &[4, 16, 64]);
    for &n in cpus {
        parts.push(Part {
            label: format!("kbuild-xpfo core sweep, {n} CPUs (make -j{n})"),
            sweep: Some(Sweep {
                name: "kbuild-xpfo core sweep",
                axis: SweepAxis::Cpus,
                relative: Relative::Slowdown,
            }),
            machine: "skylake-server",
            machine_why: "the S5 (a) machine's core (skylake-server: Xeon Platinum 8160) at every point, so only the number of CPUs changes; Skylake-SP scales to 8 sockets, so 128 CPUs is a real configuration (the sockets' extra latency is not modelled)",
            guest: None,
            cpus: n,
            scenario: "kbuild-xpfo",
            params: Params {
                // make -jN: every CPU has a job.
                tasks: n,
                // Representative window: 100 ms of simulated time (quick: 10 ms).
                window_ms: size.pick(100, 10),
                // Quick: 20 ms.
                warmup_ms: size.pick(S5_WARMUP_MS, 20),
                ..Params::default()
            },
            settings_why: "beyond the two machines of studies.md S5: the same build on 4 … 128 CPUs of the S5 (a) core, make -jN on N CPUs so that every CPU has a job and the build's work per second grows with N. Under xpfo-sync each page given to user space interrupts the N − 1 other CPUs, so the cost of a page grows with N while the pages per second grow with N too; this sweep shows that product. At S1's fault rate (S5 gives none). Representative window: 100 ms of simulated time at every point after a 50 ms warm-up (as on 96 CPUs; slots never run out of jobs, so the window is in steady state; 100 ms keeps the 128-CPU xpfo-sync runs, ≈ 1.3 M IPIs each, within the study's time budget). Headline: system time as time(1) reports it (studies.md S5: the published comparison is of the build's system time as `time` prints it, tick-based, interrupt handlers charged to the task they interrupted), per CPU-second of the build's own work, since a window does not hold the whole build and every policy does the same work",
            policies: policies(),
            measures: vec![ScenarioMetric, TimeSystemPerWork, SystemS, IpisSent, XpfoFullFlushes, ExposureP99Us],
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_short_names_find_their_study_in_any_case() {
        for s in STUDIES {
            assert_eq!(find(s.name).unwrap().name, s.name);
            assert_eq!(find(&s.short.to_uppercase()).unwrap().name, s.name);
        }
        assert!(find("s0").is_none());
    }

    #[test]
    fn every_part_has_a_baseline_and_something_to_report() {
        for s in STUDIES {
            for size in [Size::Full, Size::Quick] {
                for p in s.parts(size) {
                    assert!(p.policies.len() >= 2, "{} {}", s.name, p.label);
                    assert!(!p.measures.is_empty(), "{} {}", s.name, p.label);
                    assert!(p.cpus >= 1, "{} {}", s.name, p.label);
                }
            }
        }
    }

    #[test]
    fn quick_parts_are_never_bigger() {
        for s in STUDIES {
            let (full, quick) = (s.parts(Size::Full), s.parts(Size::Quick));
            assert!(quick.len() <= full.len(), "{}", s.name);
            for q in &quick {
                let f = full
                    .iter()
                    .find(|f| f.scenario == q.scenario && f.machine == q.machine)
                    .unwrap_or_else(|| panic!("{} {}", s.name, q.label));
                assert!(q.params.iterations <= f.params.iterations, "{} {}", s.name, q.label);
                assert!(q.params.tasks <= full_max_tasks(&full, q), "{} {}", s.name, q.label);
            }
        }
    }

    /// A sweep's points differ only along its axis, which grows, so its curves compare like
    /// with like; and there are enough points to draw a curve.
    #[test]
    fn a_sweep_varies_only_its_axis() {
        for s in STUDIES {
            for size in [Size::Full, Size::Quick] {
                let parts = s.parts(size);
                let mut names: Vec<&str> =
                    parts.iter().filter_map(|p| p.sweep.map(|w| w.name)).collect();
                names.dedup();
                for name in names {
                    let points: Vec<&Part> =
                        parts.iter().filter(|p| p.sweep.is_some_and(|w| w.name == name)).collect();
                    assert!(points.len() >= 3, "{name}");
                    let (first, axis) = (points[0], points[0].sweep.unwrap().axis);
                    for w in points.windows(2) {
                        let (a, b) = (w[0], w[1]);
                        assert!(
                            axis.value(a.cpus, &a.params) < axis.value(b.cpus, &b.params),
                            "{name}"
                        );
                    }
                    for p in &points {
                        assert_eq!(p.sweep, first.sweep, "{name}");
                        assert_eq!(
                            (p.scenario, p.machine),
                            (first.scenario, first.machine),
                            "{name}"
                        );
                        assert_eq!(
                            (&p.policies, &p.measures),
                            (&first.policies, &first.measures),
                            "{name}"
                        );
                        let (x, y) = (&p.params, &first.params);
                        assert_eq!(
                            (x.window_ms, x.warmup_ms, x.iterations),
                            (y.window_ms, y.warmup_ms, y.iterations),
                            "{name}"
                        );
                        if axis == SweepAxis::Workers {
                            assert_eq!(p.cpus, first.cpus, "{name}");
                        }
                    }
                }
            }
        }
    }

    fn full_max_tasks(full: &[Part], q: &Part) -> usize {
        full.iter()
            .filter(|f| f.scenario == q.scenario && f.machine == q.machine)
            .map(|f| f.params.tasks)
            .max()
            .unwrap_or(0)
    }
}
