//! Plain-language warnings (what may make the figures wrong) and notes (how to read them).

use super::schema::{Remote, Totals};
use crate::model::End;

/// Sends and receipts "differ" when the larger exceeds the smaller by more than this factor:
/// a few events at the trace's edges (a send just before the start whose receipt is traced, a
/// receipt after the stop) make small differences normal.
const DIFFER: f64 = 1.2;

fn differ(a: u64, b: u64) -> bool {
    let (lo, hi) = (a.min(b), a.max(b));
    hi > 0 && (lo == 0 || hi as f64 > lo as f64 * DIFFER)
}

/// `part` as a percentage of `whole`, with enough decimals that a small share is not shown as 0.
fn percent(part: u64, whole: u64) -> String {
    match part as f64 * 100.0 / whole as f64 {
        p if p > 0.0 && p < 0.1 => format!("{p:.3}%"),
        p => format!("{p:.1}%"),
    }
}

/// What may make the figures wrong.
/// The warning of a trace from a machine that may flush with AMD INVLPGB (its CPU shows the
/// `invlpgb` flag, its kernel is 6.15 or later): what `tlb:tlb_flush` cannot show there
/// (arch/x86/mm/tlb.c, 6.15+; docs/tracer.md).
pub const BROADCAST_FLUSH: &str = "this trace comes from a machine that may flush with AMD INVLPGB (the invlpgb CPU flag, Linux 6.15+): a process active on more than 3 CPUs at once gets a global ASID, and from then on its flushes are INVLPGB broadcasts that log no tlb:tlb_flush event at all (no reason 4, not even the initiator's own reason 3: broadcast_tlb_flush() has no tracepoint); while it moves to the global ASID its flushes still send IPIs (reason 4), but a CPU already on the global ASID returns before the tracepoint (no reason 1); a switch to it logs reason 0 with 0 pages, never a full flush, and a return from lazy mode to it logs nothing; batched reclaim flushes are one INVLPGB dropping every non-global translation, with no reason 2 or 4. Flush and IPI counts here are lower bounds for such processes, and the trace does not say which processes had a global ASID";

pub(crate) fn warnings(t: &Totals) -> Vec<String> {
    let mut out = Vec::new();
    let unknown: u64 = t.losses.iter().map(|l| l.pages_with_unknown_loss).sum();
    if t.lost_events > 0 || unknown > 0 {
        let per_cpu: Vec<String> = t
            .losses
            .iter()
            .filter(|l| l.events > 0 || l.pages_with_unknown_loss > 0)
            .map(|l| format!("CPU {}: {}", l.cpu, l.events))
            .collect();
        let mut w = format!(
            "{} events were lost ({}): every count in this report is a lower bound",
            t.lost_events,
            per_cpu.join(", ")
        );
        if unknown > 0 {
            w += &format!(
                "; {unknown} ring-buffer pages reported a loss without its size, so more were lost"
            );
        }
        out.push(w);
    }
    match &t.end {
        End::Complete => {}
        End::Interrupted { signal } => out.push(format!(
            "the recording was interrupted by {signal}: the trace holds what was read until then"
        )),
        End::Failed { error } => out.push(format!(
            "the recording failed ({error}): the trace holds what was read until then"
        )),
    }
    if t.records != t.records_in_trailer {
        out.push(format!(
            "the trailer says {} records were written but {} were summarised: the file may be \
             cut short",
            t.records_in_trailer, t.records
        ));
    }
    if t.out_of_order > 0 {
        out.push(format!(
            "{} records are earlier than the record before them (the trace is not in time \
             order); the rate table counts records earlier than the first one in its first bucket",
            t.out_of_order
        ));
    }
    out
}

/// How to read sends against receipts.
pub(crate) fn remote(r: &Remote, flush_events: u64, only_command: bool) -> Vec<String> {
    let mut out = Vec::new();
    if flush_events == 0 {
        out.push("the trace has no tlb_flush events".to_string());
        return out;
    }
    let (s, rc) = (r.sends, r.received);
    if differ(s, rc) && s > rc {
        out.push(format!(
            "{s} remote flush requests (reason 4) but {rc} shootdowns received (reason 1), \
             {} of the requests: reason 4 fires in native_flush_tlb_multi() before any IPI is \
             sent, also when none is. CPUs in lazy TLB mode are skipped, and under KVM \
             paravirtual flush the host flushes preempted vCPUs itself, without an IPI. Reason 1 \
             (or the TLB row of /proc/interrupts) counts the shootdown IPIs actually handled.",
            percent(rc, s)
        ));
    } else if s == 0 && rc > 0 {
        out.push(format!(
            "{rc} shootdowns received (reason 1) but no remote flush requests (reason 4): the \
             senders were not traced (outside the trace's pid filter, e.g. --only-cmd) or their \
             events were lost"
        ));
    } else if differ(s, rc) {
        out.push(format!(
            "{rc} shootdowns received (reason 1) for {s} remote flush requests (reason 4), {:.2} \
             per request: one request asks every other CPU running the mm, so it can be received \
             several times; requests from senders outside the trace also count",
            rc as f64 / s as f64
        ));
    }
    if r.wrong_cpu > 0 {
        out.push(format!(
            "{} requests (reason 5) reached a CPU that had switched to another mm by then and \
             flushed nothing ({} of the requests received, reasons 1 and 5)",
            r.wrong_cpu,
            percent(r.wrong_cpu, r.wrong_cpu + rc)
        ));
    }
    if let Some(tlb) = r.interrupts.as_ref().and_then(|i| i.tlb) {
        let traced = rc + r.wrong_cpu;
        if tlb > traced && differ(tlb, traced) {
            let mut n = format!(
                "the kernel counted {tlb} flush requests handled from other CPUs (TLB row of \
                 /proc/interrupts) but the trace has {traced} (reasons 1 and 5): a request that \
                 finds nothing to do (the CPU idle in init_mm, or already up to date) leaves no \
                 event, and a lazy CPU switches mm instead (reason 0)"
            );
            if only_command {
                n += "; with only the command traced, receipts that interrupted other tasks are \
                      filtered out";
            }
            out.push(n + "; lost events also count");
        } else if differ(tlb, traced) {
            out.push(format!(
                "the trace has {traced} received requests (reasons 1 and 5) but the kernel \
                 counted only {tlb} (TLB row of /proc/interrupts): the counts were read at other \
                 moments than the trace's start and end, or the row counts something else on \
                 this kernel"
            ));
        }
    }
    if let Some(ipi) = &r.ipi {
        out.push(format!(
            "ipi:ipi_send_* recorded {} sends asking for {} target CPUs; these are all IPIs \
             (reschedule and every function call), not only TLB shootdowns",
            ipi.send_records, ipi.targets
        ));
        if ipi.targets < rc {
            out.push(format!(
                "fewer IPI targets ({}) than shootdowns received ({rc}): IPI events are \
                 missing (lost, or sent by tasks outside the trace's pid filter)",
                ipi.targets
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differ_needs_more_than_a_fifth() {
        assert!(!differ(0, 0));
        assert!(!differ(10, 10));
        assert!(!differ(10, 12));
        assert!(differ(10, 13));
        assert!(differ(0, 1));
        assert!(differ(100, 24));
    }

    #[test]
    fn small_shares_keep_their_digits() {
        assert_eq!(percent(24, 100), "24.0%");
        assert_eq!(percent(1, 7032), "0.014%");
        assert_eq!(percent(0, 5), "0.0%");
    }
}
