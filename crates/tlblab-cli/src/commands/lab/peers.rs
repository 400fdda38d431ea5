//! The peers as real programs beside their simulated twins: rt-tests' `hackbench` (Debian package
//! `rt-tests`) run on this machine, and `tlblab sim run -s hackbench` with the same settings on
//! this machine's preset. Each run of either is a step of its own.
//!
//! hackbench's own figure is its `Time:` line: seconds from the release of the workers to the
//! last one reaped, which is also the simulated scenario's metric (docs/workloads.md).

use super::steps::{Outcome, Runner};
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Why the step does not run when the program is missing.
pub(super) const NOT_INSTALLED: &str =
    "rt-tests' hackbench is not installed (apt-get install rt-tests)";

/// Messages each sender writes to each receiver (`-l`): with hackbench's default 20 senders and
/// receivers per group, a run of a few tenths of a second on a 2-CPU machine.
const LOOPS: u32 = 200;

/// One hackbench configuration.
#[derive(Clone, Copy, Debug)]
struct Config {
    groups: u32,
    pipe: bool,
    threads: bool,
}

impl Config {
    /// Groups 1 and 2, each with pipes and sockets, processes and threads.
    fn all() -> Vec<Config> {
        let mut out = Vec::new();
        for groups in [1, 2] {
            for pipe in [true, false] {
                for threads in [false, true] {
                    out.push(Config { groups, pipe, threads });
                }
            }
        }
        out
    }

    fn name(&self) -> String {
        format!(
            "hackbench -g {} -l {LOOPS} ({}, {})",
            self.groups,
            if self.pipe { "pipes" } else { "sockets" },
            if self.threads { "threads" } else { "processes" }
        )
    }

    /// hackbench's own options.
    fn program_args(&self) -> Vec<String> {
        let mut a = vec!["-g".into(), self.groups.to_string(), "-l".into(), LOOPS.to_string()];
        if self.pipe {
            a.push("-p".into());
        }
        a.push(if self.threads { "-T" } else { "-P" }.into());
        a
    }

    /// `tlblab sim run` of the same settings on `machine` with `cpus` CPUs.
    fn sim_args(&self, machine: &Path, cpus: usize, seeds: u32) -> Vec<String> {
        let mut options: Vec<String> = vec!["--groups".into(), self.groups.to_string()];
        options.extend(["--loops".into(), LOOPS.to_string()]);
        let mode = if self.threads { "threads" } else { "processes" };
        options.extend(["--mode".into(), mode.into()]);
        if self.pipe {
            options.push("--pipe".into());
        }
        super::sim_run_args("hackbench", machine, cpus, seeds, options)
    }
}

/// The first executable file named `name` in the directories of `path` (a `PATH` value).
fn find_in_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The seconds of hackbench's `Time: X` line.
fn parse_time(stdout: &str) -> Result<f64> {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Time:"))
        .ok_or_else(|| anyhow!("no `Time:` line in hackbench's output"))?
        .trim()
        .parse::<f64>()
        .map_err(|e| anyhow!("hackbench's `Time:` line: {e}"))
}

/// hackbench's runs of every configuration, measured and not yet simulated.
pub(super) struct Measured {
    program: PathBuf,
    configs: Vec<(Config, Vec<f64>)>,
}

/// Runs hackbench, quick 3 runs per configuration, else 5. `tlblab study` calls it inside the
/// live part, between the two calibrations of the host preset, so that they bracket these runs
/// as they do the benchmarks'. `Err`: the part's value when hackbench is not installed.
pub(super) fn measure(runner: &mut Runner, quick: bool) -> Result<Measured, Value> {
    let Some(program) = find_in_path("hackbench", std::env::var_os("PATH").as_deref()) else {
        return Err(runner.skip_part("peers: hackbench", NOT_INSTALLED));
    };
    let runs = if quick { 3 } else { 5 };
    let configs = Config::all();
    runner.begin_phase("peers: hackbench", configs.len() * runs);
    let mut out = Vec::new();
    for config in configs {
        let name = config.name();
        let args = config.program_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut measured = Vec::new();
        for i in 1..=runs {
            let step = format!("{name}, run {i} of {runs}");
            let outcome = runner.program_step(&step, &program, &args, |stdout| {
                Ok(json!(parse_time(&String::from_utf8_lossy(stdout))?))
            });
            if let Outcome::Done(v) = outcome {
                measured.extend(v.as_f64());
            }
        }
        out.push((config, measured));
    }
    runner.end_phase();
    Ok(Measured { program, configs: out })
}

/// Simulates each measured configuration on `machine` (2 seeds quick, else 3; `None` when this
/// machine has no preset) and, as every live row, its first seed on `before`, the preset
/// measured before the live part (the row's `drift`). Returns `{"program", "runs": [...]}`.
pub(super) fn simulate(
    runner: &mut Runner,
    measured: Measured,
    quick: bool,
    cpus: usize,
    machine: Option<&Path>,
    before: Option<&Path>,
) -> Value {
    let seeds = if quick { 2 } else { 3 };
    let steps = measured.configs.len() * (1 + usize::from(before.is_some()));
    runner.begin_phase("peers: the simulated twins", steps);
    let mut out = Vec::new();
    for (config, runs) in measured.configs {
        let name = config.name();
        let args = config.program_args();
        let sim_args = |machine: &Path, seeds: u32| config.sim_args(machine, cpus, seeds);
        let (simulated, note) = match machine {
            None => (Vec::new(), Some("no preset of this machine to simulate on".to_string())),
            Some(machine) => {
                let sim = sim_args(machine, seeds);
                let sim: Vec<&str> = sim.iter().map(String::as_str).collect();
                match runner.json_value_step(&format!("simulated: {name}"), &sim) {
                    Outcome::Done(v) => match super::simulated_values(&v) {
                        Some(values) => (values, None),
                        None => (Vec::new(), Some("sim run gave no values".to_string())),
                    },
                    Outcome::Skipped(why) | Outcome::Failed(why) => {
                        (Vec::new(), Some(format!("simulation failed: {why}")))
                    }
                }
            }
        };
        // The first seed again on the preset measured before the live part, folded into the
        // step above.
        let drift = match (simulated.first(), before) {
            (Some(&after), Some(before)) => {
                let sim = sim_args(before, 1);
                let sim: Vec<&str> = sim.iter().map(String::as_str).collect();
                runner
                    .json_value_folded(&format!("simulated: {name}, before the live part"), &sim)
                    .as_ref()
                    .and_then(super::first_simulated)
                    .map(|before| json!({ "before": before, "after": after }))
            }
            _ => None,
        };
        out.push(json!({
            "name": name,
            "unit": "s",
            "params": {
                "groups": config.groups,
                "loops": LOOPS,
                "pipe": config.pipe,
                "mode": if config.threads { "threads" } else { "processes" },
            },
            "command": format!("hackbench {}", args.join(" ")),
            "measured": runs,
            "simulated": simulated,
            "note": note,
            "drift": drift,
        }));
    }
    runner.end_phase();
    json!({ "program": measured.program, "runs": out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_line_of_hackbench_is_read() {
        // rt-tests 2.4's hackbench, `hackbench -g 1 -l 200 -p`.
        let out = "Running in process mode with 1 groups using 40 file descriptors each (== 40 \
                   tasks)\nEach sender will pass 200 messages of 100 bytes\nTime: 0.158\n";
        assert_eq!(parse_time(out).unwrap(), 0.158);
        assert!(parse_time("Time: soon\n").is_err());
        assert!(parse_time("no time here\n").is_err());
    }

    #[test]
    fn hackbench_is_found_on_path_only_where_an_executable_of_its_name_is() {
        use std::os::unix::fs::PermissionsExt;
        let (empty, with) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let file = with.path().join("hackbench");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let path = std::env::join_paths([empty.path(), with.path()]).unwrap();
        // Not executable: not a program.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find_in_path("hackbench", Some(&path)), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_in_path("hackbench", Some(&path)), Some(file));
        assert_eq!(find_in_path("hackbench", Some(empty.path().as_os_str())), None);
        assert_eq!(find_in_path("hackbench", None), None);
    }

    #[test]
    fn each_configuration_runs_hackbench_and_its_twin_with_the_same_settings() {
        let c = Config { groups: 2, pipe: true, threads: false };
        assert_eq!(c.name(), "hackbench -g 2 -l 200 (pipes, processes)");
        assert_eq!(c.program_args(), ["-g", "2", "-l", "200", "-p", "-P"]);
        let sim = c.sim_args(Path::new("/d/host.toml"), 2, 3).join(" ");
        assert_eq!(
            sim,
            "sim run --scenario hackbench --machine /d/host.toml --cpus 2 --seeds 3 --groups 2 \
             --loops 200 --mode processes --pipe --json"
        );
        let t = Config { groups: 1, pipe: false, threads: true };
        assert_eq!(t.program_args(), ["-g", "1", "-l", "200", "-T"]);
        assert!(t.sim_args(Path::new("host"), 2, 2).join(" ").contains("--mode threads --json"));
        assert_eq!(Config::all().len(), 8);
    }
}
