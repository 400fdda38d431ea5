//! Progress of long steps on standard error: k/N and the time left. A bar is drawn only when
//! standard error is a terminal, so pipes, files and tests see nothing, and standard output
//! never depends on it. Under `tlblab study`, whose steps are child processes with a piped
//! standard error, a child reports its progress as lines that the parent turns into its bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Set (by `tlblab study`) in a child's environment: report progress as lines.
pub const LINES_ENV: &str = "TLBLAB_PROGRESS_LINES";

/// How such a line starts: `tlblab-progress K/N UNIT`.
pub const LINE_PREFIX: &str = "tlblab-progress ";

/// The style of every k/N bar.
pub fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} {prefix}, {elapsed}, ETA {eta}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// `K`, `N` and the unit from a progress line, if `line` is one.
pub fn parse_line(line: &str) -> Option<(u64, u64, &str)> {
    let rest = line.strip_prefix(LINE_PREFIX)?.trim();
    let (count, unit) = rest.split_once(' ').unwrap_or((rest, ""));
    let (k, n) = count.split_once('/')?;
    Some((k.parse().ok()?, n.parse().ok()?, unit))
}

/// The progress line of `k` of `n` `unit`s.
pub fn line(k: u64, n: u64, unit: &str) -> String {
    format!("{LINE_PREFIX}{k}/{n} {unit}")
}

/// A progress display counting `unit` (runs, schedules) of one step.
pub struct Progress {
    bar: ProgressBar,
    lines: bool,
    unit: String,
}

impl Progress {
    /// A display for `what`, counting `total` `unit`s (the total may be set later by
    /// [`Progress::set_total`]). Hidden when `quiet`.
    pub fn new(what: &str, unit: &str, total: u64, quiet: bool) -> Progress {
        let lines = !quiet && std::env::var_os(LINES_ENV).is_some();
        let target = if !quiet && !lines && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(bar_style());
        bar.set_message(what.to_string());
        bar.set_prefix(unit.to_string());
        Progress { bar, lines, unit: unit.to_string() }
    }

    /// Starts over, counting `total`.
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
        self.bar.reset();
    }

    /// Changes what the step is called.
    pub fn set_message(&self, what: &str) {
        self.bar.set_message(what.to_string());
    }

    /// One more finished.
    pub fn inc(&self) {
        self.bar.inc(1);
        if self.lines {
            let (k, n) = (self.bar.position(), self.bar.length().unwrap_or(0));
            eprintln!("{}", line(k, n, &self.unit));
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl tlblab_studies::Progress for Progress {
    fn start(&self, runs: u64) {
        self.set_total(runs);
    }

    fn finished(&self) {
        self.inc();
    }
}

impl tlblab_runs::Progress for Progress {
    fn start(&self, what: &str, total: u64) {
        self.set_message(what);
        self.set_total(total);
    }

    fn finished(&self) {
        self.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_parse_and_others_do_not() {
        assert_eq!(parse_line(&line(3, 40, "runs")), Some((3, 40, "runs")));
        assert_eq!(parse_line("tlblab-progress 3/40\n"), Some((3, 40, "")));
        assert_eq!(parse_line("tlblab: warning: tlblab-progress 3/40"), None);
        assert_eq!(parse_line("tlblab-progress x/40"), None);
    }
}
