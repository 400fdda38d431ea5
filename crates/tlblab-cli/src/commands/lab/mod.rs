//! `tlblab study`: the main job. The ten studies in simulation (S6–S10 quick); on Linux with root, the
//! microbenchmark scenarios measured on this machine, one of them traced and replayed, and the
//! same scenarios simulated on a preset of this host; then `results.json` with everything.
//!
//! Each step runs this executable's own subcommands (`sim study`, `bench`, `trace record`,
//! `trace report`, `sim replay`, `sim run`) as child processes writing JSON into the output
//! directory, so every step is exactly what a user would get from that command, and a step
//! that fails or cannot run here is reported without stopping the others.

mod calibration;
mod peers;
mod predicted;
mod steps;

use crate::cli::{LabArgs, StudyPart};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use steps::{Outcome, Runner};
use tlblab_types::atomic::write_file;

/// Identifies the JSON schema of `results.json`.
pub const SCHEMA: &str = "tlblab.study/1";

/// Settings of the live part, short or default.
struct LiveSettings {
    runs: u32,
    run_ms: u32,
    warmup_ms: u32,
    overhead: bool,
    trace_ms: u32,
    pthread_iterations: u32,
}

impl LiveSettings {
    fn new(quick: bool) -> LiveSettings {
        if quick {
            LiveSettings {
                runs: 3,
                run_ms: 100,
                warmup_ms: 50,
                overhead: false,
                trace_ms: 100,
                pthread_iterations: 20,
            }
        } else {
            LiveSettings {
                runs: 5,
                run_ms: 300,
                warmup_ms: 100,
                overhead: true,
                trace_ms: 300,
                pthread_iterations: 100,
            }
        }
    }
}

/// The directory used without `--out`: the main job's own, replaced by each run.
const DEFAULT_OUT: &str = "tlblab-study";

/// Runs every step and writes `results.json` in `args.out`.
pub fn run(args: &LabArgs) -> Result<ExitCode> {
    // A bad --only is refused before anything runs or is written.
    for name in args.only.iter().flat_map(|o| o.split(',')).map(str::trim) {
        if !name.is_empty() {
            tlblab_studies::lookup(name)?;
        }
    }
    if args.only.as_ref().is_some_and(|o| o.split(',').all(|n| n.trim().is_empty())) {
        return Err(crate::commands::BadInput(format!(
            "--only names no study (known: {})",
            tlblab_studies::known_names()
        ))
        .into());
    }
    // So is a bad --machine (`host` is built later, into DIR).
    if args.machine != crate::commands::HOST_PRESET {
        crate::commands::load_preset(&args.machine)?;
    }
    let dir = match &args.out {
        Some(dir) => {
            crate::commands::refuse_existing(&dir.join("results.json"), args.force)?;
            dir.clone()
        }
        None => PathBuf::from(DEFAULT_OUT),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = &dir;
    // The moment and the machine, for the report's header (the live part records its own too).
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let environment = tlblab_env::Environment::capture();
    let started = std::time::Instant::now();
    let mut runner = Runner::new(args.quiet)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());

    // 1. The studies in simulation: without --only, the five debates (S1–S5) at the size asked
    // for and the studies beyond them (S6–S10) at their quick settings (their full runs are
    // `tlblab sim study`'s); with --only, the studies named, at the size asked for.
    let seeds = args.seeds.map(|n| n.to_string());
    crate::commands::noise_fraction(args.noise)?;
    let noise = args.noise.to_string();
    let names = |beyond: bool| -> String {
        tlblab_studies::STUDIES
            .iter()
            .filter(|s| s.beyond == beyond)
            .map(|s| s.short)
            .collect::<Vec<_>>()
            .join(",")
    };
    let steps: Vec<(String, String, bool, &str)> = match &args.only {
        Some(only) => vec![(
            "simulated studies".into(),
            only.split(',').map(str::trim).filter(|n| !n.is_empty()).collect::<Vec<_>>().join(","),
            args.quick,
            "sim-studies.json",
        )],
        None => vec![
            ("simulated studies S1–S5".into(), names(false), args.quick, "sim-studies.json"),
            (
                "simulated studies beyond the debates (quick)".into(),
                names(true),
                true,
                "sim-studies-beyond.json",
            ),
        ],
    };
    let mut studies: Option<Outcome> = None;
    for (label, list, quick, file) in &steps {
        if list.is_empty() {
            continue;
        }
        // A trailing comma makes even one study a list, which `sim study` reports as `all`.
        let list = format!("{list},");
        let mut study_args = vec!["sim", "study", list.as_str(), "--json"];
        if *quick {
            study_args.push("--quick");
        }
        if let Some(n) = &seeds {
            study_args.extend(["--seeds", n.as_str()]);
        }
        study_args.extend(["--noise", noise.as_str()]);
        let outcome = runner.json_step(label, &study_args, &dir.join(file));
        studies = Some(match (studies, outcome) {
            (None, outcome) => outcome,
            // One report of every study: the second list's studies after the first's.
            (Some(Outcome::Done(mut all)), Outcome::Done(more)) => {
                for key in ["studies", "not_run"] {
                    if let (Some(a), Some(b)) = (all[key].as_array_mut(), more[key].as_array()) {
                        a.extend(b.iter().cloned());
                    }
                }
                Outcome::Done(all)
            }
            // A failed first list stays the result; a failed second one is in the steps.
            (Some(first), _) => first,
        });
    }
    let studies = studies.expect("at least one list of studies");

    let skipped = |part: StudyPart| args.skip.contains(&part).then(|| part.flag());

    // 1b. The safety checker on the studies' policies and the known-bad variants.
    let safety = match skipped(StudyPart::Checks) {
        Some(why) => runner.skip_part("safety checks", &why),
        None => {
            runner.begin_phase("safety checks", CHECK_POLICIES.len() * CHECK_SCENARIOS.len());
            let safety = safety_checks(&mut runner, args.quick);
            runner.end_phase();
            safety
        }
    };

    // 2–4. The live part.
    let live = LiveSettings::new(args.quick);
    let why_not = (args.no_live.then(|| "--no-live".to_string()))
        .or_else(|| skipped(StudyPart::Live))
        .or_else(|| live_unavailable(cpus));
    let on_host = args.machine == crate::commands::HOST_PRESET;
    // The host preset is built twice, from kernel paths timed just before the live part and
    // just after it: a guest's costs drift with its host's load, and the two bracket what the
    // live runs met (docs/host-preset.md, "Drift").
    let before = match (&why_not, on_host) {
        (None, true) => runner.in_process("host preset, before the live part", || {
            host_preset(dir, "host-before.toml", started, false)
        }),
        _ => None,
    };
    let (bench, trace, replay) = match &why_not {
        Some(why) => {
            let skipped = Outcome::Skipped(why.clone());
            runner.begin_phase("live part", 5);
            for step in [
                "live benchmarks",
                "live benchmarks, the predicted set",
                "trace",
                "trace report",
                "replay of the trace",
            ] {
                runner.note_skipped(step, why);
            }
            runner.end_phase();
            (skipped.clone(), skipped.clone(), skipped)
        }
        None => {
            let bench = runner.bench(
                "live benchmarks",
                &bench_args(&live, cpus, &dir.join("bench.json"), &noise),
                &dir.join("bench.json"),
            );
            let trace_file = dir.join("madvise-busy.flushtrace");
            let trace = runner.trace(&live, cpus, &trace_file, &dir.join("trace-report.json"));
            let replay = match &trace {
                Outcome::Done(_) => runner.json_step(
                    "replay of the trace",
                    &[
                        "sim",
                        "replay",
                        &trace_file.to_string_lossy(),
                        "--policies",
                        "linux-6.18,pti-invpcid,pti-deferred",
                        "--json",
                    ],
                    &dir.join("replay.json"),
                ),
                other => other.clone(),
            };
            (bench, trace, replay)
        }
    };

    // 4b. The predicted set: the same scenarios at parameters the host preset's calibration
    // never ran, and the shapes between neighbours (docs/study-output.md, "Calibrated and
    // predicted").
    let predicted_bench = match &why_not {
        Some(_) => Vec::new(), // noted with the rest of the live part
        None => predicted::bench(&mut runner, &live, args.quick, dir, &noise),
    };

    // 4c. The peers as real programs (rt-tests' hackbench), measured here, inside the bracket
    // of the two calibrations; their simulated twins come with the others (6).
    let peers_measured = if let Some(why) = &why_not {
        Err(json!({ "skipped": why })) // noted with the rest of the live part
    } else if let Some(why) = skipped(StudyPart::Peers) {
        Err(runner.skip_part("peers", &why))
    } else {
        peers::measure(&mut runner, args.quick)
    };

    // 5. The same configurations simulated on a preset of this machine, each classified as
    // calibrated or predicted by scaling each measured loop in turn.
    let preset = match (&why_not, on_host) {
        // Nothing was measured to set beside it.
        (Some(_), _) => None,
        (None, true) => runner.in_process("host preset, after the live part", || {
            host_preset(dir, "host.toml", started, true)
        }),
        (None, false) => Some(HostFiles::built_in(&args.machine)),
    };
    let peer_machine = preset.as_ref().map(|host| host.path.clone());
    let host_sims = match (&bench, preset) {
        (Outcome::Done(bench), Some(host)) => {
            let before = before.as_ref();
            // Each configuration runs once on the host preset, once per scaled preset and once
            // on the preset measured before the live part.
            let runs = 1 + host.scaled.len() + usize::from(before.is_some());
            let configs = bench["configs"].as_array().map_or(0, Vec::len);
            runner.begin_phase("simulation on the host preset", configs * runs);
            let sims = simulate_on_host(&mut runner, bench, &host, before, cpus, args.quick);
            runner.end_phase();
            let predicted: Vec<&Value> = predicted_bench.iter().filter_map(Outcome::done).collect();
            let configs: usize =
                predicted.iter().map(|b| b["configs"].as_array().map_or(0, Vec::len)).sum();
            runner.begin_phase("simulation on the host preset, the predicted set", configs * runs);
            let predicted_sims: Vec<Value> = predicted
                .iter()
                .flat_map(|b| simulate_on_host(&mut runner, b, &host, before, cpus, args.quick))
                .collect();
            runner.end_phase();
            json!({
                "preset": host.path,
                "provenance": host.provenance,
                "scaled_presets": host.scaled.iter()
                    .map(|p| json!({ "loop": p.name, "preset": p.path }))
                    .collect::<Vec<_>>(),
                "calibrations": before.into_iter().chain([&host])
                    .filter(|h| !h.loops.is_empty())
                    .map(HostFiles::calibration_json)
                    .collect::<Vec<_>>(),
                "runs": sims,
                "predicted_runs": predicted_sims,
                "shapes": predicted::shapes(),
            })
        }
        (Outcome::Done(_), None) => runner.skip_part(
            "simulation on the host preset",
            "the host preset could not be built (its step says why)",
        ),
        (other, _) => other.value(),
    };

    // 6. The peers' simulated twins, on the host preset and (their drift) the one before.
    let peers = match peers_measured {
        Ok(measured) => {
            let before = before.as_ref().map(|b| b.path.as_path());
            peers::simulate(
                &mut runner,
                measured,
                args.quick,
                cpus,
                peer_machine.as_deref(),
                before,
            )
        }
        Err(value) => value,
    };

    let results = json!({
        "schema": SCHEMA,
        "tlblab_version": env!("CARGO_PKG_VERSION"),
        "quick": args.quick,
        "cpus": cpus,
        "date": date,
        "environment": environment,
        "steps": runner.steps(),
        "sim_studies": studies.value(),
        "safety": safety,
        "bench": bench.value(),
        "predicted_bench": predicted_bench.iter().map(Outcome::value).collect::<Vec<_>>(),
        "trace_report": trace.value(),
        "replay": replay.value(),
        "host_simulations": host_sims,
        "peers": peers,
    });
    let path = dir.join("results.json");
    write_json(&path, &results)?;
    let html = dir.join("report.html");
    let mut report = tlblab_report::Report::new("tlblab study");
    report.describe(format!(
        "tlblab {} on a machine with {cpus} CPUs{}. Results: results.json beside this page.",
        env!("CARGO_PKG_VERSION"),
        if args.quick {
            ", quick settings (--quick): the figures are not the studies'"
        } else {
            ""
        }
    ));
    report.add_value("results.json", results.clone())?;
    write_file(&html, report.render_html().as_bytes())
        .with_context(|| format!("writing {}", html.display()))?;
    runner.finish();
    // The conclusions on the terminal; the details are in the files.
    let summary = report.render_summary_text(tlblab_report::DEFAULT_WIDTH);
    crate::render::stdout(&format!(
        "\n{summary}\nresults: {}\nreport: {}\n",
        path.display(),
        html.display()
    ))?;
    Ok(if runner.any_failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The preset the configurations are simulated on, and its variants with one measured loop
/// scaled.
struct HostFiles {
    path: PathBuf,
    provenance: Vec<String>,
    /// Empty for a built-in preset: nothing of it was measured here.
    scaled: Vec<calibration::ScaledPreset>,
    /// Each measured loop's median, ns per operation (empty for a built-in preset).
    loops: BTreeMap<String, f64>,
    /// When its kernel paths were measured: seconds after the main job began.
    measured_at: f64,
}

impl HostFiles {
    /// A built-in preset (`--machine NAME`): nothing measured.
    fn built_in(name: &str) -> HostFiles {
        HostFiles {
            path: PathBuf::from(name),
            provenance: Vec::new(),
            scaled: Vec::new(),
            loops: Default::default(),
            measured_at: 0.0,
        }
    }

    /// `results.json`'s record of one calibration: the preset, when, and each loop's median.
    fn calibration_json(&self) -> Value {
        json!({ "preset": self.path, "measured_at_s": self.measured_at, "loops_ns": self.loops })
    }
}

/// Writes DIR/NAME, this machine's preset, and with `scaled` DIR/calibration/host-LOOP.toml,
/// the same with one measured loop scaled (the facts are gathered once: every preset comes from
/// the same measurements). The kernel paths are measured afresh: a cache from hours earlier may
/// hold another host load (docs/host-preset.md).
fn host_preset(
    dir: &Path,
    name: &str,
    started: std::time::Instant,
    scaled: bool,
) -> Result<HostFiles> {
    let facts = tlblab_host::HostFacts::gather_afresh();
    let measured_at = started.elapsed().as_secs_f64();
    let host = tlblab_host::build(&facts)?;
    let path = dir.join(name);
    write_file(&path, host.toml.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let provenance = host.provenance_text().lines().map(str::to_string).collect();
    let loops = calibration::loop_medians(&facts);
    let scaled = if scaled { calibration::scaled_presets(&facts, &host, dir)? } else { Vec::new() };
    Ok(HostFiles { path, provenance, scaled, loops, measured_at })
}

/// `tlblab sim run` of each measured configuration on the host preset, with the CPUs of this
/// machine and the configuration's parameters; then its first seed again on each preset with
/// one measured loop scaled, which classifies it (calibrated or predicted), and on the preset
/// measured `before` the live part, which says how far the host's drift moves it; one entry
/// per configuration.
fn simulate_on_host(
    runner: &mut Runner,
    bench: &Value,
    host: &HostFiles,
    before: Option<&HostFiles>,
    cpus: usize,
    quick: bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for c in bench["configs"].as_array().into_iter().flatten() {
        let cfg = &c["config"];
        let scenario = cfg["scenario"].as_str().unwrap_or("");
        let params = cfg["params"].clone();
        // Every live scenario has a simulated one of the same name; a skip here would mean a
        // live scenario added without its model.
        if tlblab_kernel::workloads::scenario(scenario).is_err() {
            out.push(json!({ "scenario": scenario, "params": params,
                "skipped": "the simulator has no model of this scenario" }));
            continue;
        }
        let options: Vec<String> = params
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(k, v)| [format!("--{k}"), v.as_str().unwrap_or_default().to_string()])
            .collect();
        let sim_args = |preset: &Path, seeds: u32| {
            sim_run_args(scenario, preset, cpus, seeds, options.iter().cloned())
        };
        let name = format!("simulated on host: {}", config_name(cfg));
        let a = sim_args(&host.path, if quick { 2 } else { 3 });
        let args: Vec<&str> = a.iter().map(String::as_str).collect();
        let outcome = runner.json_value_step(&name, &args);
        let base = outcome.done().and_then(first_simulated);
        // The first seed again on another preset, folded into the step above.
        let first_seed_on = |runner: &mut Runner, preset: &Path, what: &str| {
            let a = sim_args(preset, 1);
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            runner
                .json_value_folded(&format!("{name}, {what}"), &args)
                .as_ref()
                .and_then(first_simulated)
        };
        let mut scaled = Vec::new();
        if base.is_some() {
            for p in &host.scaled {
                let value = first_seed_on(runner, &p.path, &format!("{} +10%", p.name));
                scaled.push((p.name, value));
            }
        }
        // The same first seed on the preset measured before the live part.
        let drift = match (base, before) {
            (Some(after), Some(b)) => first_seed_on(runner, &b.path, "before the live part")
                .map(|before| json!({ "before": before, "after": after })),
            _ => None,
        };
        let class = if host.scaled.is_empty() {
            json!({ "class": "unclassified", "why": "a built-in preset: nothing was measured here" })
        } else {
            calibration::classify(base, &scaled)
        };
        out.push(json!({
            "scenario": scenario,
            "params": params,
            "key": config_name(cfg),
            "result": outcome.value(),
            "calibration": class,
            "drift": drift,
        }));
    }
    out
}

/// `tlblab sim run` of `scenario` on `preset` with `cpus` CPUs and `seeds` seeds, its settings
/// as `options` (`--k v` pairs or flags), JSON on standard output: how every step of the main
/// job simulates a configuration it measured.
fn sim_run_args(
    scenario: &str,
    preset: &Path,
    cpus: usize,
    seeds: u32,
    options: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut a: Vec<String> =
        ["sim", "run", "--scenario", scenario, "--machine"].map(String::from).into();
    a.push(preset.display().to_string());
    a.extend(["--cpus".into(), cpus.to_string(), "--seeds".into(), seeds.to_string()]);
    a.extend(options);
    a.push("--json".into());
    a
}

/// The simulated value of each seed (the first policy's) in a `sim run --json` result.
fn simulated_values(result: &Value) -> Option<Vec<f64>> {
    result["policies"][0]["values"].as_array()?.iter().map(Value::as_f64).collect()
}

/// The first seed's simulated value.
fn first_simulated(result: &Value) -> Option<f64> {
    simulated_values(result)?.first().copied()
}

/// The scenarios of the safety checks, each with the settings it runs at: lazy-readers twice,
/// over a few pages (lazy CPUs must catch up on tlb_gen) and over whole 2 MiB blocks (the
/// DONTNEED frees their page tables, whose flush must reach lazy CPUs too); collapse-readers on
/// Zen 4, whose INVLPGB the broadcast policies use (the others flush by IPI there as anywhere).
const CHECK_SCENARIOS: [(&str, &[&str]); 6] = [
    ("lazy-readers", &["--cpus", "3", "--tasks", "2", "--pages", "8", "--iterations", "20"]),
    ("lazy-readers", &["--cpus", "3", "--tasks", "2", "--pages", "1024", "--iterations", "3"]),
    ("shared-writers", &["--cpus", "4", "--tasks", "2", "--pages", "8", "--iterations", "10"]),
    ("switching-readers", &["--cpus", "4", "--tasks", "2", "--pages", "8", "--iterations", "10"]),
    ("madvise-busy", &["--cpus", "2", "--busy", "0", "--iterations", "50"]),
    (
        "collapse-readers",
        &[
            "--machine",
            "zen4",
            "--cpus",
            "6",
            "--tasks",
            "2",
            "--busy",
            "3",
            "--pages",
            "1024",
            "--iterations",
            "6",
        ],
    ),
];

/// The policies of [`CHECK_POLICIES`] that need INVLPGB: checked on Zen 4 on every scenario.
const INVLPGB_CHECK_POLICIES: [&str; 2] = ["invlpgb", "bad-invlpgb-2m-stride"];

/// The policies checked: every policy of the studies (but la57-on, which needs an LA57 machine
/// and flushes as linux-4.14 does), LATR-style asynchronous shootdowns (S8: speed and exposure
/// beside the others), then the known-bad variants (which the checker must catch).
const CHECK_POLICIES: [&str; 21] = [
    "linux-6.18",
    "linux-4.14",
    "linux-4.14-nopcid",
    "linux-4.13",
    "pti-invpcid",
    "pti-deferred",
    "la57-runtime",
    "la57-patched",
    "flush-info-percpu",
    "flush-info-stack",
    "xpfo-sync",
    "xpfo-deferred",
    "latr",
    "invlpgb",
    "bad-lazy-no-catch-up",
    "bad-partial-flush",
    "bad-lazy-skip-freed-tables",
    "bad-no-switching-check",
    "bad-pti-no-user-flush",
    "bad-collapse-no-freed-tables",
    "bad-invlpgb-2m-stride",
];

/// `tlblab sim check` of every policy of [`CHECK_POLICIES`] on every scenario of
/// [`CHECK_SCENARIOS`] (quick: 100 schedules each; else 1,000).
fn safety_checks(runner: &mut Runner, quick: bool) -> Value {
    let schedules = if quick { "100" } else { "1000" };
    let mut runs = Vec::new();
    for policy in CHECK_POLICIES {
        for (scenario, settings) in CHECK_SCENARIOS {
            let mut a = vec!["sim", "check", "--json", "--policy", policy, "--scenario", scenario];
            a.extend(settings);
            if INVLPGB_CHECK_POLICIES.contains(&policy) && !settings.contains(&"--machine") {
                a.extend(["--machine", "zen4"]);
            }
            a.extend(["--schedules", schedules]);
            let name = format!("safety check: {policy} on {scenario} {}", settings.join(" "));
            let outcome = runner.check_step(&name, &a);
            runs.push(json!({ "policy": policy, "scenario": scenario, "result": outcome.value() }));
        }
    }
    json!({ "schedules": schedules.parse::<u64>().unwrap_or(0), "runs": runs })
}

/// `scenario --k v …` of a bench configuration.
fn config_name(cfg: &Value) -> String {
    let params: Vec<String> = cfg["params"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("--{k} {}", v.as_str().unwrap_or("?")))
        .collect();
    format!("{} {}", cfg["scenario"].as_str().unwrap_or("?"), params.join(" "))
        .trim_end()
        .to_string()
}

/// Why the live part cannot run here, if it cannot.
fn live_unavailable(cpus: usize) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("not Linux".into());
    }
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: live benchmarks and tracing need root (tracefs)".into());
    }
    if let Err(e) = tlblab_tracefs::Tracefs::find_or_mount() {
        return Some(format!("no tracefs: {}", tlblab_types::plain::error_chain(&e)));
    }
    if cpus < 2 {
        return Some("one CPU: the scenarios need two".into());
    }
    None
}

/// Every live scenario, at sizes this machine's CPUs allow.
fn bench_args(live: &LiveSettings, cpus: usize, out: &Path, noise: &str) -> Vec<String> {
    let sibling = (cpus - 1).min(3);
    let mut a: Vec<String> = [
        "bench",
        "madv-migrate",
        "pingpong",
        "madvise-busy",
        "munmap-threads",
        "tlb-flush2",
        "madvise-scale",
        "pthread-mmap",
        "storm",
    ]
    .map(String::from)
    .into();
    let mut opt = |k: &str, v: String| a.extend([k.to_string(), v]);
    opt("--busy", format!("0,{sibling}"));
    opt("--tasks", cpus.min(4).to_string());
    opt("--mode", "threads,processes".into());
    opt("--iterations", live.pthread_iterations.to_string());
    opt("--runs", live.runs.to_string());
    opt("--run-ms", live.run_ms.to_string());
    opt("--warmup-ms", live.warmup_ms.to_string());
    opt("-o", out.display().to_string());
    opt("--noise", noise.to_string());
    // Timed without the tlb:tlb_flush tracepoint: recording each flush costs time the
    // simulator does not model (0.67 µs per flush on the 2-vCPU guest), so traced runs would
    // not be the kernel's own time; the study's trace step records the flushes instead.
    a.extend(["-q".into(), "--force".into(), "--no-trace".into()]);
    if !live.overhead {
        a.push("--no-overhead".into());
    }
    a
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    write_file(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}
