//! Page faults and context switches of the measuring process and its children (`getrusage(2)`).
//!
//! `RUSAGE_SELF` sums over all threads of the process, so a multi-threaded scenario is covered.
//! `RUSAGE_CHILDREN` covers only children that have terminated and been waited for; for children
//! that are still alive (a benchmark's worker processes between runs) read
//! [`ProcessCounters::of_pid`], which takes the same counts from `/proc/<pid>`.

use crate::error::counter_delta;
use crate::Error;
use nix::libc::c_long as libc_long;
use nix::sys::resource::{getrusage, Usage, UsageWho};
use serde::{Deserialize, Serialize};

/// Fault and switch counts of one `getrusage` scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessCounters {
    /// `ru_minflt`: faults served without I/O (including first touches of anonymous memory).
    pub minor_faults: u64,
    /// `ru_majflt`: faults that needed I/O.
    pub major_faults: u64,
    /// `ru_nvcsw`: switches because the task blocked or yielded.
    pub voluntary_switches: u64,
    /// `ru_nivcsw`: switches because the task was preempted.
    pub involuntary_switches: u64,
}

impl ProcessCounters {
    fn from_usage(u: &Usage) -> Self {
        // The kernel fills these from unsigned counters; a negative value cannot occur.
        fn n(v: libc_long) -> u64 {
            u64::try_from(v).unwrap_or(0)
        }
        ProcessCounters {
            minor_faults: n(u.minor_page_faults()),
            major_faults: n(u.major_page_faults()),
            voluntary_switches: n(u.voluntary_context_switches()),
            involuntary_switches: n(u.involuntary_context_switches()),
        }
    }

    /// The counts of a live process, all its threads included: faults from `/proc/<pid>/stat`
    /// (fields 10 and 12, which the kernel sums over the thread group), switches summed over
    /// `/proc/<pid>/task/*/status`. The same counters `getrusage` reports.
    pub fn of_pid(pid: u32) -> Result<Self, Error> {
        let dir = std::path::PathBuf::from(format!("/proc/{pid}"));
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path)
                .map_err(|source| Error::Io { path: path.to_owned(), source })
        };
        let stat_path = dir.join("stat");
        let (minor_faults, major_faults) =
            parse_stat_faults(&read(&stat_path)?).map_err(|message| Error::Parse {
                what: stat_path.display().to_string(),
                line: 1,
                message,
            })?;
        let mut counts = ProcessCounters { minor_faults, major_faults, ..Self::default() };
        let tasks = dir.join("task");
        let entries = std::fs::read_dir(&tasks)
            .map_err(|source| Error::Io { path: tasks.clone(), source })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io { path: tasks.clone(), source })?;
            let status_path = entry.path().join("status");
            // A thread that exited since the listing has nothing left to count.
            let Ok(text) = std::fs::read_to_string(&status_path) else { continue };
            let (v, n) = parse_status_switches(&text).map_err(|(line, message)| Error::Parse {
                what: status_path.display().to_string(),
                line,
                message,
            })?;
            counts.voluntary_switches += v;
            counts.involuntary_switches += n;
        }
        Ok(counts)
    }

    /// Field-by-field sum (a process and its children).
    pub fn plus(&self, other: &Self) -> Self {
        ProcessCounters {
            minor_faults: self.minor_faults + other.minor_faults,
            major_faults: self.major_faults + other.major_faults,
            voluntary_switches: self.voluntary_switches + other.voluntary_switches,
            involuntary_switches: self.involuntary_switches + other.involuntary_switches,
        }
    }

    /// `after - before`, field by field; `scope` names the counters in errors.
    pub fn delta(scope: &str, before: &Self, after: &Self) -> Result<Self, Error> {
        let d = |name: &str, b, a| counter_delta(&format!("{scope} {name}"), b, a);
        Ok(ProcessCounters {
            minor_faults: d("minor_faults", before.minor_faults, after.minor_faults)?,
            major_faults: d("major_faults", before.major_faults, after.major_faults)?,
            voluntary_switches: d(
                "voluntary_switches",
                before.voluntary_switches,
                after.voluntary_switches,
            )?,
            involuntary_switches: d(
                "involuntary_switches",
                before.involuntary_switches,
                after.involuntary_switches,
            )?,
        })
    }
}

/// `minflt` and `majflt` of a `/proc/<pid>/stat` line. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat_faults(line: &str) -> Result<(u64, u64), String> {
    let rest = line.rsplit_once(')').map(|(_, r)| r).ok_or("no \")\" after the command name")?;
    // After the name: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9)
    // minflt(10) cminflt(11) majflt(12).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        let text = fields.get(n - 3).ok_or(format!("no field {n}"))?;
        text.parse().map_err(|_| format!("field {n} is {text:?}, not a count"))
    };
    Ok((field(10)?, field(12)?))
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a `/proc/<pid>/status`;
/// errors carry the 1-based line.
fn parse_status_switches(text: &str) -> Result<(u64, u64), (usize, String)> {
    let (mut voluntary, mut involuntary) = (None, None);
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let slot = match key {
            "voluntary_ctxt_switches" => &mut voluntary,
            "nonvoluntary_ctxt_switches" => &mut involuntary,
            _ => continue,
        };
        let value = value.trim();
        *slot = Some(value.parse().map_err(|_| (i + 1, format!("{key} is {value:?}")))?);
    }
    match (voluntary, involuntary) {
        (Some(v), Some(n)) => Ok((v, n)),
        _ => Err((0, "no voluntary_ctxt_switches / nonvoluntary_ctxt_switches lines".into())),
    }
}

/// The process's own counters (all threads) and those of its waited-for children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RusageSnapshot {
    /// `RUSAGE_SELF`.
    pub process: ProcessCounters,
    /// `RUSAGE_CHILDREN`.
    pub children: ProcessCounters,
}

impl RusageSnapshot {
    /// Calls `getrusage` for both scopes.
    pub fn read() -> Result<Self, Error> {
        let get = |who, name: &str| {
            getrusage(who).map_err(|e| Error::Syscall {
                call: format!("getrusage({name})"),
                source: e.into(),
            })
        };
        Ok(RusageSnapshot {
            process: ProcessCounters::from_usage(&get(UsageWho::RUSAGE_SELF, "RUSAGE_SELF")?),
            children: ProcessCounters::from_usage(&get(
                UsageWho::RUSAGE_CHILDREN,
                "RUSAGE_CHILDREN",
            )?),
        })
    }

    /// `after - before` for both scopes.
    pub fn delta(before: &Self, after: &Self) -> Result<Self, Error> {
        Ok(RusageSnapshot {
            process: ProcessCounters::delta("process", &before.process, &after.process)?,
            children: ProcessCounters::delta("children", &before.children, &after.children)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        // A command name with a space and a ')' in it, as proc(5) warns.
        let line = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 1234 99 7 0 5 3 0 0 20 0 1 0";
        assert_eq!(parse_stat_faults(line), Ok((1234, 7)));
        assert!(parse_stat_faults("4242 (x) S 1 2").unwrap_err().contains("no field 10"));
        assert!(parse_stat_faults("no parenthesis").is_err());
    }

    #[test]
    fn status_switches() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_status_switches(text), Ok((17, 3)));
        let bad = "voluntary_ctxt_switches:\tmany\n";
        assert_eq!(parse_status_switches(bad).unwrap_err().0, 1);
        assert!(parse_status_switches("Name: x\n").is_err());
    }

    #[test]
    fn own_process_counts_match_getrusage() {
        let pid = std::process::id();
        let before = RusageSnapshot::read().unwrap().process;
        let proc = ProcessCounters::of_pid(pid).unwrap();
        let after = RusageSnapshot::read().unwrap().process;
        // The same kernel counters, read between two getrusage calls.
        assert!((before.minor_faults..=after.minor_faults).contains(&proc.minor_faults));
        assert!(proc.voluntary_switches + proc.involuntary_switches > 0);
        assert!(ProcessCounters::of_pid(u32::MAX).is_err());
    }
}
