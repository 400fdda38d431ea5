//! The steps of `tlblab study`: child processes of this executable, a spinner each, and what
//! became of them.

use super::LiveSettings;
use crate::progress;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What became of a step.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran; its JSON.
    Done(Value),
    /// It could not run here (the reason).
    Skipped(String),
    /// It failed (the reason).
    Failed(String),
}

impl Outcome {
    /// The JSON of a step that ran.
    pub fn done(&self) -> Option<&Value> {
        match self {
            Outcome::Done(v) => Some(v),
            _ => None,
        }
    }

    /// The step's JSON, or `{"skipped": why}` / `{"failed": why}`.
    pub fn value(&self) -> Value {
        match self {
            Outcome::Done(v) => v.clone(),
            Outcome::Skipped(why) => serde_json::json!({ "skipped": why }),
            Outcome::Failed(why) => serde_json::json!({ "failed": why }),
        }
    }
}

/// One line of `results.json`'s `steps`.
#[derive(Clone, Debug, Serialize)]
pub struct StepRecord {
    /// What the step is.
    pub name: String,
    /// `done`, `skipped` or `failed`.
    pub status: &'static str,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// The command line it ran (`tlblab …`).
    pub command: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The file it wrote.
    pub file: Option<PathBuf>,
}

/// A group of steps reported as one line on the terminal (the safety checks: 90 of them).
struct Phase {
    name: String,
    /// Index in `steps` of its first step.
    first: usize,
    start: Instant,
    bar: Option<ProgressBar>,
}

/// Runs steps one after another.
pub struct Runner {
    exe: PathBuf,
    quiet: bool,
    steps: Vec<StepRecord>,
    phase: Option<Phase>,
}

impl Runner {
    pub fn new(quiet: bool) -> Result<Runner> {
        let exe = std::env::current_exe().context("finding the tlblab executable")?;
        Ok(Runner { exe, quiet, steps: Vec::new(), phase: None })
    }

    /// Starts a phase of `total` steps: one progress bar (k/N, ETA) while it runs, one line
    /// when [`Runner::end_phase`] ends it; a step that fails still gets its own line.
    pub fn begin_phase(&mut self, name: &str, total: usize) {
        self.end_phase();
        let bar = (!self.quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {pos}/{len} (ETA {eta}) {msg}")
                    .expect("a valid template"),
            );
            bar.set_prefix(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        self.phase =
            Some(Phase { name: name.into(), first: self.steps.len(), start: Instant::now(), bar });
    }

    /// Ends the current phase with one line: how many of its steps ran, were skipped or failed.
    pub fn end_phase(&mut self) {
        let Some(phase) = self.phase.take() else { return };
        if let Some(bar) = &phase.bar {
            bar.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let steps = &self.steps[phase.first..];
        let count = |status: &str| steps.iter().filter(|s| s.status == status).count();
        let mut parts: Vec<String> = [("done", count("done")), ("skipped", count("skipped"))]
            .into_iter()
            .chain([("failed", count("failed"))])
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        if parts.is_empty() {
            parts.push("nothing to do".into());
        }
        // Skipped all for one reason: say it once.
        let mut reasons: Vec<&str> = steps.iter().filter_map(|s| s.reason.as_deref()).collect();
        reasons.dedup();
        let why = match (count("skipped") == steps.len(), reasons.as_slice()) {
            (true, [one]) => format!(" ({one})"),
            _ => String::new(),
        };
        eprintln!(
            "tlblab: {}: {}{why} in {:.1} s",
            phase.name,
            parts.join(", "),
            phase.start.elapsed().as_secs_f64()
        );
    }

    /// The steps so far.
    pub fn steps(&self) -> &[StepRecord] {
        &self.steps
    }

    /// Whether a step failed.
    pub fn any_failed(&self) -> bool {
        self.steps.iter().any(|s| s.status == "failed")
    }

    /// Records a part that does not run here, and gives its place in `results.json`:
    /// `{"skipped": why}`.
    pub fn skip_part(&mut self, name: &str, why: &str) -> Value {
        self.note_skipped(name, why);
        json!({ "skipped": why })
    }

    /// Records a step that does not run here.
    pub fn note_skipped(&mut self, name: &str, why: &str) {
        if !self.quiet && self.phase.is_none() {
            eprintln!("tlblab: {name}: skipped ({why})");
        }
        self.steps.push(StepRecord {
            name: name.into(),
            status: "skipped",
            reason: Some(why.into()),
            command: None,
            seconds: 0.0,
            file: None,
        });
    }

    /// The last line of progress.
    pub fn finish(&mut self) {
        self.end_phase();
        if !self.quiet {
            let total: f64 = self.steps.iter().map(|s| s.seconds).sum();
            eprintln!("tlblab: {} steps in {total:.0} s", self.steps.len());
        }
    }

    /// Runs `tlblab ARGS`, whose standard output is JSON, into `out`.
    pub fn json_step(&mut self, name: &str, args: &[&str], out: &Path) -> Outcome {
        let outcome = self.run(name, args, Some(out), |stdout| {
            tlblab_types::atomic::write_file(out, stdout)
                .with_context(|| format!("writing {}", out.display()))?;
            Ok(serde_json::from_slice(stdout)?)
        });
        outcome
    }

    /// Runs `tlblab ARGS`, whose standard output is JSON, keeping it in memory only.
    pub fn json_value_step(&mut self, name: &str, args: &[&str]) -> Outcome {
        self.run(name, args, None, |stdout| Ok(serde_json::from_slice(stdout)?))
    }

    /// As [`Runner::json_value_step`], but a success is folded into the step before it (its
    /// seconds added): the calibration's runs, hundreds of them, would bury the steps' table;
    /// a failure stays a step of its own.
    pub fn json_value_folded(&mut self, name: &str, args: &[&str]) -> Option<Value> {
        let Outcome::Done(value) = self.json_value_step(name, args) else { return None };
        let folded = self.steps.pop().expect("the step just recorded");
        if let Some(before) = self.steps.last_mut() {
            before.seconds += folded.seconds;
        }
        Some(value)
    }

    /// Runs `work` in this process as a step of its own (a preset built from measurements made
    /// now): done with its value, or failed with its error, and timed like the others.
    pub fn in_process<T>(&mut self, name: &str, work: impl FnOnce() -> Result<T>) -> Option<T> {
        let spinner = self.spinner(name);
        let start = Instant::now();
        let outcome = work();
        let seconds = start.elapsed().as_secs_f64();
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        let (status, reason) = match &outcome {
            Ok(_) => ("done", None),
            Err(e) => ("failed", Some(format!("{e:#}"))),
        };
        if !self.quiet && self.phase.is_none() {
            match &reason {
                None => eprintln!("tlblab: {name}: done in {seconds:.1} s"),
                Some(why) => eprintln!("tlblab: {name}: failed: {why}"),
            }
        }
        self.steps.push(StepRecord {
            name: name.into(),
            status,
            reason,
            command: None,
            seconds,
            file: None,
        });
        outcome.ok()
    }

    /// `tlblab sim check …`, whose exit status 1 (violations found) is a result, not a failure.
    pub fn check_step(&mut self, name: &str, args: &[&str]) -> Outcome {
        self.run_accepting(name, args, None, &[0, 1], |stdout| Ok(serde_json::from_slice(stdout)?))
    }

    /// Runs another program, `program ARGS` (a peer benchmark), keeping what `take` makes of
    /// its standard output; an exit status other than 0 is a failure.
    pub fn program_step(
        &mut self,
        name: &str,
        program: &Path,
        args: &[&str],
        take: impl FnOnce(&[u8]) -> Result<Value>,
    ) -> Outcome {
        self.run_program(Some(program), name, args, None, &[0], take)
    }

    /// `tlblab bench …` writing its results to `out` itself.
    pub fn bench(&mut self, name: &str, args: &[String], out: &Path) -> Outcome {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(name, &args, Some(out), |_| read_json(out))
    }

    /// Records a short trace of madvise-busy, then its report.
    pub fn trace(
        &mut self,
        live: &LiveSettings,
        cpus: usize,
        trace_file: &Path,
        report: &Path,
    ) -> Outcome {
        let exe = self.exe.display().to_string();
        let sibling = (cpus - 1).min(3).to_string();
        let run_ms = live.trace_ms.to_string();
        let trace = trace_file.display().to_string();
        let args = [
            "trace",
            "record",
            "--events",
            "tlb,sched,ipi",
            "--only-cmd",
            "-q",
            "--force",
            "-o",
            &trace,
            "--",
            &exe,
            "bench",
            "madvise-busy",
            "--busy",
            &sibling,
            "--runs",
            "1",
            "--run-ms",
            &run_ms,
            "--warmup-ms",
            "50",
            "--no-overhead",
            "--no-trace",
            "-q",
        ];
        match self.run("trace of madvise-busy", &args, Some(trace_file), |_| Ok(Value::Null)) {
            Outcome::Done(_) => {}
            other => return other,
        }
        let report_path = report.display().to_string();
        let args = ["trace", "report", "--format", "json", &trace, "--force", "-o", &report_path];
        self.run("trace report", &args, Some(report), |_| read_json(report))
    }

    fn run(
        &mut self,
        name: &str,
        args: &[&str],
        file: Option<&Path>,
        take: impl FnOnce(&[u8]) -> Result<Value>,
    ) -> Outcome {
        self.run_accepting(name, args, file, &[0], take)
    }

    /// Runs `tlblab ARGS`; an exit status outside `ok` is a failure.
    fn run_accepting(
        &mut self,
        name: &str,
        args: &[&str],
        file: Option<&Path>,
        ok: &[i32],
        take: impl FnOnce(&[u8]) -> Result<Value>,
    ) -> Outcome {
        self.run_program(None, name, args, file, ok, take)
    }

    /// Runs `program ARGS` (`None`: this executable, `tlblab`); an exit status outside `ok` is
    /// a failure.
    fn run_program(
        &mut self,
        program: Option<&Path>,
        name: &str,
        args: &[&str],
        file: Option<&Path>,
        ok: &[i32],
        take: impl FnOnce(&[u8]) -> Result<Value>,
    ) -> Outcome {
        let spinner = self.spinner(name);
        let start = Instant::now();
        let mut command = Command::new(program.unwrap_or(&self.exe));
        command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if spinner.is_some() {
            // The child reports k/N as lines, which turn the spinner into a bar with an ETA.
            command.env(progress::LINES_ENV, "1");
        }
        let output = command.spawn().and_then(|mut child| {
            let stderr = child.stderr.take().expect("stderr is piped");
            let bar = spinner.clone();
            let reader = std::thread::spawn(move || follow_stderr(stderr, bar.as_ref()));
            let output = child.wait_with_output();
            let stderr = reader.join().unwrap_or_default();
            output.map(|o| (o, stderr))
        });
        let seconds = start.elapsed().as_secs_f64();
        let outcome = match output {
            Err(e) => Outcome::Failed(format!("could not start: {e}")),
            Ok((o, stderr)) if !o.status.code().is_some_and(|c| ok.contains(&c)) => {
                let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                Outcome::Failed(format!("exit status {}: {last}", o.status))
            }
            Ok((o, _)) => match take(&o.stdout) {
                Ok(v) => Outcome::Done(v),
                Err(e) => Outcome::Failed(format!("{e:#}")),
            },
        };
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        let shown = program
            .and_then(Path::file_name)
            .map_or("tlblab".into(), |n| n.to_string_lossy().into_owned());
        let (status, reason) = match &outcome {
            Outcome::Done(_) => ("done", None),
            Outcome::Skipped(w) => ("skipped", Some(w.clone())),
            Outcome::Failed(w) => ("failed", Some(w.clone())),
        };
        if !self.quiet {
            // Inside a phase only a failure gets a line of its own; the phase sums up the rest.
            match (&reason, &self.phase) {
                (None, None) => eprintln!("tlblab: {name}: done in {seconds:.1} s"),
                (None, Some(_)) => {}
                (Some(why), phase) => {
                    let line = format!("tlblab: {name}: {status}: {why}");
                    match phase.as_ref().and_then(|p| p.bar.as_ref()) {
                        Some(bar) => bar.println(line),
                        None => eprintln!("{line}"),
                    }
                }
            }
        }
        if let Some(bar) = self.phase.as_ref().and_then(|p| p.bar.as_ref()) {
            bar.inc(1);
        }
        self.steps.push(StepRecord {
            name: name.into(),
            status,
            reason,
            command: Some(format!("{shown} {}", args.join(" "))),
            seconds,
            file: file.map(Path::to_path_buf),
        });
        outcome
    }

    fn spinner(&self, name: &str) -> Option<ProgressBar> {
        if let Some(bar) = self.phase.as_ref().and_then(|p| p.bar.as_ref()) {
            bar.set_message(name.to_string());
            return None;
        }
        if self.quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"),
        );
        bar.set_message(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Some(bar)
    }
}

/// A child's standard error, less its progress lines, which move `bar` instead.
fn follow_stderr(stderr: impl std::io::Read, bar: Option<&ProgressBar>) -> String {
    let mut kept = String::new();
    for line in BufReader::new(stderr).lines().map_while(std::io::Result::ok) {
        match (progress::parse_line(&line), bar) {
            (Some((k, n, unit)), Some(bar)) => {
                if bar.length() != Some(n) {
                    // Length and unit before the style, so that no frame shows 0/0.
                    bar.set_length(n);
                    bar.set_position(k);
                    bar.set_prefix(unit.to_string());
                    bar.set_style(progress::bar_style());
                    bar.reset_eta();
                }
                bar.set_position(k);
            }
            (Some(_), None) => {}
            (None, _) => {
                kept += &line;
                kept.push('\n');
            }
        }
    }
    kept
}

fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_move_the_bar_and_are_not_kept_as_the_childs_messages() {
        let stderr = format!(
            "{}\ntlblab: warning: one\n{}\ntlblab: error: two\n",
            progress::line(1, 4, "runs"),
            progress::line(3, 4, "runs")
        );
        let bar = ProgressBar::hidden();
        let kept = follow_stderr(stderr.as_bytes(), Some(&bar));
        assert_eq!(kept, "tlblab: warning: one\ntlblab: error: two\n");
        assert_eq!((bar.position(), bar.length()), (3, Some(4)));
        assert_eq!(follow_stderr(stderr.as_bytes(), None), kept);
    }
}
