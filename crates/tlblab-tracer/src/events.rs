//! Which events a recording enables: `tlb` always; `sched` and `ipi` on request; the task
//! events that name processes always (they are rare).

use tlblab_tracefs::EventName;

/// A group of events named on the command line (`--events tlb,sched,ipi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventGroup {
    /// `tlb:tlb_flush`.
    Tlb,
    /// `sched:sched_switch`.
    Sched,
    /// `ipi:ipi_send_cpu`, `ipi:ipi_send_cpumask` and `irq_vectors:call_function*`.
    Ipi,
}

impl EventGroup {
    /// Parses `tlb`, `sched` or `ipi`.
    pub fn parse(name: &str) -> Result<EventGroup, String> {
        match name {
            "tlb" => Ok(EventGroup::Tlb),
            "sched" => Ok(EventGroup::Sched),
            "ipi" => Ok(EventGroup::Ipi),
            _ => Err(format!("unknown event group {name:?} (known: tlb, sched, ipi)")),
        }
    }
}

/// The events of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSet {
    /// Events that must exist (a kernel without them cannot be traced).
    pub required: Vec<EventName>,
    /// Events enabled when the kernel has them.
    pub optional: Vec<EventName>,
}

impl EventSet {
    /// `tlb:tlb_flush` plus the groups asked for, plus `task:task_newtask` and
    /// `sched:sched_process_exec` (so that threads created during the recording get their
    /// process even if they are gone before the reader could look at `/proc`).
    pub fn of(groups: &[EventGroup]) -> EventSet {
        let ev = |s: &str, n: &str| EventName { system: s.into(), name: n.into() };
        let mut required = vec![EventName::tlb_flush()];
        let mut optional = vec![ev("task", "task_newtask"), ev("sched", "sched_process_exec")];
        if groups.contains(&EventGroup::Sched) {
            required.push(ev("sched", "sched_switch"));
        }
        if groups.contains(&EventGroup::Ipi) {
            // ipi_send_* exist since 6.3; older kernels have only the call-function events.
            optional.extend([ev("ipi", "ipi_send_cpu"), ev("ipi", "ipi_send_cpumask")]);
            for name in [
                "call_function_entry",
                "call_function_exit",
                "call_function_single_entry",
                "call_function_single_exit",
            ] {
                optional.push(ev("irq_vectors", name));
            }
        }
        EventSet { required, optional }
    }
}
