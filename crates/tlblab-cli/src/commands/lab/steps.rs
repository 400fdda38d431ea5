//! The steps of `tlblab study`: child processes of this executable, a spinner each, and what
//! became of them.

use super::LiveSettings;
use crate::progress;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
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

/// Runs steps one after another.
pub struct Runner {
    exe: PathBuf,
    quiet: bool,
    steps: Vec<StepRecord>,
}

impl Runner {
    pub fn new(quiet: bool) -> Result<Runner> {
        let exe = std::env::current_exe().context("finding the tlblab executable")?;
        Ok(Runner { exe, quiet, steps: Vec::new() })
    }

    /// The steps so far.
    pub fn steps(&self) -> &[StepRecord] {
        &self.steps
    }

    /// Whether a step failed.
    pub fn any_failed(&self) -> bool {
        self.steps.iter().any(|s| s.status == "failed")
    }

    /// Records a step that does not run here.
    pub fn note_skipped(&mut self, name: &str, why: &str) {
        if !self.quiet {
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
    pub fn finish(&self) {
        if !self.quiet {
            let total: f64 = self.steps.iter().map(|s| s.seconds).sum();
            eprintln!("tlblab: {} steps in {total:.0} s", self.steps.len());
        }
    }

    /// Runs `tlblab ARGS`, whose standard output is JSON, into `out`.
    pub fn json_step(&mut self, name: &str, args: &[&str], out: &Path) -> Outcome {
        let outcome = self.run(name, args, Some(out), |stdout| {
            std::fs::write(out, stdout).with_context(|| format!("writing {}", out.display()))?;
            Ok(serde_json::from_slice(stdout)?)
        });
        outcome
    }

    /// Runs `tlblab ARGS`, whose standard output is JSON, keeping it in memory only.
    pub fn json_value_step(&mut self, name: &str, args: &[&str]) -> Outcome {
        self.run(name, args, None, |stdout| Ok(serde_json::from_slice(stdout)?))
    }

    /// `tlblab sim check …`, whose exit status 1 (violations found) is a result, not a failure.
    pub fn check_step(&mut self, name: &str, args: &[&str]) -> Outcome {
        self.run_accepting(name, args, None, &[0, 1], |stdout| Ok(serde_json::from_slice(stdout)?))
    }

    /// `tlblab bench …` writing its results to `out` itself.
    pub fn bench(&mut self, args: &[String], out: &Path) -> Outcome {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run("live benchmarks", &args, Some(out), |_| read_json(out))
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
        let args = ["trace", "report", "--format", "json", &trace, "-o", &report_path];
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
        let spinner = self.spinner(name);
        let start = Instant::now();
        let mut command = Command::new(&self.exe);
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
        let (status, reason) = match &outcome {
            Outcome::Done(_) => ("done", None),
            Outcome::Skipped(w) => ("skipped", Some(w.clone())),
            Outcome::Failed(w) => ("failed", Some(w.clone())),
        };
        if !self.quiet {
            match &reason {
                None => eprintln!("tlblab: {name}: done in {seconds:.1} s"),
                Some(why) => eprintln!("tlblab: {name}: {status}: {why}"),
            }
        }
        self.steps.push(StepRecord {
            name: name.into(),
            status,
            reason,
            command: Some(format!("tlblab {}", args.join(" "))),
            seconds,
            file: file.map(Path::to_path_buf),
        });
        outcome
    }

    fn spinner(&self, name: &str) -> Option<ProgressBar> {
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
