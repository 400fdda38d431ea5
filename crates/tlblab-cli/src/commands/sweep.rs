//! `tlblab sweep`: a sweep spec's jobs on this machine or on a Ray cluster.

use super::{BadInput, Interrupted, Stop, Stopped};
use crate::cli::{EngineArg, SweepArgs};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tlblab_sweep::{Plan, SweepError, Writer};

/// The environment variable naming the Python interpreter of `--engine ray`.
pub const PYTHON_ENV: &str = "TLBLAB_PYTHON";

pub fn run(args: &SweepArgs) -> Result<ExitCode> {
    if let Some(name) = &args.print_study {
        let study = tlblab_studies::find(name).ok_or_else(|| {
            BadInput(format!("unknown study {name:?} (known: {})", tlblab_studies::known_names()))
        })?;
        let size =
            if args.quick { tlblab_studies::Size::Quick } else { tlblab_studies::Size::Full };
        let spec = tlblab_sweep::study::spec_of(study, size).map_err(BadInput)?;
        crate::render::stdout_data(&spec)?;
        return Ok(ExitCode::SUCCESS);
    }
    let spec = args.spec.as_ref().expect("clap requires SPEC without --print-study");
    // The whole spec is checked, and every job realised, before anything runs or is written.
    let plan = Plan::load(spec)?;
    if args.plan {
        let mut out = format!("{}: {} jobs\n", plan.spec.name, plan.jobs().len());
        for j in plan.jobs() {
            let p = &j.point;
            out += &format!(
                "{:>5} {} {} | {} | {} CPUs | {} | {} | ceiling {} | seed {}\n",
                j.index,
                &j.hash[..12],
                p.grid,
                p.machine,
                p.cpus,
                p.scenario,
                p.policy,
                p.ceiling,
                p.seed
            );
        }
        crate::render::stdout(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let dir =
        args.output.clone().unwrap_or_else(|| PathBuf::from(format!("sweep-{}", plan.spec.name)));
    match args.engine {
        EngineArg::Local => local(args, &plan, &dir),
        EngineArg::Ray => ray(args, spec, &dir),
    }
}

fn local(args: &SweepArgs, plan: &Plan, dir: &std::path::Path) -> Result<ExitCode> {
    let mut writer = Writer::open(dir, plan, args.resume, args.force)?;
    if writer.resumed() > 0 {
        eprintln!(
            "tlblab: resuming {}: {} of {} jobs already recorded",
            dir.display(),
            writer.resumed(),
            plan.jobs().len()
        );
    }
    let stop = Stop::install()?;
    let progress = SweepProgress {
        bar: crate::progress::Progress::new(
            &plan.spec.name,
            "jobs",
            plan.jobs().len() as u64,
            false,
        ),
        stop: &stop,
        failed: std::sync::atomic::AtomicU64::new(0),
    };
    let ran = tlblab_sweep::run_local(&mut writer, &progress);
    progress.bar.finish();
    match ran {
        Ok(()) => {}
        Err(SweepError::Interrupted { done, total }) => {
            let signal = stop.check().err().map_or(2, |Interrupted(s)| s);
            eprintln!(
                "tlblab: {done} of {total} jobs are recorded in {}; `tlblab sweep {} -o {} --resume` runs the rest",
                dir.display(),
                args.spec.as_ref().map_or(String::new(), |p| p.display().to_string()),
                dir.display()
            );
            return Err(Stopped { signal, kept: format!("{done} finished jobs are kept") }.into());
        }
        Err(e) => return Err(e.into()),
    }
    let summary = writer.finish()?;
    let text = if args.format.json() {
        serde_json::to_string_pretty(&summary)? + "\n"
    } else {
        tlblab_sweep::summary::render(&summary)
    };
    if args.format.json() {
        crate::render::stdout_data(&text)?;
    } else {
        crate::render::stdout(&text)?;
    }
    eprintln!(
        "tlblab: results in {}/results.parquet and results.jsonl; `tlblab report {}` draws them",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The local engine's view of the progress bar and of Ctrl-C.
struct SweepProgress<'a> {
    bar: crate::progress::Progress,
    stop: &'a Stop,
    failed: std::sync::atomic::AtomicU64,
}

impl tlblab_sweep::Progress for SweepProgress<'_> {
    fn start(&self, total: u64, done: u64) {
        self.bar.set_total(total);
        for _ in 0..done {
            self.bar.inc();
        }
    }

    fn finished(&self, ok: bool) {
        if !ok {
            let n = self.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            self.bar.set_message(&format!("{n} failed"));
        }
        self.bar.inc();
    }

    fn stopped(&self) -> bool {
        self.stop.check().is_err()
    }
}

/// `--engine ray`: the Python package's engine, in a child process that shares the terminal.
fn ray(args: &SweepArgs, spec: &std::path::Path, dir: &std::path::Path) -> Result<ExitCode> {
    let python = std::env::var(PYTHON_ENV).unwrap_or_else(|_| "python3".into());
    let probe =
        std::process::Command::new(&python).args(["-c", "import tlblab._core, ray"]).output();
    match probe {
        Err(e) => {
            return Err(BadInput(format!(
                "--engine ray needs Python with the tlblab package and Ray: cannot run {python} ({e}); set {PYTHON_ENV} to the interpreter of the virtual environment that has them"
            ))
            .into())
        }
        Ok(out) if !out.status.success() => {
            let why = String::from_utf8_lossy(&out.stderr);
            let missing = why.lines().rev().find(|l| l.contains("Error")).unwrap_or("").trim();
            return Err(BadInput(format!(
                "--engine ray needs the Python package tlblab and Ray in {python} ({missing}): `pip install ray` and the tlblab wheel (docs/python.md), or set {PYTHON_ENV} to an interpreter that has them"
            ))
            .into());
        }
        Ok(_) => {}
    }
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "tlblab", "sweep"]).arg(spec).arg("--engine").arg("ray").arg("-o").arg(dir);
    if let Some(a) = &args.address {
        cmd.arg("--address").arg(a);
    }
    if args.resume {
        cmd.arg("--resume");
    }
    if args.force {
        cmd.arg("--force");
    }
    if args.format.json() {
        cmd.args(["--format", "json"]);
    }
    let status = cmd.status().with_context(|| format!("running {python} -m tlblab sweep"))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(code.clamp(1, 255) as u8),
        None => ExitCode::from(1),
    })
}
