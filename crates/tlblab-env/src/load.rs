//! [`SystemLoad`]: how busy the machine was around a measurement, from `/proc/loadavg` and the
//! CPU time of the other processes (`/proc/PID/stat`).
//!
//! A live measurement shares the machine; a verdict on a 2 % change means little when a compiler
//! ran beside it. The load average says how many tasks wanted a CPU; the competing processes say
//! which, as the CPU time each used between the start and the end of the measurement.

use crate::source::read_source;
use crate::Source;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

/// How many competing processes are kept (the busiest).
pub const TOP_COMPETITORS: usize = 5;

/// Processes below this share of one CPU (1 %) over the measurement are not listed: daemons
/// waking now and then do not disturb a measurement.
pub const MIN_COMPETITOR_PERCENT: f64 = 1.0;

/// `/proc/loadavg`: run-queue averages and task counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadAverage {
    /// Load average over 1 minute.
    pub one: f64,
    /// Over 5 minutes.
    pub five: f64,
    /// Over 15 minutes.
    pub fifteen: f64,
    /// Tasks runnable at that moment.
    pub runnable: u32,
    /// Tasks in total.
    pub total: u32,
}

// The averages are parsed as finite numbers (see `parse_loadavg`), so equality is reflexive.
impl Eq for LoadAverage {}

impl fmt::Display for LoadAverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.2} {:.2} {:.2} (1/5/15 min), {} of {} tasks runnable",
            self.one, self.five, self.fifteen, self.runnable, self.total
        )
    }
}

/// Parses `/proc/loadavg` (`0.52 0.58 0.59 2/1234 5678`).
///
/// ```
/// let l = tlblab_env::parse_loadavg("0.52 0.58 0.59 2/1234 5678\n").unwrap();
/// assert_eq!((l.one, l.fifteen, l.runnable, l.total), (0.52, 0.59, 2, 1234));
/// assert!(tlblab_env::parse_loadavg("0.52 nan 0.59 2/1234 1").is_err());
/// ```
pub fn parse_loadavg(text: &str) -> Result<LoadAverage, String> {
    let bad = || format!("/proc/loadavg holds {:?}, not five load fields", text.trim());
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [one, five, fifteen, tasks, ..] = fields[..] else {
        return Err(bad());
    };
    let avg =
        |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(bad);
    let (runnable, total) = tasks.split_once('/').ok_or_else(bad)?;
    let count = |s: &str| s.parse::<u32>().map_err(|_| bad());
    Ok(LoadAverage {
        one: avg(one)?,
        five: avg(five)?,
        fifteen: avg(fifteen)?,
        runnable: count(runnable)?,
        total: count(total)?,
    })
}

/// A process that used CPU during a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Competitor {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`comm`).
    pub comm: String,
    /// CPU time it used over the measurement, in % of one CPU (200 = two CPUs busy).
    pub cpu_percent: f64,
}

// `cpu_percent` is computed from finite tick counts and a positive duration.
impl Eq for Competitor {}

/// The CPU time of every process at one moment (not saved; two of them give the competitors).
#[derive(Debug, Clone)]
pub struct ProcessSample {
    at: Instant,
    /// pid → (comm, utime + stime in clock ticks).
    ticks: BTreeMap<u32, (String, u64)>,
}

/// `(comm, utime + stime)` from one `/proc/PID/stat` line. The command name is in parentheses
/// and may itself hold `)` or spaces, so the fields are counted from the last `)`.
fn parse_stat(line: &str) -> Option<(String, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // After the name: state (field 3) … utime (field 14) and stime (field 15).
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

impl ProcessSample {
    /// Reads `/proc/*/stat` now. Processes that end while it reads are skipped.
    pub fn take() -> Result<ProcessSample, String> {
        let dir = std::fs::read_dir("/proc").map_err(|e| format!("cannot list /proc: {e}"))?;
        let mut ticks = BTreeMap::new();
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(stat) =
                std::fs::read_to_string(entry.path().join("stat")).ok().and_then(|t| parse_stat(&t))
            {
                ticks.insert(pid, stat);
            }
        }
        Ok(ProcessSample { at: Instant::now(), ticks })
    }

    /// The busiest processes between `earlier` and this sample, other than tlblab's own (any
    /// command named `tlblab…`), using at least [`MIN_COMPETITOR_PERCENT`] of a CPU: at most
    /// `top`, busiest first (ties by pid).
    pub fn competitors_since(&self, earlier: &ProcessSample, top: usize) -> Vec<Competitor> {
        let seconds = self.at.duration_since(earlier.at).as_secs_f64();
        let hz = clock_ticks_per_second();
        if seconds <= 0.0 || hz <= 0.0 {
            return Vec::new();
        }
        let mut out: Vec<Competitor> = self
            .ticks
            .iter()
            .filter(|(_, (comm, _))| !comm.starts_with("tlblab"))
            .filter_map(|(&pid, (comm, now))| {
                // A process started during the measurement counts from 0.
                let before = earlier.ticks.get(&pid).filter(|(c, _)| c == comm).map_or(0, |t| t.1);
                let used = now.checked_sub(before)? as f64 / hz;
                let cpu_percent = 100.0 * used / seconds;
                (cpu_percent >= MIN_COMPETITOR_PERCENT).then(|| Competitor {
                    pid,
                    comm: comm.clone(),
                    cpu_percent,
                })
            })
            .collect();
        out.sort_by(|a, b| b.cpu_percent.total_cmp(&a.cpu_percent).then(a.pid.cmp(&b.pid)));
        out.truncate(top);
        out
    }
}

fn clock_ticks_per_second() -> f64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(n)) if n > 0 => n as f64,
        _ => 100.0, // USER_HZ on every Linux architecture tlblab runs on
    }
}

/// How busy the machine was around a measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemLoad {
    /// `/proc/loadavg` when the measurement started.
    pub at_start: Source<LoadAverage>,
    /// `/proc/loadavg` when it ended (absent until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_end: Option<Source<LoadAverage>>,
    /// The busiest other processes over the measurement (see
    /// [`ProcessSample::competitors_since`]); unavailable until it ended.
    pub competing: Source<Vec<Competitor>>,
}

impl Default for SystemLoad {
    /// What a result saved by an older tlblab, which did not record the load, reads as.
    fn default() -> SystemLoad {
        let old = "not recorded (a result from an older tlblab)";
        SystemLoad {
            at_start: Source::unavailable(old),
            at_end: None,
            competing: Source::unavailable(old),
        }
    }
}

fn read_loadavg() -> Source<LoadAverage> {
    read_source("/proc/loadavg", "").and_then(|t| parse_loadavg(&t))
}

impl SystemLoad {
    /// The load now, as a measurement starts; [`SystemLoad::finish`] completes it.
    pub fn start() -> SystemLoad {
        SystemLoad {
            at_start: read_loadavg(),
            at_end: None,
            competing: Source::unavailable("the measurement did not finish"),
        }
    }

    /// Records the load at the end and the competitors since `start` (a sample taken when the
    /// measurement started, or why there is none).
    pub fn finish(&mut self, start: &Result<ProcessSample, String>) {
        self.at_end = Some(read_loadavg());
        self.competing = match (start, ProcessSample::take()) {
            (Ok(s), Ok(now)) => Source::Available(now.competitors_since(s, TOP_COMPETITORS)),
            (Err(e), _) => Source::unavailable(e.clone()),
            (_, Err(e)) => Source::unavailable(e),
        };
    }

    /// One line: the load at start (and end) and the competing processes.
    pub fn summary(&self) -> String {
        let mut out = format!("load average {}", self.at_start);
        if let Some(Source::Available(end)) = &self.at_end {
            out += &format!("; at the end {end}");
        }
        match &self.competing {
            Source::Available(c) if c.is_empty() => {
                out += &format!("; no other process used {MIN_COMPETITOR_PERCENT:.0}% of a CPU");
            }
            Source::Available(c) => {
                let list: Vec<String> = c
                    .iter()
                    .map(|p| format!("{} (pid {}) {:.0}%", p.comm, p.pid, p.cpu_percent))
                    .collect();
                out += &format!("; competing processes (% of a CPU): {}", list.join(", "));
            }
            Source::Unavailable { reason } => out += &format!("; competing processes: {reason}"),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_awkward_names() {
        let line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5";
        assert_eq!(parse_stat(line), Some(("a) b (c)".to_string(), 300)));
        assert_eq!(parse_stat("42 (short) S 1"), None);
    }

    #[test]
    fn competitors_are_the_busiest_others_over_the_interval() {
        let hz = clock_ticks_per_second() as u64;
        let at = Instant::now();
        let sample = |ticks: &[(u32, &str, u64)], at: Instant| ProcessSample {
            at,
            ticks: ticks.iter().map(|&(p, c, t)| (p, (c.to_string(), t))).collect(),
        };
        let before = sample(&[(1, "cc1", 0), (2, "tlblab", 0), (3, "sshd", 10)], at);
        let later = at + std::time::Duration::from_secs(2);
        // cc1 used 2 s of CPU in 2 s, tlblab 4 s (excluded), sshd nothing, make (new) 0.5 s.
        let after = sample(
            &[(1, "cc1", 2 * hz), (2, "tlblab", 4 * hz), (3, "sshd", 10), (4, "make", hz / 2)],
            later,
        );
        let c = after.competitors_since(&before, 5);
        let names: Vec<(&str, u32)> =
            c.iter().map(|p| (p.comm.as_str(), p.cpu_percent.round() as u32)).collect();
        assert_eq!(names, [("cc1", 100), ("make", 25)]);
        assert_eq!(after.competitors_since(&before, 1).len(), 1);
    }

    #[test]
    fn the_load_of_this_machine_reads() {
        let mut load = SystemLoad::start();
        assert!(load.at_start.is_available(), "{:?}", load.at_start);
        load.finish(&ProcessSample::take());
        assert!(load.competing.is_available(), "{:?}", load.competing);
        assert!(load.summary().starts_with("load average "), "{}", load.summary());
    }
}
