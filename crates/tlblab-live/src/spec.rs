//! Scenario names, parameters, defaults and validation.
//!
//! Names and parameter meanings are those of the simulator's scenarios
//! (`tlblab_kernel::workloads::SCENARIOS`), so that `sim` and `bench` results can sit side by side.
//! The simulator's `rt-latency` and `kbuild*` have no live counterpart here: interrupts cannot be
//! turned off from user space, and a kernel build is not a microbenchmark.

use crate::error::LiveError;
use serde::{Deserialize, Serialize};

/// `munmap-threads`, `tlb-flush2 --mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Threads of one process: one mm, so every flush must reach the other tasks' CPUs.
    Threads,
    /// Forked processes, one mm each (counters in a `MAP_SHARED` page).
    Processes,
}

/// `storm --op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StormOp {
    /// `mmap`, write and `munmap` `--pages` pages.
    Munmap,
    /// `mprotect(PROT_READ)`, `mprotect(PROT_READ|PROT_WRITE)`, write `--pages` pages.
    Mprotect,
}

/// A scenario's parameters, as given (unset ones take the scenario's defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveParams {
    /// `pingpong`: pages of never-written memory (the zero page) each side reads per round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub touch: Option<u64>,
    /// `madvise-busy`, `storm`: sibling threads spinning in user space on other CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<usize>,
    /// `munmap-threads`, `tlb-flush2`, `madvise-scale`, `pthread-mmap`: tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// `munmap-threads`, `tlb-flush2`: threads of one process, or processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Pages each task works on per operation (`munmap-threads`, `pthread-mmap`, `storm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u64>,
    /// `pthread-mmap`: rounds per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// `storm`: the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<StormOp>,
}

/// A scenario and its parameters: what `prepare` runs and what a result file records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The scenario's name, e.g. `madvise-busy`.
    pub name: String,
    /// Its parameters.
    #[serde(default)]
    pub params: LiveParams,
}

impl ScenarioSpec {
    /// A spec with every parameter at its default.
    pub fn new(name: &str) -> ScenarioSpec {
        ScenarioSpec { name: name.to_string(), params: LiveParams::default() }
    }

    /// The scenario this spec names.
    pub fn info(&self) -> Result<&'static LiveScenarioInfo, LiveError> {
        scenario(&self.name)
    }

    /// The spec with the defaults of every parameter the scenario takes filled in (what a result
    /// file should record, so that two results compare only when their settings are equal).
    pub fn resolved(&self) -> Result<ScenarioSpec, LiveError> {
        let info = self.info()?;
        Ok(ScenarioSpec { name: self.name.clone(), params: info.resolve(&self.params)? })
    }
}

/// What a scenario reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Microseconds per operation of the measured task (lower is better).
    MicrosPerOp,
    /// Operations per second summed over the tasks (higher is better).
    OpsPerSecond,
    /// Seconds for a fixed amount of work (lower is better).
    Seconds,
}

impl Unit {
    /// The unit as printed: `µs/op`, `ops/s`, `s`.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::MicrosPerOp => "µs/op",
            Unit::OpsPerSecond => "ops/s",
            Unit::Seconds => "s",
        }
    }

    /// Whether a smaller value is better.
    pub fn lower_is_better(self) -> bool {
        self != Unit::OpsPerSecond
    }
}

/// Which program a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    MadvMigrate,
    PingPong,
    MadviseBusy,
    MunmapThreads,
    TlbFlush2,
    MadviseScale,
    PthreadMmap,
    Storm,
}

/// A live scenario.
#[derive(Debug)]
pub struct LiveScenarioInfo {
    /// Its name (the simulator's).
    pub name: &'static str,
    /// What the real program does, in one sentence.
    pub description: &'static str,
    /// What one run reports.
    pub unit: Unit,
    /// Whether one run is a fixed amount of work set by the parameters (`pthread-mmap`): the
    /// run length is then ignored.
    pub fixed_work: bool,
    /// The options it takes, e.g. `["--busy"]`.
    pub params: &'static [&'static str],
    defaults: LiveParams,
    pub(crate) kind: Kind,
}

/// The largest `--tasks`: each task's region sits in its own 1 GiB window of a 1 TiB slot.
pub const MAX_TASKS: usize = 1024;
/// The largest `--pages` / `--touch`: a region (plus one anchor page) fits its 1 GiB window.
pub const MAX_PAGES: u64 = (1 << 18) - 1;

const fn defaults(busy: Option<usize>, tasks: Option<usize>, pages: Option<u64>) -> LiveParams {
    LiveParams { touch: None, busy, tasks, mode: None, pages, iterations: None, op: None }
}

static SCENARIOS: [LiveScenarioInfo; 8] = [
    LiveScenarioInfo {
        name: "madv-migrate",
        description: "one thread loops { write a page; madvise(MADV_DONTNEED) it; sched_setaffinity to the other of two CPUs } (S2)",
        unit: Unit::MicrosPerOp,
        fixed_work: false,
        params: &[],
        defaults: defaults(None, None, None),
        kind: Kind::MadvMigrate,
    },
    LiveScenarioInfo {
        name: "pingpong",
        description: "two forked processes pinned to one CPU pass a token through two eventfds, each reading --touch never-written (zero-page) pages per round; reports µs per round trip (S2)",
        unit: Unit::MicrosPerOp,
        fixed_work: false,
        params: &["--touch"],
        defaults: LiveParams { touch: Some(0), ..defaults(None, None, None) },
        kind: Kind::PingPong,
    },
    LiveScenarioInfo {
        name: "madvise-busy",
        description: "one thread loops { write a page; madvise(MADV_DONTNEED) it } while --busy sibling threads of the process spin in user space on other CPUs (S4)",
        unit: Unit::MicrosPerOp,
        fixed_work: false,
        params: &["--busy"],
        defaults: defaults(Some(3), None, None),
        kind: Kind::MadviseBusy,
    },
    LiveScenarioInfo {
        name: "munmap-threads",
        description: "--tasks tasks, one per CPU, loop { write --pages pages; madvise(MADV_DONTNEED) them all at once }, as threads of one process or as forked processes (--mode); reports ops/s summed over tasks (not will-it-scale's tlb_flush2: see tlb-flush2)",
        unit: Unit::OpsPerSecond,
        fixed_work: false,
        params: &["--tasks", "--mode", "--pages"],
        defaults: LiveParams { mode: Some(Mode::Threads), ..defaults(None, Some(4), Some(256)) },
        kind: Kind::MunmapThreads,
    },
    LiveScenarioInfo {
        name: "tlb-flush2",
        description: "will-it-scale tlb_flush2: --tasks tasks (threads of one process or forked processes, --mode), task i on CPU i mod N, each with 1 MiB of private anonymous memory: per page { write it; madvise(MADV_DONTNEED) it; read it back (0, the zero page) }, then munmap and map it again (a VMA of its own; a written page past a one-page hole above it keeps its page table, as will-it-scale's neighbours do); an op is a page; reports ops/s summed over tasks, as will-it-scale's per-second total (docs/workloads.md)",
        unit: Unit::OpsPerSecond,
        fixed_work: false,
        params: &["--tasks", "--mode"],
        defaults: LiveParams { mode: Some(Mode::Threads), ..defaults(None, Some(1), None) },
        kind: Kind::TlbFlush2,
    },
    LiveScenarioInfo {
        name: "madvise-scale",
        description: "--tasks forked worker processes spread over the CPUs loop { write a page; madvise(MADV_DONTNEED) it }; reports ops/s summed over tasks (S4; not stress-ng's madvise stressor, docs/workloads.md)",
        unit: Unit::OpsPerSecond,
        fixed_work: false,
        params: &["--tasks"],
        defaults: defaults(None, Some(4), None),
        kind: Kind::MadviseScale,
    },
    LiveScenarioInfo {
        name: "pthread-mmap",
        description: "--tasks threads spread over the CPUs each do --iterations rounds of { mmap --pages pages; write them; munmap }; reports the seconds until all are done (S2)",
        unit: Unit::Seconds,
        fixed_work: true,
        params: &["--tasks", "--pages", "--iterations"],
        // S2's 100 rounds, rather than the simulator's generic 2000: one run then takes
        // tenths of a second on a small VM, and the harness repeats runs.
        defaults: LiveParams { iterations: Some(100), ..defaults(None, Some(4), Some(256)) },
        kind: Kind::PthreadMmap,
    },
    LiveScenarioInfo {
        name: "storm",
        description: "one thread loops { mmap, write and munmap --pages pages } (--op munmap) or { mprotect them read-only, then read-write, and write them } (--op mprotect) while --busy sibling threads spin on other CPUs",
        unit: Unit::MicrosPerOp,
        fixed_work: false,
        params: &["--op", "--busy", "--pages"],
        defaults: LiveParams { op: Some(StormOp::Munmap), ..defaults(Some(3), None, Some(1)) },
        kind: Kind::Storm,
    },
];

/// Every live scenario.
pub fn scenarios() -> &'static [LiveScenarioInfo] {
    &SCENARIOS
}

/// Looks up a live scenario by name.
pub fn scenario(name: &str) -> Result<&'static LiveScenarioInfo, LiveError> {
    SCENARIOS.iter().find(|s| s.name == name).ok_or_else(|| LiveError::UnknownScenario {
        name: name.to_string(),
        known: SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
    })
}

impl LiveScenarioInfo {
    /// Whether a smaller value is better.
    pub fn lower_is_better(&self) -> bool {
        self.unit.lower_is_better()
    }

    /// The parameters it takes, at their defaults.
    pub fn defaults(&self) -> &LiveParams {
        &self.defaults
    }

    /// The fewest CPUs it runs on with these (resolved) parameters.
    pub fn min_cpus(&self, p: &LiveParams) -> usize {
        match self.kind {
            Kind::MadvMigrate => 2,
            Kind::MadviseBusy | Kind::Storm => p.busy.unwrap_or(0) + 1,
            Kind::MunmapThreads => p.tasks.unwrap_or(1),
            Kind::PingPong | Kind::TlbFlush2 | Kind::MadviseScale | Kind::PthreadMmap => 1,
        }
    }

    /// `p` with defaults filled in; refuses parameters the scenario does not take and values out
    /// of range.
    pub fn resolve(&self, p: &LiveParams) -> Result<LiveParams, LiveError> {
        let bad = |message: String| LiveError::BadParameter { scenario: self.name, message };
        let given = [
            ("--touch", p.touch.is_some()),
            ("--busy", p.busy.is_some()),
            ("--tasks", p.tasks.is_some()),
            ("--mode", p.mode.is_some()),
            ("--pages", p.pages.is_some()),
            ("--iterations", p.iterations.is_some()),
            ("--op", p.op.is_some()),
        ];
        if let Some((option, _)) = given.iter().find(|(o, set)| *set && !self.params.contains(o)) {
            let takes = if self.params.is_empty() { "none".into() } else { self.params.join(", ") };
            return Err(bad(format!("does not take {option} (it takes: {takes})")));
        }
        let d = &self.defaults;
        let r = LiveParams {
            touch: p.touch.or(d.touch),
            busy: p.busy.or(d.busy),
            tasks: p.tasks.or(d.tasks),
            mode: p.mode.or(d.mode),
            pages: p.pages.or(d.pages),
            iterations: p.iterations.or(d.iterations),
            op: p.op.or(d.op),
        };
        if let Some(pages) = r.pages.filter(|&n| n == 0 || n > MAX_PAGES) {
            return Err(bad(format!("--pages {pages} is outside 1..={MAX_PAGES}")));
        }
        if let Some(touch) = r.touch.filter(|&n| n > MAX_PAGES) {
            return Err(bad(format!("--touch {touch} is outside 0..={MAX_PAGES}")));
        }
        if let Some(tasks) = r.tasks.filter(|&n| n == 0 || n > MAX_TASKS) {
            return Err(bad(format!("--tasks {tasks} is outside 1..={MAX_TASKS}")));
        }
        if let Some(busy) = r.busy.filter(|&n| n >= MAX_TASKS) {
            return Err(bad(format!("--busy {busy} is outside 0..{MAX_TASKS}")));
        }
        if r.iterations == Some(0) {
            return Err(bad("--iterations must be at least 1".into()));
        }
        Ok(r)
    }

    /// Resolves `p` (see [`resolve`](Self::resolve)) and checks that a machine with
    /// `online_cpus` CPUs can run it, e.g. `madvise-busy --busy 2 needs 3 CPUs, this machine has
    /// 2 online`.
    pub fn validate(&self, p: &LiveParams, online_cpus: usize) -> Result<LiveParams, LiveError> {
        let r = self.resolve(p)?;
        let needed = self.min_cpus(&r);
        if needed > online_cpus {
            let settings = match self.kind {
                Kind::MadviseBusy | Kind::Storm => format!(" --busy {}", r.busy.unwrap_or(0)),
                Kind::MunmapThreads => format!(" --tasks {}", r.tasks.unwrap_or(0)),
                _ => String::new(),
            };
            return Err(LiveError::TooFewCpus {
                scenario: self.name,
                settings,
                needed,
                online: online_cpus,
            });
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_simulators() {
        // The simulator's scenario names (tlblab-kernel workloads::SCENARIOS) that have a live
        // program: all of the live ones.
        let sim = [
            "madv-migrate",
            "pingpong",
            "madvise-busy",
            "munmap-threads",
            "tlb-flush2",
            "madvise-scale",
            "pthread-mmap",
            "storm",
        ];
        for name in sim {
            assert!(scenario(name).is_ok(), "{name}");
        }
        assert_eq!(scenarios().len(), sim.len());
    }

    #[test]
    fn busy_needs_one_cpu_more() {
        let info = scenario("madvise-busy").unwrap();
        let p = LiveParams { busy: Some(2), ..Default::default() };
        let err = info.validate(&p, 2).unwrap_err().to_string();
        assert_eq!(err, "madvise-busy --busy 2 needs 3 CPUs, this machine has 2 online");
        assert_eq!(info.validate(&p, 3).unwrap().busy, Some(2));
        // The default (S4's three siblings) needs four CPUs.
        assert_eq!(info.min_cpus(&info.resolve(&LiveParams::default()).unwrap()), 4);
    }

    #[test]
    fn refuses_parameters_a_scenario_does_not_take() {
        let p = LiveParams { tasks: Some(2), ..Default::default() };
        let err = scenario("madvise-busy").unwrap().resolve(&p).unwrap_err().to_string();
        assert!(err.contains("does not take --tasks (it takes: --busy)"), "{err}");
        let err = scenario("madv-migrate").unwrap().resolve(&p).unwrap_err().to_string();
        assert!(err.contains("(it takes: none)"), "{err}");
    }

    #[test]
    fn refuses_out_of_range_values() {
        let info = scenario("munmap-threads").unwrap();
        for p in [
            LiveParams { pages: Some(0), ..Default::default() },
            LiveParams { pages: Some(MAX_PAGES + 1), ..Default::default() },
            LiveParams { tasks: Some(0), ..Default::default() },
            LiveParams { tasks: Some(MAX_TASKS + 1), ..Default::default() },
        ] {
            assert!(matches!(info.resolve(&p), Err(LiveError::BadParameter { .. })), "{p:?}");
        }
        let p = LiveParams { iterations: Some(0), ..Default::default() };
        assert!(scenario("pthread-mmap").unwrap().resolve(&p).is_err());
    }

    #[test]
    fn resolved_spec_round_trips_through_json() {
        let spec = ScenarioSpec {
            name: "munmap-threads".into(),
            params: LiveParams {
                mode: Some(Mode::Processes),
                tasks: Some(2),
                ..Default::default()
            },
        };
        let r = spec.resolved().unwrap();
        assert_eq!(r.params.pages, Some(256));
        assert_eq!(r.params.busy, None);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"name":"munmap-threads","params":{"tasks":2,"mode":"processes","pages":256}}"#
        );
        assert_eq!(serde_json::from_str::<ScenarioSpec>(&json).unwrap(), r);
        assert!(
            serde_json::from_str::<ScenarioSpec>(r#"{"name":"x","params":{"cpus":1}}"#).is_err()
        );
    }
}
