//! The sweep spec: a TOML file of `[[sweep]]` tables, each a grid of axes (docs/sweep.md).
//!
//! ```toml
//! name = "ceiling"
//! seeds = 3                       # seeds per point (or a `seed` axis)
//! baseline = { ceiling = 33 }     # ratios against the point with this axis value
//!
//! [[sweep]]
//! machine = "skylake-server"
//! cpus = [4, 16, 64]
//! scenario = "storm"
//! policy = "linux-6.18"
//! ceiling = [1, 33, 512]
//! pages = [1, 8, 64]
//! zip = [["cpus", "pages"]]       # cpus and pages move together: 3 × 3 points, not 3 × 3 × 3
//! ```
//!
//! Every axis takes one value or a list; the grid is the Cartesian product of its axes, except
//! that the axes of one `zip` group move together (their lists must be equally long).

use crate::error::SweepError;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// What a sweep's jobs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Each job runs the scenario once (one seed), as `tlblab sim run` does per seed.
    Run,
    /// Each job runs the safety checker over `schedules` perturbed schedules, as
    /// `tlblab sim check` does.
    Check,
}

/// An axis of a grid: what a `[[sweep]]` key may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Axis {
    /// A machine preset: a built-in name, `host`, or a preset file.
    Machine,
    /// Simulated CPUs.
    Cpus,
    /// The scenario.
    Scenario,
    /// The policy: a built-in name or a policy file.
    Policy,
    /// `tlb_single_page_flush_ceiling` set on the policy.
    Ceiling,
    /// The seed (instead of the spec's `seeds`).
    Seed,
    /// `check`: perturbed schedules per job.
    Schedules,
    /// `check`: the longest IPI delay, cycles.
    MaxIpiDelay,
    /// `check`: mean cycles between disturbances per CPU (0: none).
    DisturbEvery,
    /// A scenario parameter (`tlblab sim run --help` names them).
    Param(Param),
}

/// The scenario parameters (`tlblab_kernel::workloads::Params`), by their CLI names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Param {
    Iterations,
    Touch,
    Busy,
    Tasks,
    Mode,
    Op,
    Pages,
    CyclesPerPage,
    Jobs,
    WindowMs,
    BurstUs,
    WarmupMs,
}

/// Every axis with its key, in the order of a row's columns.
pub const AXES: &[(&str, Axis)] = &[
    ("machine", Axis::Machine),
    ("cpus", Axis::Cpus),
    ("scenario", Axis::Scenario),
    ("policy", Axis::Policy),
    ("ceiling", Axis::Ceiling),
    ("seed", Axis::Seed),
    ("schedules", Axis::Schedules),
    ("max_ipi_delay", Axis::MaxIpiDelay),
    ("disturb_every", Axis::DisturbEvery),
    ("iterations", Axis::Param(Param::Iterations)),
    ("touch", Axis::Param(Param::Touch)),
    ("busy", Axis::Param(Param::Busy)),
    ("tasks", Axis::Param(Param::Tasks)),
    ("mode", Axis::Param(Param::Mode)),
    ("op", Axis::Param(Param::Op)),
    ("pages", Axis::Param(Param::Pages)),
    ("cycles_per_page", Axis::Param(Param::CyclesPerPage)),
    ("jobs", Axis::Param(Param::Jobs)),
    ("window_ms", Axis::Param(Param::WindowMs)),
    ("burst_us", Axis::Param(Param::BurstUs)),
    ("warmup_ms", Axis::Param(Param::WarmupMs)),
];

/// The keys of a `[[sweep]]` table that are not axes.
const GRID_KEYS: &[&str] = &["label", "zip", "baseline", "measures"];

impl Axis {
    /// Its key in the spec and its column in the results.
    pub fn key(self) -> &'static str {
        AXES.iter().find(|(_, a)| *a == self).map_or("", |(k, _)| k)
    }

    fn of(key: &str) -> Option<Axis> {
        AXES.iter().find(|(k, _)| *k == key).map(|&(_, a)| a)
    }

    /// The values it accepts: text, or a whole number in its bound
    /// ([`tlblab_types::bounds`], the one table every entry point checks).
    fn domain(self) -> Domain {
        use tlblab_types::bounds as b;
        use Domain::*;
        match self {
            Axis::Machine | Axis::Scenario | Axis::Policy => Text(&[]),
            Axis::Param(Param::Mode) => Text(&["threads", "processes"]),
            Axis::Param(Param::Op) => Text(&["munmap", "mprotect"]),
            Axis::Cpus => Number(b::CPUS),
            Axis::Ceiling => Number(b::CEILING),
            Axis::Seed => Number(b::SEED),
            Axis::Schedules => Number(b::SCHEDULES),
            Axis::MaxIpiDelay => Number(b::MAX_IPI_DELAY),
            Axis::DisturbEvery => Number(b::DISTURB_EVERY),
            Axis::Param(p) => Number(match p {
                Param::Iterations => b::ITERATIONS,
                Param::Touch => b::TOUCH,
                Param::Busy => b::BUSY,
                Param::Tasks => b::TASKS,
                Param::Pages => b::PAGES,
                Param::CyclesPerPage => b::CYCLES_PER_PAGE,
                Param::Jobs => b::JOBS,
                Param::WindowMs => b::WINDOW_MS,
                Param::WarmupMs => b::WARMUP_MS,
                Param::BurstUs => b::BURST_US,
                Param::Mode | Param::Op => unreachable!("text parameters"),
            }),
        }
    }
}

enum Domain {
    /// Text; one of these when the list is not empty.
    Text(&'static [&'static str]),
    /// A whole number in its bound.
    Number(tlblab_types::bounds::Bound),
}

/// One value of an axis.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// A name, a path, a mode.
    Text(String),
    /// A whole number.
    Number(u64),
}

impl Value {
    /// The number (0 for text).
    pub fn number(&self) -> u64 {
        match self {
            Value::Number(n) => *n,
            Value::Text(_) => 0,
        }
    }

    /// The text (empty for a number).
    pub fn text(&self) -> &str {
        match self {
            Value::Text(t) => t,
            Value::Number(_) => "",
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Text(t) => f.write_str(t),
            Value::Number(n) => write!(f, "{n}"),
        }
    }
}

/// An axis's values, with where each came from in the file.
#[derive(Clone, Debug)]
pub struct AxisValues {
    /// The axis.
    pub axis: Axis,
    /// Its values, in the file's order.
    pub values: Vec<Value>,
    /// `line N, ...` of each value, for errors found later (an unknown policy, too few CPUs).
    pub at: Vec<String>,
}

/// One `[[sweep]]` table.
#[derive(Clone, Debug)]
pub struct Grid {
    /// Its label (default `sweep N`).
    pub label: String,
    /// Its axes, in [`AXES`] order.
    pub axes: Vec<AxisValues>,
    /// Groups of axes that move together.
    pub zip: Vec<Vec<Axis>>,
    /// Its baseline, if it has its own.
    pub baseline: Option<(Axis, Value)>,
    /// Its measures, if it has its own.
    pub measures: Option<Vec<String>>,
}

/// A parsed, checked spec (not yet realised into jobs: [`crate::Plan`] does that).
#[derive(Clone, Debug)]
pub struct Spec {
    /// Its name (default: the file's stem).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// `run` (default) or `check`.
    pub kind: Kind,
    /// Seeds per point when no grid has a `seed` axis.
    pub seeds: u64,
    /// The first of those seeds.
    pub first_seed: u64,
    /// The noise band, a fraction (`noise = 0.01`): a ratio whose interval reaches into it is
    /// never a change.
    pub noise: f64,
    /// The baseline of every ratio: an axis and its value (`baseline = "linux-6.18"` is short
    /// for `baseline = { policy = "linux-6.18" }`).
    pub baseline: Option<(Axis, Value)>,
    /// The measures summarised (keys of the results' `m.` columns); default: the scenario's
    /// metric for `run`, violations for `check`.
    pub measures: Vec<String>,
    /// The grids.
    pub grids: Vec<Grid>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    description: Option<String>,
    kind: Option<Spanned<String>>,
    seeds: Option<Spanned<i64>>,
    first_seed: Option<Spanned<i64>>,
    noise: Option<Spanned<f64>>,
    baseline: Option<Spanned<toml::Value>>,
    measures: Option<Spanned<Vec<String>>>,
    sweep: Option<Vec<BTreeMap<String, Spanned<toml::Value>>>>,
}

/// Most seeds per point a spec may ask for.
pub const MAX_SEEDS: u64 = 10_000;

impl Spec {
    /// Parses and checks `text`; `origin` (the file) names errors, `stem` is the default name.
    pub fn parse(text: &str, origin: &str, stem: &str) -> Result<Spec, SweepError> {
        let bad = |message: String| SweepError::Spec { origin: origin.to_string(), message };
        let at =
            |span: std::ops::Range<usize>| tlblab_types::plain::toml_location(text, span.start);
        let raw: RawSpec = toml::from_str(text)
            .map_err(|e| bad(tlblab_types::plain::toml_error(text, e.message(), e.span())))?;
        let kind = match raw.kind.as_ref().map(|k| k.get_ref().as_str()) {
            None | Some("run") => Kind::Run,
            Some("check") => Kind::Check,
            Some(other) => {
                let span = raw.kind.as_ref().map(Spanned::span).unwrap_or_default();
                return Err(bad(format!(
                    "{}: kind {other:?} is neither \"run\" nor \"check\"",
                    at(span)
                )));
            }
        };
        let seeds = match &raw.seeds {
            None => 3,
            Some(s) => match u64::try_from(*s.get_ref()) {
                Ok(n @ 1..=MAX_SEEDS) => n,
                _ => {
                    return Err(bad(format!(
                        "{}: `seeds = {}` is outside 1 to {MAX_SEEDS}",
                        at(s.span()),
                        s.get_ref()
                    )))
                }
            },
        };
        let first_seed = match &raw.first_seed {
            None => 1,
            Some(s) => u64::try_from(*s.get_ref()).ok().filter(|&n| n <= u64::MAX / 2).ok_or_else(
                || {
                    bad(format!(
                        "{}: `first_seed = {}` is negative or too large",
                        at(s.span()),
                        s.get_ref()
                    ))
                },
            )?,
        };
        let noise = match &raw.noise {
            None => tlblab_stats::DEFAULT_NOISE,
            Some(n) if (0.0..0.5).contains(n.get_ref()) => *n.get_ref(),
            Some(n) => {
                return Err(bad(format!(
                    "{}: `noise = {}` is not a fraction from 0 to 0.5 (0.01 is ±1%)",
                    at(n.span()),
                    n.get_ref()
                )))
            }
        };
        let baseline =
            raw.baseline.as_ref().map(|b| baseline_of(b, &at)).transpose().map_err(bad)?;
        let measures = raw.measures.as_ref().map(|m| m.get_ref().clone()).unwrap_or_else(|| {
            vec![match kind {
                Kind::Run => "scenario_metric".to_string(),
                Kind::Check => "violations".to_string(),
            }]
        });
        if let Some(m) = &raw.measures {
            check_measures(m.get_ref(), kind).map_err(|e| bad(format!("{}: {e}", at(m.span()))))?;
        }
        let tables = raw.sweep.unwrap_or_default();
        if tables.is_empty() {
            return Err(bad("no [[sweep]] table: a spec needs at least one grid of axes".into()));
        }
        let grids = tables
            .iter()
            .enumerate()
            .map(|(i, t)| grid_of(i, t, kind, &at))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        Ok(Spec {
            name: raw.name.unwrap_or_else(|| stem.to_string()),
            description: raw.description.unwrap_or_default(),
            kind,
            seeds,
            first_seed,
            noise,
            baseline,
            measures,
            grids,
        })
    }
}

fn check_measures(measures: &[String], kind: Kind) -> Result<(), String> {
    let known = crate::row::measure_keys(kind);
    if measures.is_empty() {
        // A summary of nothing, and results `tlblab report` cannot draw.
        return Err(format!(
            "measures is empty: name at least one (known for kind {}: {})",
            kind_name(kind),
            known.join(", ")
        ));
    }
    for m in measures {
        if !known.contains(&m.as_str()) {
            return Err(format!(
                "unknown measure {m:?}{} (known for kind {}: {})",
                tlblab_types::names::did_you_mean(m, known.iter().copied()),
                kind_name(kind),
                known.join(", ")
            ));
        }
    }
    Ok(())
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Run => "run",
        Kind::Check => "check",
    }
}

/// `baseline = "name"` (a policy) or `baseline = { axis = value }`.
fn baseline_of(
    b: &Spanned<toml::Value>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(Axis, Value), String> {
    let here = at(b.span());
    match b.get_ref() {
        toml::Value::String(s) => Ok((Axis::Policy, Value::Text(s.clone()))),
        toml::Value::Table(t) if t.len() == 1 => {
            let (key, value) = t.iter().next().expect("one entry");
            let axis = Axis::of(key)
                .filter(|a| *a != Axis::Seed)
                .ok_or_else(|| format!("{here}: baseline names {key:?}, which is not an axis"))?;
            let value = scalar(axis, value).map_err(|e| format!("{here}: baseline {key}: {e}"))?;
            Ok((axis, value))
        }
        _ => Err(format!(
            "{here}: baseline must be a policy name or one axis and its value, e.g. {{ ceiling = 33 }}"
        )),
    }
}

fn grid_of(
    index: usize,
    table: &BTreeMap<String, Spanned<toml::Value>>,
    kind: Kind,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<Grid, String> {
    let mut axes = Vec::new();
    let mut grid = Grid {
        label: format!("sweep {}", index + 1),
        axes: Vec::new(),
        zip: Vec::new(),
        baseline: None,
        measures: None,
    };
    for (key, value) in table {
        let here = at(value.span());
        match key.as_str() {
            "label" => {
                grid.label = value
                    .get_ref()
                    .as_str()
                    .ok_or_else(|| format!("{here}: label must be text"))?
                    .to_string();
            }
            "baseline" => grid.baseline = Some(baseline_of(value, at)?),
            "measures" => {
                let list: Vec<String> = value
                    .get_ref()
                    .as_array()
                    .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
                    .ok_or_else(|| format!("{here}: measures must be a list of names"))?;
                check_measures(&list, kind).map_err(|e| format!("{here}: {e}"))?;
                grid.measures = Some(list);
            }
            "zip" => {} // after the axes
            _ => {
                let axis = Axis::of(key).ok_or_else(|| {
                    let names = AXES.iter().map(|(k, _)| *k).chain(GRID_KEYS.iter().copied());
                    format!(
                        "{here}: unknown axis {key:?}{} (axes: {})",
                        tlblab_types::names::did_you_mean(key, names),
                        AXES.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
                    )
                })?;
                let check_only =
                    matches!(axis, Axis::Schedules | Axis::MaxIpiDelay | Axis::DisturbEvery);
                if check_only && kind != Kind::Check {
                    return Err(format!("{here}: {key} is an axis of `kind = \"check\"` sweeps"));
                }
                let values: Vec<Value> = match value.get_ref() {
                    toml::Value::Array(list) => list
                        .iter()
                        .map(|v| scalar(axis, v))
                        .collect::<Result<_, _>>()
                        .map_err(|e| format!("{here}: {e}"))?,
                    one => vec![scalar(axis, one).map_err(|e| format!("{here}: {e}"))?],
                };
                if values.is_empty() {
                    return Err(format!("{here}: {key} = [] leaves the grid empty"));
                }
                axes.push(AxisValues { axis, at: vec![here; values.len()], values });
            }
        }
    }
    for required in [Axis::Machine, Axis::Scenario, Axis::Policy] {
        if !axes.iter().any(|a| a.axis == required) {
            return Err(format!(
                "[[sweep]] number {} ({}) has no {} axis: every grid names at least one",
                index + 1,
                grid.label,
                required.key()
            ));
        }
    }
    axes.sort_by_key(|a| a.axis);
    if let Some(zip) = table.get("zip") {
        let here = at(zip.span());
        let groups = zip
            .get_ref()
            .as_array()
            .ok_or_else(|| format!("{here}: zip must be a list of lists of axes"))?;
        for group in groups {
            let names = group
                .as_array()
                .ok_or_else(|| format!("{here}: zip must be a list of lists of axes"))?;
            let mut members = Vec::new();
            for n in names {
                let name = n.as_str().unwrap_or_default();
                let axis = axes.iter().find(|a| a.axis.key() == name).ok_or_else(|| {
                    format!("{here}: zip names {n}, which is not an axis of this grid")
                })?;
                if grid.zip.iter().flatten().chain(&members).any(|&m| m == axis.axis) {
                    return Err(format!("{here}: zip names {name} twice"));
                }
                members.push(axis.axis);
            }
            let lengths: Vec<usize> = members
                .iter()
                .map(|m| axes.iter().find(|a| a.axis == *m).map_or(0, |a| a.values.len()))
                .collect();
            if lengths.windows(2).any(|w| w[0] != w[1]) {
                return Err(format!(
                    "{here}: the zipped axes {} have lists of different lengths ({})",
                    members.iter().map(|m| m.key()).collect::<Vec<_>>().join(", "),
                    lengths.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
            grid.zip.push(members);
        }
    }
    grid.axes = axes;
    Ok(grid)
}

/// One value of `axis` from TOML.
fn scalar(axis: Axis, v: &toml::Value) -> Result<Value, String> {
    let key = axis.key();
    match (axis.domain(), v) {
        (Domain::Text(allowed), toml::Value::String(s)) => {
            if !allowed.is_empty() && !allowed.contains(&s.as_str()) {
                return Err(format!("{key} {s:?} is not one of {}", allowed.join(", ")));
            }
            if s.is_empty() {
                return Err(format!("{key} is empty"));
            }
            Ok(Value::Text(s.clone()))
        }
        (Domain::Number(bound), toml::Value::Integer(n)) => match u64::try_from(*n) {
            Ok(n) if bound.contains(n) => Ok(Value::Number(n)),
            _ => Err(format!("{key} = {n} is outside {}", bound.range())),
        },
        (Domain::Text(_), other) => Err(format!("{key} must be text, found {}", other.type_str())),
        (Domain::Number(_), other) => {
            Err(format!("{key} must be a whole number, found {}", other.type_str()))
        }
    }
}
