//! tlblab's saved results as one self-contained HTML page, as Markdown or as plain text.
//!
//! A [`Report`] takes the JSON files tlblab writes, whatever their kind, recognised by their
//! `schema` field:
//!
//! | schema | written by | section |
//! |---|---|---|
//! | `tlblab.sim.study/1` | `tlblab sim study NAME --json` | setup, a table and plots per part, the policies |
//! | `tlblab.sim.study-all/1` | `tlblab sim study all --json` | one such section per study |
//! | `tlblab.bench/1` | `tlblab bench -o FILE` | environment, per scenario: runs, bars with CIs, comparisons, counters |
//! | `tlblab.bench.compare/1` | `tlblab compare A B --format json` | B against A per configuration: table, change plot, counters, environment differences |
//! | `tlblab.trace.report/1` | `tlblab trace report --format json` | reasons × CPUs, pages per flush, rate over time, processes |
//! | `tlblab.sim.replay/1` | `tlblab sim replay --json` | cost per policy, recorded against replayed events |
//! | `tlblab.sim.replay-sweep/1` | `tlblab sim replay --ceiling … --json` | cost against the ceiling |
//! | `tlblab.sim.check/1` | `tlblab sim check --json` | safety verdicts: schedules, accesses judged, allowed in-window stale uses, violations, witnesses |
//! | `tlblab.sweep.summary/1` | `tlblab sweep SPEC -o DIR` (`DIR/summary.json`, or `DIR` itself) | per grid and measure: mean ± 95% CI, ratio and verdict; lines against a numeric axis, heatmaps over two axes |
//!
//! A sweep's directory is read with [`Report::add_sweep_dir`] (or [`Report::add_file`] of the
//! directory or its `summary.json`): the summary, and from `results.jsonl` the axes each grid
//! keeps fixed and the jobs that did not finish.
//!
//! Two or more `tlblab.bench/1` sessions are also compared, each later one against the first,
//! as `tlblab compare` does (tlblab-bench's `compare_results` with its default settings and the
//! report's [`Report::noise_threshold`]), and drawn as a `tlblab.bench.compare/1` input is;
//! sessions of other scenarios or parameters get a note saying why they were not compared.
//!
//! A report opens with the machine and moment its results come from (kernel, CPU, hypervisor,
//! date, load: from the environment record) and a summary: a verdict line per study part, the
//! safety matrix (declared deferrals' stale uses counted), and simulated against measured on
//! this machine with the configurations outside ±25% flagged. `tlblab study`'s step log comes
//! last, as an appendix.
//!
//! The HTML page has inline CSS and inline SVG plots only: no script, no web font, no image,
//! no URL, so it can be attached to a mail or a bug and opened anywhere; wide tables scroll on
//! screen and keep every column in print. The Markdown and the plain text have the same
//! headings, text and tables, with a one-line summary for each plot, and keep to a width (80
//! columns unless told): a table that does not fit has its text columns wrapped, or becomes one
//! block of `column: value` lines per row. The same inputs always give the same bytes: nothing
//! depends on the clock, the host or the order of a hash map.
//!
//! ```
//! use tlblab_report::Report;
//!
//! let mut report = Report::new("madvise-busy on 6.18");
//! let text = std::fs::read_to_string(concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/tests/fixtures/bench-madvise-busy.json"
//! ))?;
//! report.add_json("bench.json", &text)?;
//! let html = report.render_html();
//! assert!(html.contains("<svg") && !html.contains("<script"));
//! let text = report.render_text(80);
//! assert!(text.contains("configuration") && text.lines().all(|l| l.chars().count() <= 80));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod doc;
mod error;
mod fmt;
mod html;
mod markdown;
mod model;
pub mod plot;
mod sections;
mod text;
mod wrap;

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use error::ReportError;
use model::replay::{Replay, Sweep};
use model::study::{Study, StudyAll};
use model::sweep_dir::{Setup, SweepDir, SweepSummary};
use sections::Ctx;

/// The width of Markdown and text reports unless told otherwise: mail-ready.
pub const DEFAULT_WIDTH: usize = 80;

/// `tlblab sim study NAME --json`.
pub const STUDY_SCHEMA: &str = "tlblab.sim.study/1";
/// `tlblab sim study all --json`.
pub const STUDY_ALL_SCHEMA: &str = "tlblab.sim.study-all/1";
/// `tlblab sim replay --json`.
pub const REPLAY_SCHEMA: &str = "tlblab.sim.replay/1";
/// `tlblab sim replay --ceiling … --json`.
pub const SWEEP_SCHEMA: &str = "tlblab.sim.replay-sweep/1";

/// `tlblab study` (its `results.json`).
pub const STUDY_RESULTS_SCHEMA: &str = "tlblab.study/1";
/// `tlblab sim check --json`.
pub const CHECK_SCHEMA: &str = "tlblab.sim.check/1";
/// `tlblab sweep`'s `summary.json`.
pub const SWEEP_SUMMARY_SCHEMA: &str = "tlblab.sweep.summary/1";

/// Every schema a report renders.
pub const SCHEMAS: [&str; 10] = [
    STUDY_RESULTS_SCHEMA,
    STUDY_SCHEMA,
    STUDY_ALL_SCHEMA,
    tlblab_bench::SCHEMA,
    tlblab_bench::COMPARE_SCHEMA,
    tlblab_flushtrace::summary::SCHEMA,
    REPLAY_SCHEMA,
    SWEEP_SCHEMA,
    CHECK_SCHEMA,
    SWEEP_SUMMARY_SCHEMA,
];

/// One input, read.
#[derive(Debug, Clone)]
enum Input {
    Study(Box<Study>),
    StudyAll(Box<StudyAll>),
    Bench(Box<tlblab_bench::BenchResults>),
    Compare(Box<tlblab_bench::ResultsComparison>),
    Steps(Vec<sections::lab::Step>),
    Checks(Vec<sections::check::Check>),
    Host(Box<sections::lab::HostComparison>),
    Trace(Box<tlblab_flushtrace::Summary>),
    Replay(Box<Replay>),
    Sweep(Box<Sweep>),
    SweepDir(Box<SweepDir>),
}

/// What kind of result an input was, as [`Report::inputs`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputKind {
    /// One simulator study.
    Study,
    /// Every study (`sim study all`).
    StudyAll,
    /// A live benchmark session.
    Bench,
    /// Two benchmark sessions compared (`tlblab compare --format json`).
    Compare,
    /// Safety checks (`tlblab sim check --json`).
    Check,
    /// A trace summary.
    Trace,
    /// A replay per policy.
    Replay,
    /// A ceiling sweep of a replay.
    Sweep,
    /// A sweep's directory (`tlblab sweep`), or its `summary.json`.
    SweepDir,
    /// `tlblab study`'s results: its parts, what ran, and measured beside simulated.
    StudyResults,
}

/// A report being put together: a title, optional paragraphs under it, and the inputs in the
/// order they were added (each becomes one section, or one per study for `study all`).
#[derive(Debug, Clone)]
pub struct Report {
    title: String,
    description: Vec<String>,
    inputs: Vec<(String, Input)>,
    noise_threshold: f64,
    /// The environment record and date of `tlblab study`'s results (the header's source).
    header: Option<(Option<Value>, Option<String>)>,
}

impl Report {
    /// An empty report with this title.
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            description: Vec::new(),
            inputs: Vec::new(),
            noise_threshold: 0.01,
            header: None,
        }
    }

    /// Adds a paragraph under the title (what was tested, on which machine, a date: the report
    /// itself adds no timestamp).
    pub fn describe(&mut self, paragraph: impl Into<String>) -> &mut Report {
        self.description.push(paragraph.into());
        self
    }

    /// The noise band of the bench comparisons the report computes (within a session, and of
    /// later sessions against the first): a change within ± this fraction is never significant
    /// (default 0.01, as `tlblab bench --noise`). A saved comparison keeps the band it was
    /// made with.
    pub fn noise_threshold(&mut self, fraction: f64) -> &mut Report {
        self.noise_threshold = fraction;
        self
    }

    /// Reads a result file (its path, as given, names it in the report and in errors).
    pub fn add_file(&mut self, path: impl AsRef<Path>) -> Result<InputKind, ReportError> {
        let path = path.as_ref();
        if path.is_dir() {
            return self.add_sweep_dir(path);
        }
        let name = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|source| ReportError::Read { name: name.clone(), source })?;
        let text = String::from_utf8(bytes).map_err(|e| ReportError::NotText {
            name: name.clone(),
            offset: e.utf8_error().valid_up_to(),
        })?;
        // A sweep's summary beside its results: the whole directory.
        if let Some(dir) = sweep_dir_of(path) {
            if serde_json::from_str::<Value>(&text).is_ok_and(|v| {
                v.get("schema").and_then(Value::as_str) == Some(SWEEP_SUMMARY_SCHEMA)
            }) {
                return self.add_sweep_dir(&dir);
            }
        }
        self.add_json(&name, &text)
    }

    /// Reads a sweep's directory (`tlblab sweep SPEC -o DIR`): its `summary.json`, and from
    /// `results.jsonl` (when there) the axes each grid keeps fixed and the jobs that did not
    /// finish; `spec.toml`'s description and `environment.json` head the section.
    pub fn add_sweep_dir(&mut self, dir: impl AsRef<Path>) -> Result<InputKind, ReportError> {
        let dir = dir.as_ref();
        let name = dir.display().to_string();
        let read = |file: &str| -> Result<Option<String>, ReportError> {
            let path = dir.join(file);
            match std::fs::read(&path) {
                Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| ReportError::NotText {
                    name: path.display().to_string(),
                    offset: e.utf8_error().valid_up_to(),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(source) => Err(ReportError::Read { name: path.display().to_string(), source }),
            }
        };
        let Some(text) = read("summary.json")? else {
            let what = if dir.join("journal.jsonl").exists() {
                "no summary.json: the sweep has not finished (`tlblab sweep SPEC -o DIR --resume` finishes it)"
            } else {
                "a directory without summary.json: not a sweep's results (give a result file, or the directory `tlblab sweep -o DIR` wrote)"
            };
            return Err(ReportError::SweepDir { name, what: what.into() });
        };
        let summary_name = dir.join("summary.json").display().to_string();
        let value: Value = serde_json::from_str(&text).map_err(|e| ReportError::Json {
            name: summary_name.clone(),
            line: e.line(),
            column: e.column(),
            message: tlblab_types::plain::serde_message(&strip_position(&e.to_string())),
        })?;
        let schema = schema_of(&summary_name, &value)?;
        if schema != SWEEP_SUMMARY_SCHEMA {
            return Err(ReportError::UnknownSchema { name: summary_name, schema });
        }
        let summary: SweepSummary = from_text(&summary_name, &schema, &text)?;
        let setup = match read("results.jsonl")? {
            Some(results) => {
                let results_name = dir.join("results.jsonl").display().to_string();
                let mut setup = Setup::default();
                for (i, line) in results.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                    let row: serde_json::Map<String, Value> =
                        serde_json::from_str(line).map_err(|e| ReportError::Json {
                            name: results_name.clone(),
                            line: i + 1,
                            column: e.column(),
                            message: tlblab_types::plain::serde_message(&strip_position(
                                &e.to_string(),
                            )),
                        })?;
                    setup.add(&row);
                }
                Some(setup)
            }
            None => None,
        };
        let description = read("spec.toml")?
            .and_then(|spec| spec.parse::<toml::Table>().ok())
            .and_then(|spec| spec.get("description")?.as_str().map(str::to_string));
        let environment =
            read("environment.json")?.and_then(|e| serde_json::from_str::<Value>(&e).ok());
        let input = SweepDir { summary, setup, description, environment };
        self.push(&name, &schema, Input::SweepDir(Box::new(input)))
    }

    /// Adds a result from its JSON text; `name` stands for it in the report and in errors.
    pub fn add_json(&mut self, name: &str, text: &str) -> Result<InputKind, ReportError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ReportError::Json {
            name: name.into(),
            line: e.line(),
            column: e.column(),
            message: tlblab_types::plain::serde_message(&strip_position(&e.to_string())),
        })?;
        let schema = schema_of(name, &value)?;
        if schema == STUDY_RESULTS_SCHEMA {
            return self.add_study_results(name, value);
        }
        // Read again from the text, so that a field that does not fit has a line number.
        let input = match schema.as_str() {
            STUDY_SCHEMA => Input::Study(Box::new(from_text(name, &schema, text)?)),
            STUDY_ALL_SCHEMA => Input::StudyAll(Box::new(from_text(name, &schema, text)?)),
            s if s == tlblab_bench::SCHEMA => {
                Input::Bench(Box::new(from_text(name, &schema, text)?))
            }
            s if s == tlblab_bench::COMPARE_SCHEMA => {
                Input::Compare(Box::new(from_text(name, &schema, text)?))
            }
            s if s == tlblab_flushtrace::summary::SCHEMA => {
                Input::Trace(Box::new(from_text(name, &schema, text)?))
            }
            REPLAY_SCHEMA => Input::Replay(Box::new(from_text(name, &schema, text)?)),
            SWEEP_SCHEMA => Input::Sweep(Box::new(from_text(name, &schema, text)?)),
            CHECK_SCHEMA => Input::Checks(vec![from_text(name, &schema, text)?]),
            SWEEP_SUMMARY_SCHEMA => Input::SweepDir(Box::new(SweepDir {
                summary: from_text(name, &schema, text)?,
                setup: None,
                description: None,
                environment: None,
            })),
            _ => return Err(ReportError::UnknownSchema { name: name.into(), schema }),
        };
        self.push(name, &schema, input)
    }

    /// Adds a result already parsed (e.g. `serde_json::to_value` of a study just run).
    pub fn add_value(&mut self, name: &str, value: Value) -> Result<InputKind, ReportError> {
        let schema = schema_of(name, &value)?;
        if schema == STUDY_RESULTS_SCHEMA {
            return self.add_study_results(name, value);
        }
        let input = match schema.as_str() {
            STUDY_SCHEMA => Input::Study(Box::new(from_value(name, &schema, value)?)),
            STUDY_ALL_SCHEMA => Input::StudyAll(Box::new(from_value(name, &schema, value)?)),
            s if s == tlblab_bench::SCHEMA => {
                Input::Bench(Box::new(from_value(name, &schema, value)?))
            }
            s if s == tlblab_bench::COMPARE_SCHEMA => {
                Input::Compare(Box::new(from_value(name, &schema, value)?))
            }
            s if s == tlblab_flushtrace::summary::SCHEMA => {
                Input::Trace(Box::new(from_value(name, &schema, value)?))
            }
            REPLAY_SCHEMA => Input::Replay(Box::new(from_value(name, &schema, value)?)),
            SWEEP_SCHEMA => Input::Sweep(Box::new(from_value(name, &schema, value)?)),
            CHECK_SCHEMA => Input::Checks(vec![from_value(name, &schema, value)?]),
            SWEEP_SUMMARY_SCHEMA => Input::SweepDir(Box::new(SweepDir {
                summary: from_value(name, &schema, value)?,
                setup: None,
                description: None,
                environment: None,
            })),
            _ => return Err(ReportError::UnknownSchema { name: name.into(), schema }),
        };
        self.push(name, &schema, input)
    }

    /// `tlblab study`'s results: what ran, then each part that ran (a part that did not is
    /// `{"skipped": why}` or `{"failed": why}`, named in the steps), and the measured
    /// configurations beside their simulation on the host preset.
    fn add_study_results(&mut self, name: &str, v: Value) -> Result<InputKind, ReportError> {
        let schema = STUDY_RESULTS_SCHEMA;
        if self.header.is_none() {
            // The record taken when the study started, else the live benchmarks' own.
            let env = [&v["environment"], &v["bench"]["environment"]]
                .into_iter()
                .find(|e| e.is_object())
                .cloned();
            self.header = Some((env, v["date"].as_str().map(str::to_string)));
        }
        let steps: Vec<sections::lab::Step> =
            from_value(name, schema, v["steps"].clone()).unwrap_or_default();
        self.inputs.push((name.to_string(), Input::Steps(steps)));
        for (key, what) in [
            ("sim_studies", "simulated studies"),
            ("bench", "live benchmarks"),
            ("trace_report", "trace"),
            ("replay", "replay of the trace"),
        ] {
            if v[key]["schema"].is_string() {
                self.add_value(&format!("{name}: {what}"), v[key].clone())?;
            }
        }
        // The safety checks: one table for all of them (a check that failed is left out; the
        // steps say why).
        let checks: Vec<sections::check::Check> = v["safety"]["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["result"]["schema"] == CHECK_SCHEMA)
            .map(|r| from_value(name, CHECK_SCHEMA, r["result"].clone()))
            .collect::<Result<_, _>>()?;
        if !checks.is_empty() {
            self.inputs.push((format!("{name}: safety checks"), Input::Checks(checks)));
        }
        if v["bench"]["schema"].is_string() && v["host_simulations"]["runs"].is_array() {
            let bench: tlblab_bench::BenchResults = from_value(name, schema, v["bench"].clone())?;
            let sims = v["host_simulations"]["runs"].as_array().cloned().unwrap_or_default();
            let mut rows = host_rows(&bench, &sims);
            // The predicted set: its bench files in order, their simulations after one another.
            let predicted_sims =
                v["host_simulations"]["predicted_runs"].as_array().cloned().unwrap_or_default();
            let mut offset = 0;
            for b in v["predicted_bench"].as_array().into_iter().flatten() {
                if !b["schema"].is_string() {
                    continue; // skipped or failed: the steps say why
                }
                let b: tlblab_bench::BenchResults = from_value(name, schema, b.clone())?;
                let sims = predicted_sims.get(offset..).unwrap_or_default();
                offset += b.configs.len();
                rows.extend(host_rows(&b, sims));
            }
            let shapes = match v["host_simulations"]["shapes"].as_array() {
                Some(_) => from_value(name, schema, v["host_simulations"]["shapes"].clone())?,
                None => Vec::new(),
            };
            // The program's file name (hackbench), else each run's name.
            let program = v["peers"]["program"].as_str().and_then(|p| p.rsplit('/').next());
            let peers = v["peers"]["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    let numbers = |key: &str| -> Vec<f64> {
                        p[key].as_array().into_iter().flatten().filter_map(Value::as_f64).collect()
                    };
                    let name = p["name"].as_str().unwrap_or("?").to_string();
                    let params = p["params"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| {
                            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                            (k.clone(), v)
                        })
                        .collect();
                    sections::lab::Row {
                        scenario: program.map_or_else(|| name.clone(), str::to_string),
                        name,
                        params,
                        class: sections::lab::Class::Unclassified("a peer program".into()),
                        unit: p["unit"].as_str().unwrap_or("").to_string(),
                        measured: numbers("measured"),
                        simulated: numbers("simulated"),
                        note: p["note"].as_str().map(str::to_string),
                        drift: drift(&p["drift"]),
                    }
                })
                .collect();
            let policy = sims
                .iter()
                .find_map(|s| s["result"]["policies"][0]["policy"]["name"].as_str())
                .unwrap_or("linux-6.18")
                .to_string();
            let calibrations = match v["host_simulations"]["calibrations"].as_array() {
                Some(_) => from_value(name, schema, v["host_simulations"]["calibrations"].clone())?,
                None => Vec::new(),
            };
            let host = sections::lab::HostComparison {
                preset: v["host_simulations"]["preset"].as_str().map(str::to_string),
                provenance: v["host_simulations"]["provenance"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.as_str().map(str::to_string))
                    .collect(),
                policy,
                rows,
                shapes,
                peers,
                seed: bench.method.seed,
                calibrations,
            };
            self.inputs.push((name.to_string(), Input::Host(Box::new(host))));
        }
        Ok(InputKind::StudyResults)
    }

    fn push(&mut self, name: &str, schema: &str, input: Input) -> Result<InputKind, ReportError> {
        let inconsistent = |what: String| ReportError::Inconsistent {
            name: name.into(),
            schema: schema.into(),
            what,
        };
        let kind = match &input {
            Input::Study(s) => {
                s.check().map_err(inconsistent)?;
                InputKind::Study
            }
            Input::StudyAll(a) => {
                for s in &a.studies {
                    s.check().map_err(inconsistent)?;
                }
                InputKind::StudyAll
            }
            Input::Bench(_) => InputKind::Bench,
            Input::Compare(cmp) => {
                let noise = cmp.noise_threshold;
                if !(noise.is_finite() && (0.0..1.0).contains(&noise)) {
                    return Err(inconsistent(format!(
                        "noise_threshold {noise} is not a fraction in [0, 1)"
                    )));
                }
                InputKind::Compare
            }
            Input::Trace(_) => InputKind::Trace,
            Input::Replay(_) => InputKind::Replay,
            Input::Sweep(_) => InputKind::Sweep,
            Input::SweepDir(d) => {
                let s = &d.summary;
                if !(s.noise.is_finite() && (0.0..1.0).contains(&s.noise)) {
                    return Err(inconsistent(format!(
                        "noise {} is not a fraction in [0, 1)",
                        s.noise
                    )));
                }
                if let Some(p) = s.points.iter().find(|p| p.measures.is_empty()) {
                    return Err(inconsistent(format!(
                        "a point of grid {:?} has no measure",
                        p.grid
                    )));
                }
                InputKind::SweepDir
            }
            Input::Steps(_) | Input::Host(_) => InputKind::StudyResults,
            Input::Checks(_) => InputKind::Check,
        };
        self.inputs.push((name.to_string(), input));
        Ok(kind)
    }

    /// The inputs added so far: their names and kinds, in order.
    pub fn inputs(&self) -> Vec<(&str, InputKind)> {
        self.inputs
            .iter()
            .map(|(name, input)| {
                let kind = match input {
                    Input::Study(_) => InputKind::Study,
                    Input::StudyAll(_) => InputKind::StudyAll,
                    Input::Bench(_) => InputKind::Bench,
                    Input::Compare(_) => InputKind::Compare,
                    Input::Trace(_) => InputKind::Trace,
                    Input::Replay(_) => InputKind::Replay,
                    Input::Sweep(_) => InputKind::Sweep,
                    Input::SweepDir(_) => InputKind::SweepDir,
                    Input::Steps(_) | Input::Host(_) => InputKind::StudyResults,
                    Input::Checks(_) => InputKind::Check,
                };
                (name.as_str(), kind)
            })
            .collect()
    }

    fn document(&self, plots: bool) -> doc::Document {
        self.build(plots, false)
    }

    /// The document; `summary_only` stops after the header and the summary.
    fn build(&self, plots: bool, summary_only: bool) -> doc::Document {
        let ctx = Ctx { plots, noise_threshold: self.noise_threshold };
        let mut d = doc::Document::new(&self.title, &self.description);
        // The terminal's summary leaves out where the report came from (it was just made).
        if !self.inputs.is_empty() && !summary_only {
            // Each file once (the parts of `tlblab study`'s results are named `FILE: part`).
            let mut names: Vec<&str> = Vec::new();
            for (n, _) in &self.inputs {
                let file = n.split(": ").next().unwrap_or(n);
                if !names.contains(&file) {
                    names.push(file);
                }
            }
            d.meta = format!(
                "Made by tlblab-report {} from {}.",
                env!("CARGO_PKG_VERSION"),
                names.join(", ")
            );
        }
        // The header: the study's record, else the first live session's environment.
        let header = self.header.clone().or_else(|| {
            self.inputs.iter().find_map(|(_, input)| match input {
                Input::Bench(r) => Some((serde_json::to_value(&r.environment).ok(), None)),
                Input::SweepDir(d) => d.environment.clone().map(|e| (Some(e), None)),
                _ => None,
            })
        });
        if let Some((env, date)) = &header {
            d.header = sections::summary::header(env.as_ref(), date.as_deref());
        }
        // The conclusions first.
        let mut inputs = sections::summary::Inputs {
            studies: Vec::new(),
            checks: Vec::new(),
            hosts: Vec::new(),
        };
        for (_, input) in &self.inputs {
            match input {
                Input::Study(s) => inputs.studies.push(s),
                Input::StudyAll(a) => inputs.studies.extend(a.studies.iter()),
                Input::Checks(c) => inputs.checks.extend(c.iter()),
                Input::Host(h) => inputs.hosts.push(h),
                _ => {}
            }
        }
        if !inputs.is_empty() {
            sections::summary::summary(&mut d, &inputs);
        }
        if summary_only {
            return d;
        }
        // The first session, which every later one is compared with.
        let mut first_bench: Option<(&str, &tlblab_bench::BenchResults)> = None;
        for (name, input) in &self.inputs {
            match input {
                Input::Study(s) => sections::study::study(&mut d, &ctx, name, s),
                Input::StudyAll(a) => {
                    for s in &a.studies {
                        sections::study::study(&mut d, &ctx, name, s);
                    }
                    if !a.not_run.is_empty() {
                        d.push(doc::Block::Warning(vec![doc::t(format!(
                            "{}: studies not run (no scenario of theirs exists in this build of the kernel model):",
                            name
                        ))]));
                        d.push(doc::Block::List(
                            a.not_run
                                .iter()
                                .map(|n| vec![doc::b(&n.study), doc::t(format!(": {}", n.reason))])
                                .collect(),
                        ));
                    }
                }
                Input::Bench(r) => {
                    sections::bench::bench(&mut d, &ctx, name, r);
                    match first_bench {
                        None => first_bench = Some((name, r)),
                        Some(first) => compare_sessions(&mut d, &ctx, first, (name, r)),
                    }
                }
                Input::Compare(cmp) => sections::compare::comparison(
                    &mut d,
                    &ctx,
                    sections::compare::Origin::File(name),
                    cmp,
                ),
                Input::Trace(s) => sections::trace::trace(&mut d, &ctx, name, s),
                Input::Replay(r) => sections::replay::replay(&mut d, &ctx, name, r),
                Input::Sweep(s) => sections::replay::sweep(&mut d, &ctx, name, s),
                Input::SweepDir(s) => sections::sweep_dir::sweep_dir(&mut d, &ctx, name, s),
                // The step log is an appendix, after every result.
                Input::Steps(_) => {}
                Input::Checks(c) => sections::check::checks(&mut d, name, c),
                Input::Host(h) => sections::lab::host(&mut d, &ctx, h),
            }
        }
        for (name, input) in &self.inputs {
            if let Input::Steps(s) = input {
                sections::lab::steps(&mut d, name, s);
            }
        }
        d
    }

    /// The report as one HTML page with inline CSS and SVG.
    pub fn render_html(&self) -> String {
        html::render(&self.document(true))
    }

    /// The report as Markdown at most [`DEFAULT_WIDTH`] columns wide: the same tables, one line
    /// per plot.
    pub fn render_markdown(&self) -> String {
        self.render_markdown_width(DEFAULT_WIDTH)
    }

    /// The report as Markdown for mail: paragraphs and lists wrapped to `width` columns, tables
    /// as aligned pipe tables when they fit, else one block of `column: value` lines per row.
    pub fn render_markdown_width(&self, width: usize) -> String {
        markdown::render(&self.document(false), width)
    }

    /// The report as plain text, `width` columns wide: no markup, headings underlined, tables
    /// aligned when they fit, else one block of `column: value` lines per row.
    pub fn render_text(&self, width: usize) -> String {
        text::render(&self.document(false), width)
    }

    /// The header and the summary alone, as plain text (what `tlblab study` prints).
    pub fn render_summary_text(&self, width: usize) -> String {
        text::render(&self.build(false, true), width)
    }

    /// The section and part headings (levels 2 and 3) in order: the table of contents.
    pub fn outline(&self) -> Vec<(u8, String)> {
        self.document(false).outline().into_iter().map(|(l, t, _)| (l, t.to_string())).collect()
    }
}

/// A later session against the first, as `tlblab compare` compares them (its default settings,
/// the report's noise band); a pair it refuses gets a note with its reason instead.
fn compare_sessions(
    d: &mut doc::Document,
    ctx: &Ctx,
    (a_name, a): (&str, &tlblab_bench::BenchResults),
    (b_name, b): (&str, &tlblab_bench::BenchResults),
) {
    let settings = tlblab_bench::CompareSettings {
        noise_threshold: ctx.noise_threshold,
        ..tlblab_bench::CompareSettings::default()
    };
    match tlblab_bench::compare_results((a_name, a), (b_name, b), &settings) {
        Ok(cmp) => sections::compare::comparison(d, ctx, sections::compare::Origin::Sessions, &cmp),
        Err(e) => d.push(doc::Block::Warning(vec![
            doc::t("Not compared with the first session ("),
            doc::c(a_name),
            doc::t(format!("): {e}")),
        ])),
    }
}

/// The sweep directory `path` names: the directory itself, or the one holding it when it is a
/// `summary.json` beside a `results.jsonl`; `None` for anything else.
pub fn sweep_dir_of(path: &Path) -> Option<std::path::PathBuf> {
    if path.is_dir() {
        return Some(path.to_path_buf());
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    (path.file_name()? == "summary.json" && parent.join("results.jsonl").is_file())
        .then(|| parent.to_path_buf())
}

/// serde_json's message without its own ` at line L column C` (the error says it).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn schema_of(name: &str, value: &Value) -> Result<String, ReportError> {
    value
        .get("schema")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ReportError::NoSchema { name: name.into() })
}

fn malformed(name: &str, schema: &str, path: String, e: &serde_json::Error) -> ReportError {
    ReportError::Malformed {
        name: name.into(),
        schema: schema.into(),
        path: if path.is_empty() { ".".into() } else { path },
        message: tlblab_types::plain::serde_message(&strip_position(&e.to_string())),
        line: e.line(),
        column: e.column(),
    }
}

fn from_text<T: DeserializeOwned>(name: &str, schema: &str, text: &str) -> Result<T, ReportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| malformed(name, schema, e.path().to_string(), e.inner()))
}

fn from_value<T: DeserializeOwned>(
    name: &str,
    schema: &str,
    value: Value,
) -> Result<T, ReportError> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| malformed(name, schema, e.path().to_string(), e.inner()))
}

/// The rows of measured configurations beside their simulations (`sims[i]` is `configs[i]`'s).
fn host_rows(bench: &tlblab_bench::BenchResults, sims: &[Value]) -> Vec<sections::lab::Row> {
    bench
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let sim = sims.get(i).cloned().unwrap_or(Value::Null);
            let simulated: Vec<f64> = sim["result"]["policies"][0]["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect();
            let note = sim["skipped"]
                .as_str()
                .or(sim["result"]["failed"].as_str())
                .or(sim["result"]["skipped"].as_str())
                .map(str::to_string);
            sections::lab::Row {
                name: c.config.key(),
                scenario: c.config.scenario.clone(),
                params: c.config.params.clone(),
                class: sections::lab::Class::from_json(&sim["calibration"]),
                unit: c.config.unit.clone(),
                measured: c.values(),
                simulated,
                note,
                drift: drift(&sim["drift"]),
            }
        })
        .collect()
}

/// A row's drift, the first seed on the preset measured before the live part over the same on
/// the one after (`tlblab study`'s `drift`); absent, null or not positive: `None`.
fn drift(v: &Value) -> Option<f64> {
    let (before, after) = (v["before"].as_f64()?, v["after"].as_f64()?);
    (before > 0.0 && after > 0.0).then(|| before / after)
}
