//! A trace as ftrace text (`tlblab trace dump`): one line per event in the layout of the
//! kernel's `trace` file, so that existing scripts and `tlblab trace import` read it back.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::model::{Header, Record, Switch};
use tlblab_types::escape::{escape, escape_lines};

/// Formats records as ftrace `trace` lines, naming threads from the trace's task records.
#[derive(Debug, Default)]
pub struct FtraceText {
    comms: HashMap<i32, String>,
    reason_labels: HashMap<i32, String>,
}

/// The kernel's `prev_state` letters (`TASK_REPORT` bits in `sched_switch`'s print fmt, 6.18):
/// bit 0 S, 1 D, 2 T, 3 t, 4 X, 5 Z, 6 P, 7 I; none of them is R; the bit after the last one
/// (`TASK_REPORT_MAX`) adds `+` (preempted).
const STATE_LETTERS: [char; 8] = ['S', 'D', 'T', 't', 'X', 'Z', 'P', 'I'];

impl FtraceText {
    /// A formatter for a trace with this header.
    pub fn new(header: &Header) -> FtraceText {
        let reason_labels =
            (0..=5).chain(header.reason_names.keys().copied()).map(|r| (r, header.reason_label(r)));
        FtraceText { comms: HashMap::new(), reason_labels: reason_labels.collect() }
    }

    /// The comment lines that start the text: where the trace came from, and the column heads.
    pub fn preamble(header: &Header) -> String {
        let mut s = String::from("# tracer: nop\n#\n");
        let _ = writeln!(
            s,
            "# tlblab flush trace ({:?}), kernel {}, host {}, clock {}, CPUs {:?}",
            header.origin,
            header.kernel_release.as_deref().unwrap_or("unknown"),
            header.hostname.as_deref().unwrap_or("unknown"),
            header.clock,
            header.cpus
        );
        s.push_str("#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n");
        s.push_str("#              | |         |         |         |\n");
        escape_lines(&s).into_owned()
    }

    /// The line of one record. A task record, which is not an event, becomes a comment (and
    /// its name is used on later lines). Control characters from the trace (in task names and
    /// reason labels) are escaped: the line goes to a terminal, and stays one line.
    pub fn line(&mut self, record: &Record) -> String {
        let line = self.raw_line(record);
        match escape(&line) {
            std::borrow::Cow::Borrowed(_) => line,
            escaped => escaped.into_owned(),
        }
    }

    fn raw_line(&mut self, record: &Record) -> String {
        match record {
            Record::Task(t) => {
                self.comms.insert(t.pid, t.comm.clone());
                format!("# task pid={} tgid={} comm={}", t.pid, t.tgid, t.comm)
            }
            Record::Flush(f) => {
                let label = self.reason_labels.get(&f.reason).cloned().unwrap_or_default();
                self.event(
                    f.pid,
                    f.cpu,
                    f.ts_ns,
                    "tlb_flush",
                    &format!("pages:{} reason:{label} ({})", f.pages, f.reason),
                )
            }
            Record::Switch(s) => {
                let body = self.switch_body(s);
                self.event(s.prev_pid, s.cpu, s.ts_ns, "sched_switch", &body)
            }
            Record::IpiSend(i) => {
                let body = if i.targets.len() == 1 {
                    format!("cpu={} callback={:#x}", i.targets[0], i.callback)
                } else {
                    let cpus: Vec<String> = i.targets.iter().map(u32::to_string).collect();
                    format!("cpumask={} callback={:#x}", cpus.join(","), i.callback)
                };
                let name = if i.targets.len() == 1 { "ipi_send_cpu" } else { "ipi_send_cpumask" };
                self.event(i.pid, i.cpu, i.ts_ns, name, &body)
            }
            Record::CallFunction(c) => {
                let name = format!(
                    "call_function{}_{}",
                    if c.single { "_single" } else { "" },
                    if c.entry { "entry" } else { "exit" }
                );
                self.event(c.pid, c.cpu, c.ts_ns, &name, &format!("vector={}", c.vector))
            }
            Record::Other(o) => {
                self.event(o.pid, o.cpu, o.ts_ns, "event", &format!("id={}", o.event_id))
            }
        }
    }

    fn comm(&self, pid: i32) -> &str {
        match self.comms.get(&pid) {
            Some(c) => c,
            None if pid == 0 => "<idle>",
            None => "<...>",
        }
    }

    fn switch_body(&self, s: &Switch) -> String {
        let report = s.prev_state & 0xff;
        let mut state: String = STATE_LETTERS
            .iter()
            .enumerate()
            .filter(|(bit, _)| report & (1 << bit) != 0)
            .map(|(_, c)| *c)
            .collect();
        if state.is_empty() {
            state.push('R');
        }
        if s.prev_state & 0x100 != 0 {
            state.push('+');
        }
        format!(
            "prev_comm={} prev_pid={} prev_state={state} ==> next_comm={} next_pid={}",
            self.comm(s.prev_pid),
            s.prev_pid,
            self.comm(s.next_pid),
            s.next_pid
        )
    }

    fn event(&self, pid: i32, cpu: u32, ts_ns: u64, name: &str, body: &str) -> String {
        let task = format!("{}-{pid}", self.comm(pid));
        format!(
            "{task:>16} [{cpu:03}] {:>6}.{:09}: {name}: {body}",
            ts_ns / 1_000_000_000,
            ts_ns % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flush, Origin, Task};

    #[test]
    fn a_flush_prints_as_the_kernel_prints_it() {
        let mut h = Header::new(Origin::Recorded);
        h.reason_names.insert(1, "remote shootdown".into());
        let mut t = FtraceText::new(&h);
        t.line(&Record::Task(Task { ts_ns: 0, pid: 12896, tgid: 12895, comm: "mt_madv".into() }));
        let flush = Flush { ts_ns: 532_678_034_123, cpu: 1, pid: 12896, reason: 1, pages: -1 };
        assert_eq!(
            t.line(&Record::Flush(flush)),
            "   mt_madv-12896 [001]    532.678034123: tlb_flush: pages:-1 reason:remote shootdown (1)"
        );
        // Unlabelled reasons get the 6.18 label.
        let five = Flush { reason: 5, pages: 0, ..flush };
        assert!(t.line(&Record::Flush(five)).ends_with("pages:0 reason:remote wrong CPU (5)"));
    }

    #[test]
    fn switch_states_use_the_kernel_letters() {
        let t = FtraceText::new(&Header::new(Origin::Recorded));
        let s = |prev_state| Switch { ts_ns: 1, cpu: 0, prev_pid: 7, prev_state, next_pid: 0 };
        assert!(t.switch_body(&s(0)).contains("prev_state=R ==>"));
        assert!(t.switch_body(&s(0x100)).contains("prev_state=R+ ==>"));
        assert!(t.switch_body(&s(1)).contains("prev_state=S ==>"));
        assert!(t.switch_body(&s(0x80)).contains("prev_state=I ==>"));
        assert!(t.switch_body(&s(2)).ends_with("next_comm=<idle> next_pid=0"));
    }
}
