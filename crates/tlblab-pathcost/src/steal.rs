//! Steal time: the share of a guest's CPU time its host gave to something else, from
//! `/proc/stat`, sampled around a measurement so that the two are cached together.

use serde::{Deserialize, Serialize};

/// CPU time by kind, with the steal column.
pub const PROC_STAT_PATH: &str = "/proc/stat";

/// `/proc/stat`'s `cpu` line (all CPUs) sampled twice: what share of the CPU time the host took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StealSample {
    /// Milliseconds between the two samples.
    pub window_ms: u64,
    /// Steal ticks (`USER_HZ`) between them, all CPUs.
    pub steal_ticks: u64,
    /// Ticks of every kind between them (user to steal; guest time is inside user), all CPUs.
    pub total_ticks: u64,
}

impl StealSample {
    /// The share of the CPUs' time the host ran something else (0 to 1), if any time passed.
    pub fn share(&self) -> Option<f64> {
        (self.total_ticks > 0).then(|| self.steal_ticks as f64 / self.total_ticks as f64)
    }
}

/// `(steal, total)` ticks of `/proc/stat`'s aggregate `cpu` line: user, nice, system, idle,
/// iowait, irq, softirq, steal (guest and guest_nice are already in user and nice).
pub fn parse_proc_stat_cpu(text: &str) -> Result<(u64, u64), String> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or_else(|| format!("{PROC_STAT_PATH} has no aggregate cpu line"))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse::<u64>().map_err(|_| format!("{PROC_STAT_PATH}: {f:?} in {line:?}")))
        .collect::<Result<_, _>>()?;
    if fields.len() < 8 {
        return Err(format!("{PROC_STAT_PATH}: no steal column in {line:?} (before 2.6.11)"));
    }
    Ok((fields[7], fields.iter().sum()))
}

/// `(steal, total)` ticks now, or why they cannot be read.
pub fn read_steal() -> Result<(u64, u64), String> {
    let text = std::fs::read_to_string(PROC_STAT_PATH)
        .map_err(|e| format!("cannot read {PROC_STAT_PATH}: {e}"))?;
    parse_proc_stat_cpu(&text)
}

/// Runs `f`, sampling steal time before and after it.
pub fn around<T>(f: impl FnOnce() -> T) -> (T, Result<StealSample, String>) {
    let before = read_steal();
    let start = std::time::Instant::now();
    let out = f();
    let window_ms = start.elapsed().as_millis() as u64;
    let sample = before.and_then(|(steal0, total0)| {
        read_steal().map(|(steal1, total1)| StealSample {
            window_ms,
            steal_ticks: steal1.saturating_sub(steal0),
            total_ticks: total1.saturating_sub(total0),
        })
    });
    (out, sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_steal_is_the_eighth_column_of_the_cpu_line() {
        let text = "cpu  100 2 30 4000 5 6 7 80 9 10\ncpu0 50 1 15 2000 2 3 3 40 4 5\nintr 1\n";
        // guest and guest_nice (9, 10) are already in user and nice.
        assert_eq!(parse_proc_stat_cpu(text), Ok((80, 100 + 2 + 30 + 4000 + 5 + 6 + 7 + 80)));
        assert!(parse_proc_stat_cpu("cpu0 1 2 3\n").unwrap_err().contains("no aggregate"));
        assert!(parse_proc_stat_cpu("cpu 1 2 3 4 5 6 7\n").unwrap_err().contains("no steal"));
        let s = StealSample { window_ms: 1000, steal_ticks: 0, total_ticks: 0 };
        assert_eq!(s.share(), None);
    }
}
