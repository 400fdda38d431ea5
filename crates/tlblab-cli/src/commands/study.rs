//! `tlblab sim study`: the built-in studies S1–S10 (crate `tlblab-studies`).

use crate::cli::StudyArgs;
use crate::progress::Progress;
use crate::render;
use anyhow::Result;
use std::process::ExitCode;
use tlblab_studies::{
    AllReport, Options, Size, Study, StudyNotRun, StudyReport, SCHEMA_ALL, STUDIES,
};

pub fn run(args: &StudyArgs) -> Result<ExitCode> {
    if args.name == "list" {
        render::stdout(&tlblab_studies::render::list())?;
        return Ok(ExitCode::SUCCESS);
    }
    let options = Options {
        seeds: args.seeds,
        first_seed: args.seed,
        size: if args.quick { Size::Quick } else { Size::Full },
        mechanisms: args.without.mechanisms()?,
        explain: args.explain,
        noise: super::noise_fraction(args.noise)?,
    };
    // `all` or a list (`s2,s4`) is a multi-study report; one name is that study's own.
    let chosen: Vec<&'static Study> = if args.name.eq_ignore_ascii_case("all") {
        STUDIES.iter().collect()
    } else if args.name.contains(',') {
        let mut chosen = Vec::new();
        for name in args.name.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let study = tlblab_studies::lookup(name)?;
            if !chosen.iter().any(|s: &&Study| std::ptr::eq(*s, study)) {
                chosen.push(study);
            }
        }
        chosen
    } else {
        Vec::new()
    };
    args.output.check()?;
    let json = args.format.json();
    if chosen.is_empty() {
        let study = tlblab_studies::lookup(&args.name)?;
        let progress = Progress::new(study.name, "runs", 0, false);
        let report = tlblab_studies::run_with_progress(study, &options, &progress)?;
        progress.finish();
        warn_not_run(&report);
        if json {
            args.output.emit_data(&(serde_json::to_string_pretty(&report)? + "\n"))?;
        } else {
            args.output.emit(&tlblab_studies::render::study(&report))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // `all`: one study after the other; a study none of whose scenarios this build of the
    // kernel model has is reported as not run, and the others still run. Text goes out study by
    // study on standard output, at the end into an --output file.
    let mut all = AllReport {
        schema: SCHEMA_ALL,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        studies: Vec::new(),
        not_run: Vec::new(),
    };
    let mut text = String::new();
    let mut put = |piece: String| -> Result<()> {
        if args.output.output.is_some() {
            text += &piece;
            Ok(())
        } else {
            render::stdout(&piece)
        }
    };
    let count = chosen.len();
    let progress = Progress::new("", "runs", 0, false);
    for (i, study) in chosen.into_iter().enumerate() {
        progress.set_message(&format!("study {}/{count} {}", i + 1, study.name));
        let sep = if i == 0 { "" } else { "\n" };
        match run_one(study, &options, &progress)? {
            Ok(report) => {
                if !json {
                    put(format!("{sep}{}", tlblab_studies::render::study(&report)))?;
                }
                all.studies.push(report);
            }
            Err(not_run) => {
                eprintln!("tlblab: warning: study {} not run: {}", not_run.study, not_run.reason);
                if !json {
                    put(format!(
                        "{sep}tlblab sim study {}: NOT RUN: {}\n",
                        not_run.study, not_run.reason
                    ))?;
                }
                all.not_run.push(not_run);
            }
        }
    }
    progress.finish();
    if json {
        args.output.emit_data(&(serde_json::to_string_pretty(&all)? + "\n"))?;
    } else if args.output.output.is_some() {
        args.output.emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs one study of `all` or a list: its report, or why this build cannot run it at all.
fn run_one(
    study: &'static Study,
    options: &Options,
    progress: &Progress,
) -> Result<Result<StudyReport, StudyNotRun>> {
    match tlblab_studies::run_with_progress(study, options, progress) {
        Ok(report) => {
            warn_not_run(&report);
            Ok(Ok(report))
        }
        Err(e) if e.is_missing_scenario() => {
            let reason = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
            Ok(Err(StudyNotRun { study: study.name, reason }))
        }
        Err(e) => Err(e.into()),
    }
}

fn warn_not_run(report: &StudyReport) {
    for n in &report.not_run {
        eprintln!(
            "tlblab: warning: study {}: part {:?} not run: {}",
            report.study, n.label, n.reason
        );
    }
}
