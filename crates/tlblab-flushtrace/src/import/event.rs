//! The bodies of the events the importer decodes: `tlb:tlb_flush`, `sched:sched_switch`,
//! `ipi:ipi_send_cpu` and `ipi:ipi_send_cpumask`.

use super::num::{
    dec_i32, dec_i64, dec_u32, field, find, hex_digits, hex_u64, is_space, long_value, rfind, trim,
};
use super::LineProblem;
use crate::model::reason;

/// The events decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EventKind {
    /// `tlb:tlb_flush`.
    TlbFlush,
    /// `sched:sched_switch`.
    SchedSwitch,
    /// `ipi:ipi_send_cpu`.
    IpiSendCpu,
    /// `ipi:ipi_send_cpumask`.
    IpiSendCpumask,
    /// `irq_vectors:call_function{,_single}_{entry,exit}`.
    CallFunction {
        /// `_entry` (else `_exit`).
        entry: bool,
        /// `call_function_single_*`.
        single: bool,
    },
}

impl EventKind {
    /// The kind of an event name as printed: bare (ftrace) or `system:name` (perf).
    pub(super) fn of(name: &[u8]) -> Option<EventKind> {
        let (system, name) = match name.iter().rposition(|&b| b == b':') {
            Some(c) => (Some(&name[..c]), &name[c + 1..]),
            None => (None, name),
        };
        let (want, kind) = match name {
            b"tlb_flush" => (&b"tlb"[..], EventKind::TlbFlush),
            b"sched_switch" => (&b"sched"[..], EventKind::SchedSwitch),
            b"ipi_send_cpu" => (&b"ipi"[..], EventKind::IpiSendCpu),
            b"ipi_send_cpumask" => (&b"ipi"[..], EventKind::IpiSendCpumask),
            b"call_function_entry"
            | b"call_function_exit"
            | b"call_function_single_entry"
            | b"call_function_single_exit" => (
                &b"irq_vectors"[..],
                EventKind::CallFunction {
                    entry: name.ends_with(b"_entry"),
                    single: name.starts_with(b"call_function_single"),
                },
            ),
            _ => return None,
        };
        system.is_none_or(|s| s == want).then_some(kind)
    }
}

/// A decoded `tlb_flush` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FlushBody<'a> {
    /// `pages`.
    pub pages: i64,
    /// `reason` as an integer.
    pub reason: i32,
    /// The reason's label as printed, when it is a name (not empty, not the kernel's `0x..`
    /// fallback for a value without a name).
    pub label: Option<&'a [u8]>,
}

/// Known spellings of reasons, for bodies that print no integer; compared case-insensitively.
/// 6.18 names first, then the pre-2025 spellings (`local mm shootdown`, `remote ipi send`).
pub const REASON_SPELLINGS: [(&str, i32); 8] = [
    ("flush on task switch", reason::TASK_SWITCH),
    ("remote shootdown", reason::REMOTE_SHOOTDOWN),
    ("local shootdown", reason::LOCAL_SHOOTDOWN),
    ("local MM shootdown", reason::LOCAL_MM_SHOOTDOWN),
    ("remote IPI send", reason::REMOTE_SEND_IPI),
    ("remote wrong CPU", reason::REMOTE_WRONG_CPU),
    ("local mm shootdown", reason::LOCAL_MM_SHOOTDOWN),
    ("remote ipi send", reason::REMOTE_SEND_IPI),
];

/// `pages:%ld reason:%s (%d)`; also libtraceevent's raw dump `reason=N pages=0x..` when it
/// could not parse the print format.
pub(super) fn tlb_flush(body: &[u8]) -> Result<FlushBody<'_>, LineProblem> {
    const EV: &str = "tlb_flush";
    let pages = field(body, b"pages:")
        .or_else(|| field(body, b"pages="))
        .ok_or(LineProblem::MissingField { event: EV, field: "pages:" })?;
    let pages = long_value(pages).ok_or(LineProblem::BadNumber { event: EV, field: "pages" })?;
    let text = match find(body, b"reason:") {
        Some(at) => trim(&body[at + 7..]),
        None => field(body, b"reason=")
            .ok_or(LineProblem::MissingField { event: EV, field: "reason:" })?,
    };
    // The integer in parentheses is the truth; the label only names it.
    if let Some(inner) = text.strip_suffix(b")") {
        if let Some(open) = inner.iter().rposition(|&b| b == b'(') {
            let reason = dec_i32(trim(&inner[open + 1..]))
                .ok_or(LineProblem::BadNumber { event: EV, field: "reason" })?;
            let label = trim(&inner[..open]);
            let named = !label.is_empty() && hex_u64(label).is_none() && dec_i64(label).is_none();
            return Ok(FlushBody { pages, reason, label: named.then_some(label) });
        }
    }
    // No parentheses: a bare number (`reason=5`, `reason:0x5`), else a known spelling.
    if let Some(v) = dec_i32(text).or_else(|| hex_u64(text).and_then(|v| i32::try_from(v).ok())) {
        return Ok(FlushBody { pages, reason: v, label: None });
    }
    let spelled = REASON_SPELLINGS
        .iter()
        .find(|(s, _)| s.as_bytes().eq_ignore_ascii_case(text))
        .map(|&(_, r)| r)
        .ok_or_else(|| LineProblem::UnknownReason(String::from_utf8_lossy(text).into_owned()))?;
    Ok(FlushBody { pages, reason: spelled, label: Some(text) })
}

/// A decoded `sched_switch` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SwitchBody<'a> {
    pub prev_comm: &'a [u8],
    pub prev_pid: i32,
    pub prev_state: i64,
    pub next_comm: &'a [u8],
    pub next_pid: i32,
}

/// `prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d
/// next_prio=%d`. Comms may hold spaces, so each is what lies between its key and the last
/// ` prev_pid=` / ` next_pid=` of its half.
pub(super) fn sched_switch(body: &[u8]) -> Result<SwitchBody<'_>, LineProblem> {
    const EV: &str = "sched_switch";
    let missing = |field| LineProblem::MissingField { event: EV, field };
    let arrow = find(body, b" ==> ").ok_or(missing("==>"))?;
    let (prev, next) = (&body[..arrow], &body[arrow + 5..]);
    let (prev_comm, prev_pid) =
        comm_and_pid(prev, b"prev_comm=", b" prev_pid=").ok_or(missing("prev_pid="))?;
    let (next_comm, next_pid) =
        comm_and_pid(next, b"next_comm=", b" next_pid=").ok_or(missing("next_pid="))?;
    let prev_pid =
        dec_i32(prev_pid).ok_or(LineProblem::BadNumber { event: EV, field: "prev_pid" })?;
    let next_pid =
        dec_i32(next_pid).ok_or(LineProblem::BadNumber { event: EV, field: "next_pid" })?;
    let state = field(prev, b" prev_state=").ok_or(missing("prev_state="))?;
    Ok(SwitchBody { prev_comm, prev_pid, prev_state: task_state(state)?, next_comm, next_pid })
}

/// (comm, pid digits) of one half of a sched_switch body.
fn comm_and_pid<'a>(
    half: &'a [u8],
    comm_key: &[u8],
    pid_key: &[u8],
) -> Option<(&'a [u8], &'a [u8])> {
    let comm_at = find(half, comm_key)? + comm_key.len();
    let pid_at = rfind(half, pid_key)?;
    let comm = half.get(comm_at..pid_at)?;
    let rest = &half[pid_at + pid_key.len()..];
    let end = rest.iter().position(|&b| is_space(b)).unwrap_or(rest.len());
    Some((comm, &rest[..end]))
}

/// `prev_state` as the kernel's integer: the table and the pre-4.14 letters are in the
/// [module docs](super).
pub(super) fn task_state(text: &[u8]) -> Result<i64, LineProblem> {
    let unknown = || LineProblem::UnknownTaskState(String::from_utf8_lossy(text).into_owned());
    if let Some(v) = hex_u64(text) {
        return i64::try_from(v).map_err(|_| unknown());
    }
    if let Some(v) = dec_i32(text) {
        return Ok(i64::from(v));
    }
    let text_no_plus = text.strip_suffix(b"+").unwrap_or(text);
    if text_no_plus.is_empty() {
        return Err(unknown());
    }
    let mut state = 0i64;
    let mut noload = false;
    for part in text_no_plus.split(|&b| b == b'|') {
        for &letter in part {
            state |= match letter {
                b'R' | b'K' | b'W' => 0,
                b'S' => 0x01,
                b'D' => 0x02,
                b'T' => 0x04,
                b't' => 0x08,
                b'X' | b'x' => 0x10,
                b'Z' => 0x20,
                b'P' => 0x40,
                b'I' => 0x80,
                b'N' => {
                    noload = true;
                    0
                }
                _ => return Err(unknown()),
            };
        }
        if part.is_empty() {
            return Err(unknown());
        }
    }
    if noload && state & 0x02 != 0 {
        state = (state & !0x02) | 0x80;
    }
    if text.ends_with(b"+") {
        state |= TASK_REPORT_MAX;
    }
    Ok(state)
}

/// What the kernel stores as `prev_state` for a preempted task (`TASK_REPORT_MAX`, 4.14+: the
/// bit after the report bits), printed as `R+`.
const TASK_REPORT_MAX: i64 = 0x100;

/// The `vector=N` of a call-function body.
pub(super) fn call_function_vector(body: &[u8]) -> Result<i32, LineProblem> {
    const EV: &str = "call_function";
    let v =
        field(body, b"vector=").ok_or(LineProblem::MissingField { event: EV, field: "vector=" })?;
    dec_i32(v).ok_or(LineProblem::BadNumber { event: EV, field: "vector" })
}

/// A decoded IPI-send body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IpiBody<'a> {
    pub targets: Vec<u32>,
    /// The callback's address when printed as one (`0x0`, or a `%pS` that found no symbol).
    pub callback: Option<u64>,
    /// The callback as printed, when it is a symbol (`flush_tlb_func+0x0/0x2e0`): the address
    /// is not in the text.
    pub callback_symbol: Option<&'a [u8]>,
}

/// CPUs past this are refused (x86's `NR_CPUS` tops out at 8192), so that a corrupt range
/// cannot ask for billions of entries.
pub const MAX_CPU: u32 = 65_535;

/// `cpu=%u callsite=%pS callback=%pS`.
pub(super) fn ipi_send_cpu(body: &[u8]) -> Result<IpiBody<'_>, LineProblem> {
    const EV: &str = "ipi_send_cpu";
    let cpu = field(body, b"cpu=").ok_or(LineProblem::MissingField { event: EV, field: "cpu=" })?;
    let cpu = dec_u32(cpu)
        .filter(|&c| c <= MAX_CPU)
        .ok_or(LineProblem::BadNumber { event: EV, field: "cpu" })?;
    Ok(with_callback(body, vec![cpu]))
}

/// `cpumask=%s callsite=%pS callback=%pS`.
pub(super) fn ipi_send_cpumask(body: &[u8]) -> Result<IpiBody<'_>, LineProblem> {
    const EV: &str = "ipi_send_cpumask";
    let mask = field(body, b"cpumask=")
        .ok_or(LineProblem::MissingField { event: EV, field: "cpumask=" })?;
    let targets = cpu_set(mask).ok_or(LineProblem::BadCpuList(EV))?;
    Ok(with_callback(body, targets))
}

fn with_callback(body: &[u8], targets: Vec<u32>) -> IpiBody<'_> {
    let printed = field(body, b"callback=");
    let callback = printed.and_then(hex_u64);
    IpiBody {
        targets,
        callback,
        callback_symbol: printed.filter(|p| callback.is_none() && !p.is_empty()),
    }
}

/// A cpumask as printed: the kernel's default `%*pb` hex bitmap (32-bit groups of 8 hex
/// digits, most significant first, comma-separated: `00000000,00000003`), or the `%*pbl` list
/// (`0-1,3`) of the `bitmask-list` trace option. Every group being 8 hex digits decides hex;
/// anything else is read as a list. Empty: no CPU.
pub(super) fn cpu_set(text: &[u8]) -> Option<Vec<u32>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let groups = text.split(|&b| b == b',');
    let hex = groups.clone().all(|g| g.len() == 8 && g.iter().all(u8::is_ascii_hexdigit));
    let mut cpus = Vec::new();
    if hex {
        let n = groups.clone().count();
        if n * 32 > MAX_CPU as usize + 1 {
            return None;
        }
        for (i, g) in groups.enumerate() {
            let word = hex_digits(g)?;
            let base = ((n - 1 - i) * 32) as u32;
            cpus.extend((0..32).filter(|b| word >> b & 1 == 1).map(|b| base + b));
        }
        cpus.sort_unstable();
        return Some(cpus);
    }
    for g in groups {
        let (lo, hi) = match g.iter().position(|&b| b == b'-') {
            Some(d) => (dec_u32(&g[..d])?, dec_u32(&g[d + 1..])?),
            None => (dec_u32(g)?, dec_u32(g)?),
        };
        if lo > hi || hi > MAX_CPU || cpus.last().is_some_and(|&l| lo <= l) {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flush(body: &str) -> (i64, i32, Option<String>) {
        let b = tlb_flush(body.as_bytes()).unwrap();
        (b.pages, b.reason, b.label.map(|l| String::from_utf8_lossy(l).into_owned()))
    }

    #[test]
    fn every_reason_spelling() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(flush("pages:1 reason:remote shootdown (1)"), (1, 1, some("remote shootdown")));
        assert_eq!(
            flush("pages:-1 reason:flush on task switch (0)"),
            (-1, 0, some("flush on task switch"))
        );
        assert_eq!(
            flush("pages:0 reason:local mm shootdown (3)"),
            (0, 3, some("local mm shootdown"))
        );
        assert_eq!(flush("pages:2 reason:remote ipi send (4)"), (2, 4, some("remote ipi send")));
        assert_eq!(flush("pages:0 reason:remote wrong CPU (5)"), (0, 5, some("remote wrong CPU")));
        // Reason 5 before the enum fix: the kernel's `0x%lx` fallback, or nothing.
        assert_eq!(flush("pages:0 reason:0x5 (5)"), (0, 5, None));
        assert_eq!(flush("pages:0 reason: (5)"), (0, 5, None));
        assert_eq!(flush("pages:0 reason:5 (5)"), (0, 5, None));
        // Keyed on the integer even when the label disagrees.
        assert_eq!(flush("pages:0 reason:remote shootdown (4)"), (0, 4, some("remote shootdown")));
        // No integer at all: known spellings, case-insensitive; bare numbers.
        assert_eq!(flush("pages:7 reason:Remote IPI Send"), (7, 4, some("Remote IPI Send")));
        assert_eq!(flush("pages:7 reason:0x5"), (7, 5, None));
        assert_eq!(flush("[FAILED TO PARSE] reason=5 pages=0x0"), (0, 5, None));
        assert_eq!(flush("[FAILED TO PARSE] reason=4 pages=0xffffffffffffffff"), (-1, 4, None));
        // Large pages.
        assert_eq!(flush("pages:262144 reason:remote IPI send (4)").0, 262_144);
        assert_eq!(flush("pages:9223372036854775807 reason:local shootdown (2)").0, i64::MAX);
    }

    #[test]
    fn reason_errors() {
        let err = |b: &str| tlb_flush(b.as_bytes()).unwrap_err();
        assert_eq!(
            err("reason:remote shootdown (1)"),
            LineProblem::MissingField { event: "tlb_flush", field: "pages:" }
        );
        assert_eq!(
            err("pages:1"),
            LineProblem::MissingField { event: "tlb_flush", field: "reason:" }
        );
        assert_eq!(
            err("pages:x reason:remote shootdown (1)"),
            LineProblem::BadNumber { event: "tlb_flush", field: "pages" }
        );
        assert_eq!(err("pages:1 reason:teleport"), LineProblem::UnknownReason("teleport".into()));
        assert_eq!(
            err("pages:1 reason:x (y)"),
            LineProblem::BadNumber { event: "tlb_flush", field: "reason" }
        );
    }

    #[test]
    fn sched_switch_fields() {
        let b = sched_switch(
            b"prev_comm=my prog prev_pid=12 prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120",
        )
        .unwrap();
        assert_eq!(
            b,
            SwitchBody {
                prev_comm: b"my prog",
                prev_pid: 12,
                prev_state: 0x100,
                next_comm: b"swapper/1",
                next_pid: 0
            }
        );
        assert!(matches!(
            sched_switch(b"prev_comm=a prev_pid=1 prev_prio=1 prev_state=S"),
            Err(LineProblem::MissingField { field: "==>", .. })
        ));
    }

    #[test]
    fn task_states() {
        for (t, v) in [
            ("R", 0),
            ("R+", 0x100),
            ("S", 1),
            ("D", 2),
            ("T", 4),
            ("t", 8),
            ("X", 0x10),
            ("Z", 0x20),
            ("P", 0x40),
            ("I", 0x80),
            ("D|K", 2),
            ("x", 0x10),
            ("W", 0),
            ("D|N", 0x80),
            ("0x1", 1),
            ("256", 256),
        ] {
            assert_eq!(task_state(t.as_bytes()), Ok(v), "{t}");
        }
        for t in ["", "+", "Q", "S|", "0x8000000000000000"] {
            assert!(task_state(t.as_bytes()).is_err(), "{t}");
        }
    }

    #[test]
    fn ipi_targets_and_callbacks() {
        let b = ipi_send_cpu(b"cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 callback=generic_smp_call_function_single_interrupt+0x0/0x10").unwrap();
        assert_eq!(b.targets, vec![1]);
        assert_eq!(b.callback, None);
        assert_eq!(
            b.callback_symbol,
            Some(&b"generic_smp_call_function_single_interrupt+0x0/0x10"[..])
        );
        let b = ipi_send_cpu(b"cpu=0 callsite=wakeup_preempt+0x55/0xa0 callback=0x0").unwrap();
        assert_eq!((b.callback, b.callback_symbol), (Some(0), None));
        let b = ipi_send_cpumask(b"cpumask=0-1,3 callsite=x callback=0xffffffff81085a40").unwrap();
        assert_eq!((b.targets, b.callback), (vec![0, 1, 3], Some(0xffff_ffff_8108_5a40)));
    }

    #[test]
    fn cpu_sets() {
        let set = |s: &str| cpu_set(s.as_bytes());
        assert_eq!(set("0-1,3"), Some(vec![0, 1, 3]));
        assert_eq!(set("5"), Some(vec![5]));
        assert_eq!(set(""), Some(vec![]));
        assert_eq!(set("00000000,00000003"), Some(vec![0, 1]));
        assert_eq!(set("00000001,80000000"), Some(vec![31, 32]));
        assert_eq!(set("0000000a"), Some(vec![1, 3]));
        assert_eq!(set("3-1"), None);
        assert_eq!(set("0-4294967295"), None);
        assert_eq!(set("1,1"), None);
        assert_eq!(set("x"), None);
    }

    #[test]
    fn event_names() {
        assert_eq!(EventKind::of(b"tlb_flush"), Some(EventKind::TlbFlush));
        assert_eq!(EventKind::of(b"tlb:tlb_flush"), Some(EventKind::TlbFlush));
        assert_eq!(EventKind::of(b"ipi:ipi_send_cpumask"), Some(EventKind::IpiSendCpumask));
        assert_eq!(EventKind::of(b"sched:sched_switch"), Some(EventKind::SchedSwitch));
        assert_eq!(EventKind::of(b"foo:tlb_flush"), None);
        assert_eq!(EventKind::of(b"sched_wakeup"), None);
    }
}
