//! A spec realised: every point of every grid as a [`Job`] with its machine and policy resolved,
//! checked before anything runs, and named by a content hash.

use crate::error::SweepError;
use crate::spec::{Axis, Grid, Kind, Param, Spec, Value};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tlblab_kernel::workloads::{self, Params, StormOp};
use tlblab_kernel::Policy;
use tlblab_sim::machine::MachineSpec;

/// Where a job sits: its grid and every axis's value (defaults filled in). A row of the results
/// starts with these columns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// The grid's label.
    pub grid: String,
    /// The machine preset as the spec names it.
    pub machine: String,
    /// Simulated CPUs.
    pub cpus: u64,
    /// The scenario.
    pub scenario: String,
    /// The policy as the spec names it.
    pub policy: String,
    /// The policy's `tlb_single_page_flush_ceiling` (the `ceiling` axis, or its own).
    pub ceiling: u64,
    /// The seed (`check`: the first schedule is `seed × schedules`).
    pub seed: u64,
    /// `check`: perturbed schedules in the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedules: Option<u64>,
    /// `check`: the longest IPI delay, cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ipi_delay: Option<u64>,
    /// `check`: mean cycles between disturbances per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturb_every: Option<u64>,
    /// Scenario parameters.
    pub iterations: u64,
    #[allow(missing_docs)]
    pub touch: u64,
    #[allow(missing_docs)]
    pub busy: u64,
    #[allow(missing_docs)]
    pub tasks: u64,
    /// `threads` or `processes`.
    pub mode: String,
    /// `munmap` or `mprotect`.
    pub op: String,
    #[allow(missing_docs)]
    pub pages: u64,
    #[allow(missing_docs)]
    pub cycles_per_page: u64,
    #[allow(missing_docs)]
    pub jobs: u64,
    #[allow(missing_docs)]
    pub window_ms: u64,
    #[allow(missing_docs)]
    pub burst_us: u64,
    #[allow(missing_docs)]
    pub warmup_ms: u64,
}

impl Point {
    /// The scenario parameters.
    pub fn params(&self) -> Params {
        Params {
            iterations: self.iterations,
            touch: self.touch,
            busy: self.busy as usize,
            tasks: self.tasks as usize,
            threads: self.mode == "threads",
            op: if self.op == "mprotect" { StormOp::Mprotect } else { StormOp::Munmap },
            pages: self.pages,
            cycles_per_page: self.cycles_per_page,
            jobs: self.jobs,
            window_ms: self.window_ms,
            burst_us: self.burst_us,
            warmup_ms: self.warmup_ms,
            // hackbench's own parameters are not sweep axes: its defaults.
            ..Params::default()
        }
    }

    /// The value of `axis` at this point.
    pub fn value(&self, axis: Axis) -> Value {
        let n = Value::Number;
        match axis {
            Axis::Machine => Value::Text(self.machine.clone()),
            Axis::Scenario => Value::Text(self.scenario.clone()),
            Axis::Policy => Value::Text(self.policy.clone()),
            Axis::Cpus => n(self.cpus),
            Axis::Ceiling => n(self.ceiling),
            Axis::Seed => n(self.seed),
            Axis::Schedules => n(self.schedules.unwrap_or(0)),
            Axis::MaxIpiDelay => n(self.max_ipi_delay.unwrap_or(0)),
            Axis::DisturbEvery => n(self.disturb_every.unwrap_or(0)),
            Axis::Param(p) => match p {
                Param::Iterations => n(self.iterations),
                Param::Touch => n(self.touch),
                Param::Busy => n(self.busy),
                Param::Tasks => n(self.tasks),
                Param::Mode => Value::Text(self.mode.clone()),
                Param::Op => Value::Text(self.op.clone()),
                Param::Pages => n(self.pages),
                Param::CyclesPerPage => n(self.cycles_per_page),
                Param::Jobs => n(self.jobs),
                Param::WindowMs => n(self.window_ms),
                Param::BurstUs => n(self.burst_us),
                Param::WarmupMs => n(self.warmup_ms),
            },
        }
    }

    fn set(&mut self, axis: Axis, v: &Value) {
        let (n, t) = (v.number(), v.text().to_string());
        match axis {
            Axis::Machine => self.machine = t,
            Axis::Scenario => self.scenario = t,
            Axis::Policy => self.policy = t,
            Axis::Cpus => self.cpus = n,
            Axis::Ceiling => self.ceiling = n,
            Axis::Seed => self.seed = n,
            Axis::Schedules => self.schedules = Some(n),
            Axis::MaxIpiDelay => self.max_ipi_delay = Some(n),
            Axis::DisturbEvery => self.disturb_every = Some(n),
            Axis::Param(p) => match p {
                Param::Iterations => self.iterations = n,
                Param::Touch => self.touch = n,
                Param::Busy => self.busy = n,
                Param::Tasks => self.tasks = n,
                Param::Mode => self.mode = t,
                Param::Op => self.op = t,
                Param::Pages => self.pages = n,
                Param::CyclesPerPage => self.cycles_per_page = n,
                Param::Jobs => self.jobs = n,
                Param::WindowMs => self.window_ms = n,
                Param::BurstUs => self.burst_us = n,
                Param::WarmupMs => self.warmup_ms = n,
            },
        }
    }
}

/// Defaults of `tlblab sim check`.
const DEFAULT_SCHEDULES: u64 = 100;
const DEFAULT_MAX_IPI_DELAY: u64 = 20_000;
const DEFAULT_DISTURB_EVERY: u64 = 200_000;

/// One job: a realised, validated configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Its place in the plan (results are written in this order).
    pub index: u64,
    /// SHA-256 of its configuration (hex): the version of tlblab, the kind, the point, the
    /// machine preset's whole content and the policy's every switch. Two jobs with the same
    /// hash give the same row.
    pub hash: String,
    /// What it does.
    pub kind: Kind,
    /// Where it sits.
    pub point: Point,
    /// The machine preset's TOML when it is not built in (a file, `host`), so that a worker on
    /// another machine runs the same machine.
    pub machine_toml: Option<String>,
    /// The policy, with the `ceiling` axis applied.
    pub policy: Policy,
}

impl Job {
    /// The machine preset.
    pub fn machine(&self) -> Result<MachineSpec, SweepError> {
        let spec = match &self.machine_toml {
            Some(text) => MachineSpec::from_toml(text, &self.point.machine),
            None => tlblab_sim::machine::builtin(&self.point.machine),
        };
        spec.map_err(|e| SweepError::job(self, &e))
    }
}

/// A spec and its jobs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The spec.
    pub spec: Spec,
    /// The spec's text, as read.
    pub text: String,
    /// Where it was read from.
    pub origin: String,
    jobs: Vec<Job>,
}

impl Plan {
    /// Reads, checks and realises the spec file at `path`; policy and machine files it names
    /// are found relative to it.
    pub fn load(path: &Path) -> Result<Plan, SweepError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|source| SweepError::Io { path: origin.clone(), source })?;
        let text = tlblab_types::plain::utf8_text(&bytes)
            .map_err(|message| SweepError::Spec { origin: origin.clone(), message })?;
        let stem = path.file_stem().map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Plan::realise(text, &origin, &stem, &base)
    }

    /// [`Plan::load`] of a spec's text; relative files are found from the current directory.
    pub fn from_toml(text: &str, origin: &str) -> Result<Plan, SweepError> {
        let stem = Path::new(origin)
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        Plan::realise(text, origin, &stem, Path::new(""))
    }

    fn realise(text: &str, origin: &str, stem: &str, base: &Path) -> Result<Plan, SweepError> {
        let spec = Spec::parse(text, origin, stem)?;
        let bad = |message: String| SweepError::Spec { origin: origin.to_string(), message };
        let mut jobs = Vec::new();
        let mut resolved = Resolver { base, machines: Vec::new(), policies: Vec::new() };
        for grid in &spec.grids {
            let baseline = grid.baseline.as_ref().or(spec.baseline.as_ref());
            if let Some((axis, value)) = baseline {
                if let Some(a) = grid.axes.iter().find(|a| a.axis == *axis) {
                    if !a.values.contains(value) {
                        return Err(bad(format!(
                            "{}: the baseline {} = {value} is not among the values of {} in {}",
                            a.at[0],
                            axis.key(),
                            axis.key(),
                            grid.label
                        )));
                    }
                }
            }
            for point in points(&spec, grid) {
                let (machine_toml, raw) = resolved.machine(&point, grid).map_err(&bad)?;
                let mut policy = resolved.policy(&point, grid).map_err(&bad)?;
                let mut point = point;
                if grid.axes.iter().any(|a| a.axis == Axis::Ceiling) {
                    policy.tlb_single_page_flush_ceiling = point.ceiling;
                } else {
                    point.ceiling = policy.tlb_single_page_flush_ceiling;
                }
                let hash = hash_of(spec.kind, &point, &raw, &policy);
                jobs.push(Job {
                    index: jobs.len() as u64,
                    hash,
                    kind: spec.kind,
                    point,
                    machine_toml,
                    policy,
                });
            }
        }
        if jobs.is_empty() {
            return Err(bad("the grids have no points".into()));
        }
        let mut seen = BTreeSet::new();
        if let Some(dup) = jobs.iter().find(|j| !seen.insert(&j.hash)) {
            return Err(bad(format!(
                "{} has the same point twice (machine {}, {} CPUs, {}, policy {}, seed {}): every job must be different",
                dup.point.grid, dup.point.machine, dup.point.cpus, dup.point.scenario, dup.point.policy, dup.point.seed
            )));
        }
        validate(&jobs).map_err(|(i, message)| {
            // Located at the CPUs of the point (the usual cause), or its scenario.
            let p = &jobs[i].point;
            let grid = spec.grids.iter().find(|g| g.label == p.grid);
            let at = grid.and_then(|g| {
                [Axis::Cpus, Axis::Scenario].iter().find_map(|&axis| {
                    let a = g.axes.iter().find(|a| a.axis == axis)?;
                    let i = a.values.iter().position(|v| *v == p.value(axis))?;
                    Some(a.at[i].clone())
                })
            });
            bad(match at {
                Some(at) => format!("{at}: {message}"),
                None => message,
            })
        })?;
        Ok(Plan { spec, text: text.to_string(), origin: origin.to_string(), jobs })
    }

    /// The jobs, in order.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The baseline of `grid`'s ratios.
    pub fn baseline(&self, grid: &str) -> Option<&(Axis, Value)> {
        let g = self.spec.grids.iter().find(|g| g.label == grid)?;
        g.baseline.as_ref().or(self.spec.baseline.as_ref())
    }

    /// The measures summarised for `grid`.
    pub fn measures(&self, grid: &str) -> &[String] {
        self.spec
            .grids
            .iter()
            .find(|g| g.label == grid)
            .and_then(|g| g.measures.as_deref())
            .unwrap_or(&self.spec.measures)
    }
}

/// Every point of `grid`, seed innermost, the other axes (and zip groups) in [`crate::spec::AXES`]
/// order, the first outermost.
fn points(spec: &Spec, grid: &Grid) -> Vec<Point> {
    let d = Params::default();
    let base = Point {
        grid: grid.label.clone(),
        machine: String::new(),
        cpus: 4,
        scenario: String::new(),
        policy: String::new(),
        ceiling: 0,
        seed: spec.first_seed,
        schedules: (spec.kind == Kind::Check).then_some(DEFAULT_SCHEDULES),
        max_ipi_delay: (spec.kind == Kind::Check).then_some(DEFAULT_MAX_IPI_DELAY),
        disturb_every: (spec.kind == Kind::Check).then_some(DEFAULT_DISTURB_EVERY),
        iterations: d.iterations,
        touch: d.touch,
        busy: d.busy as u64,
        tasks: d.tasks as u64,
        mode: if d.threads { "threads" } else { "processes" }.into(),
        op: match d.op {
            StormOp::Munmap => "munmap",
            StormOp::Mprotect => "mprotect",
        }
        .into(),
        pages: d.pages,
        cycles_per_page: d.cycles_per_page,
        jobs: d.jobs,
        window_ms: d.window_ms,
        burst_us: d.burst_us,
        warmup_ms: d.warmup_ms,
    };
    // Units: a zip group or a lone axis; each is a list of settings (axis, value) pairs.
    let mut units: Vec<Vec<Vec<(Axis, Value)>>> = Vec::new();
    let mut done = BTreeSet::new();
    for a in &grid.axes {
        if done.contains(&a.axis) {
            continue;
        }
        let group = grid.zip.iter().find(|g| g.contains(&a.axis)).cloned().unwrap_or(vec![a.axis]);
        let lists: Vec<_> =
            group.iter().filter_map(|m| grid.axes.iter().find(|x| x.axis == *m)).collect();
        let len = lists[0].values.len();
        units.push(
            (0..len)
                .map(|i| lists.iter().map(|l| (l.axis, l.values[i].clone())).collect())
                .collect(),
        );
        done.extend(group);
    }
    // The seed unit last, so that a point's seeds are neighbours.
    let seed_unit = units.iter().position(|u| u[0].iter().any(|(a, _)| *a == Axis::Seed));
    match seed_unit {
        Some(i) => {
            let u = units.remove(i);
            units.push(u);
        }
        None => units.push(
            (0..spec.seeds)
                .map(|s| vec![(Axis::Seed, Value::Number(spec.first_seed + s))])
                .collect(),
        ),
    }
    let mut out = vec![base];
    for unit in &units {
        out = out
            .iter()
            .flat_map(|p| {
                unit.iter().map(move |settings| {
                    let mut p = p.clone();
                    for (axis, value) in settings {
                        p.set(*axis, value);
                    }
                    p
                })
            })
            .collect();
    }
    out
}

/// Machines and policies loaded once each.
struct Resolver<'a> {
    base: &'a Path,
    machines: Vec<(String, Option<String>, String)>,
    policies: Vec<(String, Policy)>,
}

impl Resolver<'_> {
    fn path(&self, name: &str) -> PathBuf {
        let p = Path::new(name);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    fn located(grid: &Grid, axis: Axis, value: &str) -> String {
        grid.axes
            .iter()
            .find(|a| a.axis == axis)
            .and_then(|a| a.values.iter().position(|v| v.text() == value).map(|i| a.at[i].clone()))
            .unwrap_or_default()
    }

    /// The preset's TOML when it is not built in, and its content as JSON (for the hash).
    fn machine(&mut self, p: &Point, grid: &Grid) -> Result<(Option<String>, String), String> {
        if let Some((_, toml, raw)) = self.machines.iter().find(|(n, ..)| *n == p.machine) {
            return Ok((toml.clone(), raw.clone()));
        }
        let at = Self::located(grid, Axis::Machine, &p.machine);
        let err = |e: &(dyn std::error::Error + 'static)| {
            format!("{at}: machine {:?}: {}", p.machine, tlblab_types::plain::error_chain(e))
        };
        let (spec, toml) = if p.machine == "host" {
            let spec = tlblab_host::host_spec().map_err(|e| err(&e))?.spec;
            let text = toml::to_string(spec.raw()).map_err(|e| err(&e))?;
            (spec, Some(text))
        } else if p.machine.ends_with(".toml") || p.machine.contains('/') {
            let path = self.path(&p.machine);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("{at}: machine file {}: {}", path.display(), e))?;
            let spec = MachineSpec::from_toml(&text, &p.machine).map_err(|e| err(&e))?;
            (spec, Some(text))
        } else {
            (tlblab_sim::machine::builtin(&p.machine).map_err(|e| err(&e))?, None)
        };
        let raw = serde_json::to_string(spec.raw()).expect("a preset serializes");
        self.machines.push((p.machine.clone(), toml.clone(), raw.clone()));
        Ok((toml, raw))
    }

    fn policy(&mut self, p: &Point, grid: &Grid) -> Result<Policy, String> {
        if let Some((_, policy)) = self.policies.iter().find(|(n, _)| *n == p.policy) {
            return Ok(policy.clone());
        }
        let at = Self::located(grid, Axis::Policy, &p.policy);
        let file = p.policy.ends_with(".toml") || p.policy.contains('/');
        let policy =
            if file { Policy::from_file(&self.path(&p.policy)) } else { Policy::named(&p.policy) }
                .map_err(|e| format!("{at}: {}", tlblab_types::plain::error_chain(&e)))?;
        self.policies.push((p.policy.clone(), policy.clone()));
        Ok(policy)
    }
}

fn hash_of(kind: Kind, point: &Point, machine_raw: &str, policy: &Policy) -> String {
    let content = serde_json::json!({
        "tlblab_version": env!("CARGO_PKG_VERSION"),
        "kind": kind,
        "point": point,
        "machine": machine_raw,
        "policy": policy,
    });
    let digest = Sha256::digest(content.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Builds each distinct configuration once (machine, CPUs, scenario and parameters, policy)
/// with its scenario installed, so that a job that cannot run is refused before any runs.
fn validate(jobs: &[Job]) -> Result<(), (usize, String)> {
    // The first job of each configuration, in plan order (a set: linear in the jobs).
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&Job> = jobs
        .iter()
        .filter(|j| {
            let p = &j.point;
            let policy = serde_json::to_string(&j.policy).expect("a policy serializes");
            seen.insert((&p.machine, p.cpus, &p.scenario, p.params_key(), policy))
        })
        .collect();
    distinct.par_iter().try_for_each(|job| -> Result<(), (usize, String)> {
        let index = job.index as usize;
        let where_ = || {
            format!(
                "{}: machine {}, {} CPUs, scenario {}, policy {}",
                job.point.grid,
                job.point.machine,
                job.point.cpus,
                job.point.scenario,
                job.point.policy
            )
        };
        let plain = |e: &(dyn std::error::Error + 'static)| {
            format!("{}: {}", where_(), tlblab_types::plain::error_chain(e))
        };
        let check = || -> Result<(), String> {
            let info = workloads::scenario(&job.point.scenario).map_err(|e| plain(&e))?;
            if let Some((what, value)) = job.policy.out_of_range() {
                return Err(format!("{}: {what} = {value} is out of range", where_()));
            }
            let machine = job.machine().map_err(|e| plain(&e))?;
            let cpus = u16::try_from(job.point.cpus).unwrap_or(u16::MAX);
            tlblab_runs::scenario_kernel(
                &machine,
                &job.policy,
                (cpus, job.point.seed, tlblab_kernel::Mechanisms::all()),
                (info, &job.point.params()),
                |_| {},
            )
            .map(drop)
            .map_err(|e| plain(&e))
        };
        check().map_err(|m| (index, m))
    })
}

impl Point {
    /// The scenario parameters as a comparable tuple.
    fn params_key(&self) -> (u64, u64, u64, u64, &str, &str, [u64; 6]) {
        (
            self.iterations,
            self.touch,
            self.busy,
            self.tasks,
            &self.mode,
            &self.op,
            [
                self.pages,
                self.cycles_per_page,
                self.jobs,
                self.window_ms,
                self.burst_us,
                self.warmup_ms,
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
seeds = 2
[[sweep]]
machine = "skylake"
scenario = "storm"
policy = ["linux-6.18", "linux-4.14"]
cpus = [4, 6, 8]
pages = [1, 2, 3]
ceiling = [1, 33]
zip = [["cpus", "pages"]]
"#;

    /// Zipped axes move together, the others multiply, the seed is innermost and the order
    /// follows the axes' table (cpus before policy before ceiling).
    #[test]
    fn a_grid_is_the_product_of_its_axes_with_zipped_axes_together() {
        let plan = Plan::from_toml(GRID, "grid.toml").unwrap();
        let jobs = plan.jobs();
        assert_eq!(jobs.len(), 3 * 2 * 2 * 2, "3 zipped × 2 policies × 2 ceilings × 2 seeds");
        let p = |i: usize| &jobs[i].point;
        assert_eq!(
            (p(0).cpus, p(0).pages, p(0).policy.as_str(), p(0).ceiling, p(0).seed),
            (4, 1, "linux-6.18", 1, 1)
        );
        assert_eq!(p(1).seed, 2, "the seed is innermost");
        assert_eq!(p(2).ceiling, 33);
        assert_eq!(p(4).policy, "linux-4.14");
        assert_eq!((p(8).cpus, p(8).pages), (6, 2), "cpus and pages move together");
        assert!(jobs.iter().all(|j| j.policy.tlb_single_page_flush_ceiling == j.point.ceiling));
        assert!(jobs.iter().enumerate().all(|(i, j)| j.index == i as u64));
    }

    /// The hash names the configuration: the same spec gives the same hashes, any change to a
    /// job's configuration changes its hash, and a job's JSON round-trips.
    #[test]
    fn the_content_hash_follows_the_configuration_only() {
        let a = Plan::from_toml(GRID, "a.toml").unwrap();
        let b =
            Plan::from_toml(&GRID.replace("seeds = 2", "seeds = 2\nname = \"other\""), "b.toml")
                .unwrap();
        let hashes = |p: &Plan| p.jobs().iter().map(|j| j.hash.clone()).collect::<Vec<_>>();
        assert_eq!(hashes(&a), hashes(&b), "the spec's name is not part of a job");
        let c = Plan::from_toml(&GRID.replace("pages = [1, 2, 3]", "pages = [1, 2, 4]"), "c.toml")
            .unwrap();
        let (ha, hc) = (hashes(&a), hashes(&c));
        let changed = ha.iter().zip(&hc).filter(|(x, y)| x != y).count();
        assert_eq!(changed, 8, "only the 8 jobs at pages = 3 → 4 change");
        let job = &a.jobs()[5];
        let back = crate::job_from_json(&serde_json::to_string(job).unwrap()).unwrap();
        assert_eq!(&back, job);
    }

    /// Two zipped lists of different lengths, or a baseline that is not among the values, are
    /// refused with their line.
    #[test]
    fn inconsistent_grids_are_refused_with_their_line() {
        let e = Plan::from_toml(&GRID.replace("pages = [1, 2, 3]", "pages = [1, 2]"), "z.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 10, `[[sweep]] zip`") && e.contains("different lengths (3, 2)"),
            "{e}"
        );
        let e = Plan::from_toml(&format!("baseline = {{ ceiling = 64 }}\n{GRID}"), "b.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("ceiling = 64 is not among"), "{e}");
    }
}
