//! Splits a text line into its kind and, for event lines, the context every event carries
//! (thread, CPU, timestamp, event name) and the event's own text (the body).
//!
//! The two grammars, as the kernel (`trace_print_context()`) and `perf script` print them:
//!
//! ```text
//! ftrace:  COMM-PID [(TGID)] [CPU] [FLAGS] SECS.USECS: EVENT: BODY
//!          `%16s-%-7d `, `(%7d) ` or `(-------) ` with record-tgid, `[%03d] `, 4 or 5 irq-info
//!          characters unless irq-info is off, ` %5lu.%06lu: ` (bare ` %12llu: ` for counter clocks)
//! perf:    COMM TID|PID/TID [CPU] SECS.FRACTION: SYSTEM:EVENT: BODY
//!          `%16s `, `%7d ` or `%7d/%-7d `, `[%03d] ` when sampled, 6 or 9 (`--ns`) fraction digits,
//!          the event name right-aligned to the longest one
//! ```
//!
//! A `comm` may hold spaces, dashes, colons or brackets, so a line is read from the timestamp
//! outwards: the first `: ` whose preceding token is a timestamp and whose following token is an
//! event name (ending in `:`) splits the context from the event; the context is then read from
//! its right end, so the pid is the digits after the *last* dash and the comm is whatever is
//! left. If a comm itself contains such a `TS: NAME:` sequence, later candidates are tried.

use super::num::{
    dec_i32, dec_u32, dec_u64, find_byte, is_space, looks_like_timestamp, timestamp_ns, trim,
    trim_end, trim_start,
};
use super::{LineProblem, TextFormat};

/// What a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum LineKind<'a> {
    /// Nothing but whitespace.
    Blank,
    /// A `#` line: ftrace's header block, perf's `--header`.
    Comment,
    /// A stack-trace line (ftrace's ` => fn`, `<stack trace>`; perf's callchain addresses).
    Stack,
    /// `CPU:N [LOST M EVENTS]` (or `[LOST EVENTS]`, count unknown), printed by ftrace when the
    /// ring buffer dropped events before the reader got them.
    Lost {
        /// The CPU.
        cpu: u32,
        /// Events lost, if said.
        events: Option<u64>,
    },
    /// An event.
    Event(Context<'a>),
    /// A context and a timestamp but no `NAME:` after them: the function tracer's
    /// `fn <-parent` lines.
    Untagged,
}

/// The context and text of one event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Context<'a> {
    /// The thread's name as printed (ftrace: from the saved-cmdlines cache, `<...>` if evicted;
    /// perf: from its thread table); `None` when perf was told not to print it.
    pub comm: Option<&'a [u8]>,
    /// The thread id.
    pub pid: i32,
    /// The process id, -1 if not printed (or `(-------)`).
    pub tgid: i32,
    /// The CPU, `None` when perf was told not to print it.
    pub cpu: Option<u32>,
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// The event name as printed, without the colon (`tlb_flush`, `tlb:tlb_flush`).
    pub event: &'a [u8],
    /// The event's text, trimmed.
    pub body: &'a [u8],
}

/// Classifies `line`. With `format` unknown, an event line decides it: the format is returned
/// with the kind (ftrace is tried first; the grammars exclude each other except for an ftrace
/// line with an empty comm).
pub(super) fn classify(
    line: &[u8],
    format: Option<TextFormat>,
) -> Result<(LineKind<'_>, Option<TextFormat>), LineProblem> {
    let trimmed = trim(line);
    if trimmed.is_empty() {
        return Ok((LineKind::Blank, format));
    }
    // Only a `#` in column 0: a padded comm may start with `#`.
    if line[0] == b'#' {
        return Ok((LineKind::Comment, format));
    }
    if let Some(lost) = lost(trimmed) {
        return Ok((lost, format));
    }
    if let Some((ctx, found)) = event(line, format, true) {
        return Ok((LineKind::Event(ctx), Some(found)));
    }
    if is_stack(line, trimmed) {
        return Ok((LineKind::Stack, format));
    }
    if let Some((_, found)) = event(line, format, false) {
        return Ok((LineKind::Untagged, Some(found)));
    }
    Err(match format {
        Some(f) => LineProblem::NotFormat(f),
        None => LineProblem::Unrecognised,
    })
}

/// `CPU:N [LOST M EVENTS]` or `CPU:N [LOST EVENTS]`.
fn lost(trimmed: &[u8]) -> Option<LineKind<'static>> {
    let rest = trimmed.strip_prefix(b"CPU:")?;
    let sp = rest.iter().position(|&b| b == b' ')?;
    let cpu = dec_u32(&rest[..sp])?;
    let rest = rest[sp + 1..].strip_prefix(b"[LOST ")?;
    let rest = rest.strip_suffix(b"EVENTS]")?;
    let events = match trim(rest) {
        b"" => None,
        n => Some(dec_u64(n)?),
    };
    Some(LineKind::Lost { cpu, events })
}

/// ftrace's stacktrace option (` => fn`, `<stack trace>`, `<user stack trace>`) or a perf
/// callchain line (indented, a hex address first).
fn is_stack(line: &[u8], trimmed: &[u8]) -> bool {
    if trimmed.starts_with(b"=>")
        || trimmed.starts_with(b"<stack trace>")
        || trimmed.starts_with(b"<user stack trace>")
    {
        return true;
    }
    let first = trimmed.split(|&b| is_space(b)).next().unwrap_or(b"");
    is_space(line[0]) && first.len() >= 6 && first.iter().all(u8::is_ascii_hexdigit)
}

/// Finds the `TS: EVENT:` split (`TS: ` if not `named`) and reads the context in `format` (or
/// either, if unknown).
fn event(
    line: &[u8],
    format: Option<TextFormat>,
    named: bool,
) -> Option<(Context<'_>, TextFormat)> {
    let mut from = 0;
    while let Some(i) = find_byte(&line[from..], b':') {
        let colon = from + i;
        from = colon + 1;
        if let Some(found) = event_at(line, colon, format, named) {
            return Some(found);
        }
    }
    None
}

/// The event split at the colon `colon`, if that colon ends the timestamp.
fn event_at(
    line: &[u8],
    colon: usize,
    format: Option<TextFormat>,
    named: bool,
) -> Option<(Context<'_>, TextFormat)> {
    let after = &line[colon + 1..];
    if !after.first().is_none_or(|&b| is_space(b)) {
        return None;
    }
    let ts_start = line[..colon].iter().rposition(|&b| is_space(b)).map_or(0, |p| p + 1);
    let ts_token = &line[ts_start..colon];
    if ts_start == 0 || !looks_like_timestamp(ts_token) {
        return None;
    }
    let after = trim_start(after);
    let (event, body) = if named {
        let name_end = after.iter().position(|&b| is_space(b)).unwrap_or(after.len());
        let event = after[..name_end].strip_suffix(b":")?;
        if event.is_empty() {
            return None;
        }
        (event, trim(&after[name_end..]))
    } else {
        (&after[..0], trim(after))
    };
    let ts_ns = timestamp_ns(ts_token)?;
    let prefix = trim_end(&line[..ts_start]);
    let try_ftrace = format != Some(TextFormat::PerfScript);
    let try_perf = format != Some(TextFormat::FtraceText);
    let (prefix, found) = match (try_ftrace.then(|| ftrace_prefix(prefix)).flatten(), try_perf) {
        (Some(p), _) => (p, TextFormat::FtraceText),
        (None, true) => (perf_prefix(prefix)?, TextFormat::PerfScript),
        (None, false) => return None,
    };
    Some((
        Context {
            comm: prefix.comm,
            pid: prefix.pid,
            tgid: prefix.tgid,
            cpu: prefix.cpu,
            ts_ns,
            event,
            body,
        },
        found,
    ))
}

/// The context left of the timestamp.
struct Prefix<'a> {
    comm: Option<&'a [u8]>,
    pid: i32,
    tgid: i32,
    cpu: Option<u32>,
}

/// `s` (trimmed at its end) split at its last whitespace: (what is left, last token).
fn split_last_token(s: &[u8]) -> (&[u8], &[u8]) {
    match s.iter().rposition(|&b| is_space(b)) {
        Some(p) => (trim_end(&s[..p]), &s[p + 1..]),
        None => (&s[..0], s),
    }
}

/// `[NNN]`.
fn cpu_token(t: &[u8]) -> Option<u32> {
    dec_u32(t.strip_prefix(b"[")?.strip_suffix(b"]")?)
}

/// ftrace: `COMM-PID [(TGID)] [CPU] [FLAGS]`, read from the right.
fn ftrace_prefix(p: &[u8]) -> Option<Prefix<'_>> {
    let (rest, last) = split_last_token(p);
    let (rest, cpu) = match cpu_token(last) {
        Some(cpu) => (rest, cpu),
        None => {
            // irq-info: 4 characters before 4.16-ish kernels, 5 since (migrate-disable).
            if last.len() > 8 || !last.iter().all(u8::is_ascii_graphic) {
                return None;
            }
            let (rest, tok) = split_last_token(rest);
            (rest, cpu_token(tok)?)
        }
    };
    let (rest, tgid) = match rest.strip_suffix(b")") {
        Some(inner_end) => {
            let open = inner_end.iter().rposition(|&b| b == b'(')?;
            let inner = trim(&inner_end[open + 1..]);
            let tgid = if !inner.is_empty() && inner.iter().all(|&b| b == b'-') {
                -1
            } else {
                dec_i32(inner)?
            };
            (trim_end(&inner_end[..open]), tgid)
        }
        None => (rest, -1),
    };
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let dash = rest.len().checked_sub(digits + 1)?;
    if digits == 0 || rest[dash] != b'-' {
        return None;
    }
    let pid = dec_i32(&rest[dash + 1..])?;
    Some(Prefix { comm: Some(trim_start(&rest[..dash])), pid, tgid, cpu: Some(cpu) })
}

/// perf: `COMM TID|PID/TID [CPU]`, read from the right.
fn perf_prefix(p: &[u8]) -> Option<Prefix<'_>> {
    let (rest, last) = split_last_token(p);
    let (rest, cpu, ids) = match cpu_token(last) {
        Some(cpu) => {
            let (rest, ids) = split_last_token(rest);
            (rest, Some(cpu), ids)
        }
        None => (rest, None, last),
    };
    let (pid, tgid) = match ids.iter().position(|&b| b == b'/') {
        Some(slash) => (dec_i32(&ids[slash + 1..])?, dec_i32(&ids[..slash])?),
        None => (dec_i32(ids)?, -1),
    };
    let comm = trim(rest);
    Some(Prefix { comm: (!comm.is_empty()).then_some(comm), pid, tgid, cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str, format: Option<TextFormat>) -> (Context<'_>, TextFormat) {
        match classify(line.as_bytes(), format) {
            Ok((LineKind::Event(c), Some(f))) => (c, f),
            other => panic!("{line:?}: {other:?}"),
        }
    }

    #[test]
    fn ftrace_new_kernel_line() {
        let (c, f) = ev(
            "         mt_madv-12896   [001] d.h.. 532.678034: tlb_flush: pages:1 reason:remote shootdown (1)",
            None,
        );
        assert_eq!(f, TextFormat::FtraceText);
        assert_eq!(c.comm, Some(&b"mt_madv"[..]));
        assert_eq!((c.pid, c.tgid, c.cpu, c.ts_ns), (12896, -1, Some(1), 532_678_034_000));
        assert_eq!(c.event, b"tlb_flush");
        assert_eq!(c.body, b"pages:1 reason:remote shootdown (1)");
    }

    #[test]
    fn ftrace_comm_with_dashes_spaces_and_colons() {
        // The pid follows the last dash before the CPU.
        let (c, _) = ev("  memfd:sealed-91-15831 [000] d..2. 1.000001: sched_switch: x", None);
        assert_eq!((c.comm, c.pid), (Some(&b"memfd:sealed-91"[..]), 15831));
        let (c, _) = ev("   my prog-x-7 (   7) [003] 2.5: tlb_flush: pages:0 reason: (5)", None);
        assert_eq!((c.comm, c.pid, c.tgid, c.cpu), (Some(&b"my prog-x"[..]), 7, 7, Some(3)));
        let (c, _) = ev("  <idle>-0       (-------) [000]  3.000000: tlb_flush: y", None);
        assert_eq!((c.comm, c.pid, c.tgid), (Some(&b"<idle>"[..]), 0, -1));
        // A comm that itself reads like `TS: NAME:`.
        let (c, _) = ev("a 1: b: c-5 [000] 4.000000: tlb_flush: z", None);
        assert_eq!((c.comm, c.pid, c.body), (Some(&b"a 1: b: c"[..]), 5, &b"z"[..]));
    }

    #[test]
    fn ftrace_flag_widths_and_no_irq_info() {
        for (line, ts) in [
            ("bash-1 [000] d.h. 10.000001: tlb_flush: p", 10_000_001_000),
            ("bash-1 [000] dNh1. 10.000002: tlb_flush: p", 10_000_002_000),
            ("bash-1 [000]   10.000003: tlb_flush: p", 10_000_003_000),
            ("bash-1 [000] ...1 10.000000004: tlb_flush: p", 10_000_000_004),
            ("bash-1 [000] 12345678901: tlb_flush: p", 12_345_678_901),
        ] {
            let (c, f) = ev(line, None);
            assert_eq!(
                (f, c.pid, c.cpu, c.ts_ns),
                (TextFormat::FtraceText, 1, Some(0), ts),
                "{line}"
            );
        }
    }

    #[test]
    fn perf_lines() {
        let (c, f) = ev(
            "       madv_loop 18798 [000] 20045.015318:      tlb:tlb_flush: pages:-1 reason:remote shootdown (1)",
            None,
        );
        assert_eq!(f, TextFormat::PerfScript);
        assert_eq!((c.comm, c.pid, c.tgid, c.cpu), (Some(&b"madv_loop"[..]), 18798, -1, Some(0)));
        assert_eq!((c.ts_ns, c.event), (20_045_015_318_000, &b"tlb:tlb_flush"[..]));
        let (c, _) =
            ev("     migration/0    18/17    [001] 1.000000001: sched:sched_switch: x", None);
        assert_eq!(
            (c.comm, c.pid, c.tgid, c.cpu, c.ts_ns),
            (Some(&b"migration/0"[..]), 17, 18, Some(1), 1_000_000_001)
        );
        let (c, _) = ev("  Web Content 99 5.000000: tlb:tlb_flush: p", None);
        assert_eq!((c.comm, c.pid, c.cpu), (Some(&b"Web Content"[..]), 99, None));
        let (c, _) = ev("  my-prog 99 [001] 5.000000: tlb:tlb_flush: p", None);
        assert_eq!((c.comm, c.pid), (Some(&b"my-prog"[..]), 99));
    }

    #[test]
    fn a_forced_format_reads_only_its_grammar() {
        let perf = "  a 99 [001] 5.000000: tlb:tlb_flush: p";
        assert_eq!(
            classify(perf.as_bytes(), Some(TextFormat::FtraceText)),
            Err(LineProblem::NotFormat(TextFormat::FtraceText))
        );
        let ftrace = "a-1 [000] 10.000001: tlb_flush: p";
        assert_eq!(
            classify(ftrace.as_bytes(), Some(TextFormat::PerfScript)),
            Err(LineProblem::NotFormat(TextFormat::PerfScript))
        );
    }

    #[test]
    fn non_event_lines() {
        fn kind(l: &str) -> Result<LineKind<'_>, LineProblem> {
            classify(l.as_bytes(), None).map(|(k, _)| k)
        }
        assert_eq!(kind(""), Ok(LineKind::Blank));
        assert_eq!(kind("  \t\r\n"), Ok(LineKind::Blank));
        assert_eq!(kind("# tracer: nop"), Ok(LineKind::Comment));
        assert_eq!(
            kind("CPU:1 [LOST 1880 EVENTS]"),
            Ok(LineKind::Lost { cpu: 1, events: Some(1880) })
        );
        assert_eq!(kind("CPU:0 [LOST EVENTS]"), Ok(LineKind::Lost { cpu: 0, events: None }));
        assert_eq!(kind(" => flush_tlb_mm_range"), Ok(LineKind::Stack));
        assert_eq!(
            kind("\t    ffffffff8107c8e3 native_flush_tlb_multi+0x63 ([kernel.kallsyms])"),
            Ok(LineKind::Stack)
        );
        assert_eq!(kind("hello world"), Err(LineProblem::Unrecognised));
        assert_eq!(
            kind("  bash-1 [000] ..... 1.000001: do_sys_open <-__x64_sys_openat"),
            Ok(LineKind::Untagged)
        );
        assert_eq!(kind("CPU:x [LOST 1 EVENTS]"), Err(LineProblem::Unrecognised));
    }
}
