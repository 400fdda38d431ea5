//! From records to a plan: the threads, where and when each runs, and the flush requests each
//! makes. Every inference is described in docs/replay.md.

use crate::error::ReplayError;
use crate::options::ReplayOptions;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use tlblab_flushtrace::{reason, Header, Record};

/// The largest request the replay makes, in pages (larger recorded sizes are clamped).
pub(crate) const MAX_REQUEST_PAGES: u64 = 1 << 16;

/// The longest quiet stretch replayed: a gap between consecutive records longer than this is
/// replayed as this long. Nothing is recorded in it, and 2 s outlast every time constant the
/// model has (a tick at any `hz`, the once-a-second cpumask trim, the deepest idle state's
/// residency, the pairing and idle-gap windows' defaults), so what follows sees the same state
/// as after the whole gap; a replay's work follows its records, not its trace's span.
pub const MAX_QUIET_NS: u64 = 2_000_000_000;

/// CPUs of a trace the model can run (it runs 4096, one of which replays wake-up timers).
pub(crate) const MAX_TRACE_CPUS: usize = 4095;

/// Name prefixes of kernel threads (`comm`). A kernel thread has no mm of its own: on its CPU
/// the user mm that ran before stays loaded, lazily, as under the idle task. The model cannot
/// spawn a kernel thread, so one that makes no request is left out and its CPU time becomes
/// idle time, which the model treats the same way (`enter_lazy_tlb()`).
const KERNEL_THREAD_PREFIXES: &[&str] = &[
    "kworker/",
    "ksoftirqd/",
    "migration/",
    "rcu_",
    "rcuc/",
    "rcuog/",
    "rcuop/",
    "cpuhp/",
    "idle_inject/",
    "watchdog/",
    "irq/",
    "kthreadd",
    "kswapd",
    "kcompactd",
    "khugepaged",
    "kauditd",
    "khungtaskd",
    "oom_reaper",
    "jbd2/",
    "kblockd",
    "writeback",
    "ksmd",
    "psimon",
    "pool_workqueue_",
];

/// Whether `comm` names a kernel thread.
fn kernel_thread(comm: &str) -> bool {
    KERNEL_THREAD_PREFIXES.iter().any(|p| comm.starts_with(p))
}

/// The size of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// This many entries (4 KiB pages in the model).
    Pages(u64),
    /// A full flush at recording time: explicit, or a range above the recording ceiling.
    Censored,
}

/// What a request flushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A range (or all) of the initiator's own mm: `flush_tlb_mm_range()`.
    Mm,
    /// A batched reclaim flush (`arch_tlbbatch_flush()`, reason 2).
    Batch,
}

/// One flush request, reconstructed from its initiator's events.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// When it started, ns after the first record.
    pub at_ns: u64,
    pub size: Size,
    pub kind: Kind,
}

/// A stretch of time during which a thread runs on one CPU, with the requests it makes then.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub cpu: u16,
    pub from_ns: u64,
    pub to_ns: u64,
    /// Its requests: `first..end` of the thread's list.
    pub first: usize,
    pub end: usize,
}

/// A traced thread.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    pub pid: i32,
    pub segments: Vec<Segment>,
    pub requests: Vec<Request>,
}

impl Thread {
    /// Whether the thread sleeps before segment `i` (its first, or one after a gap).
    pub fn sleeps_before(&self, i: usize) -> bool {
        i == 0 || self.segments[i].from_ns > self.segments[i - 1].to_ns
    }
}

/// A traced process: the threads of one thread group.
#[derive(Clone, Debug)]
pub(crate) struct Process {
    pub threads: Vec<usize>,
}

/// Counts of `tlb:tlb_flush` events by what they flushed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// All events.
    pub total: u64,
    /// `pages` -1: a full flush.
    pub full: u64,
    /// `pages` > 0: that many entries.
    pub partial: u64,
    /// `pages` 0: nothing to flush (up to date, or an ASID reused without a flush).
    pub none: u64,
}

impl KindCounts {
    /// Counts one event with this `pages` value.
    pub fn add(&mut self, pages: i64) {
        self.total += 1;
        match pages {
            0 => self.none += 1,
            p if p > 0 => self.partial += 1,
            _ => self.full += 1,
        }
    }
}

/// Whether thread schedules come from `sched_switch` records or are inferred from events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleMode {
    /// The trace has `sched_switch` records: threads run between their recorded switches.
    Switch,
    /// No `sched_switch` records: a thread runs on a CPU from one of its events there to the
    /// next, unless they are more than the idle gap apart.
    Inferred,
}

/// How the requests were reconstructed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RequestSummary {
    /// Requests in all.
    pub total: u64,
    /// A reason 4 followed by the reason 3 of the same CPU and thread (other CPUs had the mm).
    pub paired: u64,
    /// A reason 3 alone (no other CPU had the mm).
    pub local_only: u64,
    /// A reason 4 alone (the initiator did not have the mm loaded); replayed on its own mm.
    pub send_only: u64,
    /// Batched reclaim flushes (reason 2, with or without a reason 4 before).
    pub batches: u64,
    /// Full at recording time (`pages` -1): an explicit full flush or a range above the
    /// recording ceiling; the size is unknown and the request stays full at every ceiling.
    pub censored: u64,
    /// No size at all (`pages` 0: already up to date); replayed as 1 page.
    pub unknown_size: u64,
    /// Reason 4 gave a multiple of reason 3's count: a huge-page stride; replayed as reason
    /// 3's count of 4 KiB entries (the ceiling counts entries).
    pub huge_stride: u64,
    /// Sizes above the replay's largest request, clamped to it.
    pub clamped: u64,
    /// Known sizes (entries) → requests.
    pub sizes: BTreeMap<u64, u64>,
}

/// What the trace holds, and what the replay made of it.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// Records read.
    pub records: u64,
    /// Records by kind.
    pub records_by_kind: BTreeMap<&'static str, u64>,
    /// From the first record to the last, ns.
    pub span_ns: u64,
    /// The trace clock.
    pub clock: String,
    /// The recording kernel.
    pub kernel_release: Option<String>,
    /// CPUs simulated (the trace's).
    pub cpus: usize,
    /// Where the schedule comes from.
    pub schedule: ScheduleMode,
    /// Threads scheduled from their `sched_switch` records.
    pub threads_from_switches: u64,
    /// Threads scheduled by inference from their events.
    pub threads_inferred: u64,
    /// Simulated processes (thread groups).
    pub processes: u64,
    /// Simulated threads.
    pub threads: u64,
    /// Threads whose thread group the trace did not say (each is a process of its own).
    pub threads_without_tgid: u64,
    /// Kernel threads (by name) without requests, left out: their CPU time is idle time in the
    /// model, which keeps the previous mm loaded lazily as a kernel thread does.
    pub kernel_threads_left_out: u64,
    /// Recorded `tlb:tlb_flush` events by reason.
    pub recorded_tlb_flush: BTreeMap<i32, KindCounts>,
    /// Recorded IPI-send records and their targets.
    pub recorded_ipi_sends: u64,
    /// Targets of those records.
    pub recorded_ipi_targets: u64,
    /// The requests.
    pub requests: RequestSummary,
    /// Initiator events (reasons 2, 3, 4) without a thread (pid ≤ 0), not replayed.
    pub requests_without_thread: u64,
    /// Records that went back in time within the tolerance.
    pub reordered_records: u64,
    /// Gaps between consecutive records longer than [`MAX_QUIET_NS`], each replayed as that
    /// long.
    pub quiet_gaps: u64,
    /// Trace time those gaps lose in the replay, ns: the replayed span is `span_ns` minus this.
    pub quiet_ns_skipped: u64,
}

/// The gaps of a trace replayed shorter: each as [`MAX_QUIET_NS`].
#[derive(Clone, Debug, Default)]
struct Quiet {
    /// Each gap's start (ns after the first record), in time order, the time skipped in the
    /// gaps before it, and its own.
    gaps: Vec<(u64, u64, u64)>,
    /// All the time skipped.
    total: u64,
}

impl Quiet {
    /// Notes a gap from `from` to `to` (ns after the first record) with no record in it.
    fn gap(&mut self, from: u64, to: u64) {
        if let Some(skip) = (to - from).checked_sub(MAX_QUIET_NS).filter(|&s| s > 0) {
            self.gaps.push((from, self.total, skip));
            self.total += skip;
        }
    }

    /// Replay time of trace time `t` (ns after the first record): the gaps before it shortened.
    /// Inside a gap (only a record reordered within the tolerance lands there) time runs for
    /// its first [`MAX_QUIET_NS`] and then stands until the gap's end: the map never goes back.
    fn map(&self, t: u64) -> u64 {
        let k = self.gaps.partition_point(|&(from, _, _)| from < t);
        let Some(&(from, before, skip)) = k.checked_sub(1).map(|i| &self.gaps[i]) else {
            return t;
        };
        t - before - (t - from).saturating_sub(MAX_QUIET_NS).min(skip)
    }
}

/// A trace, read: threads, schedules and requests, ready to be replayed under any policy.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) cpus: usize,
    pub(crate) threads: Vec<Thread>,
    pub(crate) processes: Vec<Process>,
    /// The replayed span: from the first record to the last, quiet gaps shortened.
    pub(crate) end_ns: u64,
    /// What the trace holds.
    pub summary: TraceSummary,
}

/// A time interval on a CPU.
#[derive(Clone, Copy, Debug)]
struct Iv {
    cpu: u16,
    from: u64,
    to: u64,
}

#[derive(Default)]
struct ThreadB {
    pid: i32,
    switch_ivs: Vec<Iv>,
    inferred: Vec<Iv>,
    open: Option<Iv>,
    requests: Vec<(u16, Request)>,
}

/// A reason-4 record waiting for its reason 3 (or 2).
#[derive(Clone, Copy)]
struct Pending {
    ts: u64,
    pid: i32,
    pages: i64,
}

struct Builder<'a> {
    opts: &'a ReplayOptions,
    t0: Option<u64>,
    latest: u64,
    quiet: Quiet,
    max_cpu: Option<u32>,
    tgid: HashMap<i32, i32>,
    kthreads: std::collections::HashSet<i32>,
    index: HashMap<i32, usize>,
    threads: Vec<ThreadB>,
    pending: Vec<Option<Pending>>,
    on_cpu: Vec<Option<(i32, u64)>>,
    last_on_cpu: Vec<Option<i32>>,
    switch_seen: Vec<bool>,
    any_switch: bool,
    s: TraceSummary,
}

impl Plan {
    /// Reads the records (in time order) into a plan.
    pub fn build(
        header: &Header,
        records: impl IntoIterator<Item = Record>,
        opts: &ReplayOptions,
    ) -> Result<Plan, ReplayError> {
        let header_max = header.cpus.iter().max().map(|&c| c as usize + 1);
        if let Some(n) = opts.cpus {
            if n == 0 || n > MAX_TRACE_CPUS {
                return Err(ReplayError::TooManyCpus { cpus: n, max: MAX_TRACE_CPUS });
            }
        }
        let mut b = Builder {
            opts,
            t0: None,
            latest: 0,
            quiet: Quiet::default(),
            max_cpu: None,
            tgid: HashMap::new(),
            kthreads: std::collections::HashSet::new(),
            index: HashMap::new(),
            threads: Vec::new(),
            pending: Vec::new(),
            on_cpu: Vec::new(),
            last_on_cpu: Vec::new(),
            switch_seen: Vec::new(),
            any_switch: false,
            s: TraceSummary {
                records: 0,
                records_by_kind: BTreeMap::new(),
                span_ns: 0,
                clock: header.clock.clone(),
                kernel_release: header.kernel_release.clone(),
                cpus: 0,
                schedule: ScheduleMode::Inferred,
                threads_from_switches: 0,
                threads_inferred: 0,
                processes: 0,
                threads: 0,
                threads_without_tgid: 0,
                kernel_threads_left_out: 0,
                recorded_tlb_flush: BTreeMap::new(),
                recorded_ipi_sends: 0,
                recorded_ipi_targets: 0,
                requests: RequestSummary::default(),
                requests_without_thread: 0,
                reordered_records: 0,
                quiet_gaps: 0,
                quiet_ns_skipped: 0,
            },
        };
        for (i, r) in records.into_iter().enumerate() {
            b.push(i as u64, r)?;
        }
        let seen = b.max_cpu.map(|c| c as usize + 1);
        let cpus = opts.cpus.or(header_max.max(seen)).unwrap_or(1);
        if cpus > MAX_TRACE_CPUS {
            return Err(ReplayError::TooManyCpus { cpus, max: MAX_TRACE_CPUS });
        }
        b.finish(cpus)
    }
}

impl Builder<'_> {
    fn push(&mut self, index: u64, r: Record) -> Result<(), ReplayError> {
        let ts = r.ts_ns();
        // Saturating: a timestamp near u64::MAX plus the tolerance must not wrap into a
        // "0 ns before" refusal.
        if ts.saturating_add(self.opts.order_tolerance_ns) < self.latest {
            return Err(ReplayError::OutOfOrder {
                index,
                ts_ns: ts,
                previous_ns: self.latest,
                back_ns: self.latest - ts,
                tolerance_ns: self.opts.order_tolerance_ns,
            });
        }
        if ts < self.latest {
            self.s.reordered_records += 1;
        }
        let t0 = *self.t0.get_or_insert(ts);
        // The latest time so far (the first record's, for the first record).
        let previous = self.latest.max(t0);
        if ts > previous {
            self.quiet.gap(previous - t0, ts - t0);
        }
        self.latest = self.latest.max(ts);
        let rel = ts.saturating_sub(t0);
        self.s.records += 1;
        let kind = match &r {
            Record::Flush(_) => "flush",
            Record::Switch(_) => "switch",
            Record::IpiSend(_) => "ipi_send",
            Record::CallFunction(_) => "call_function",
            Record::Task(_) => "task",
            Record::Other(_) => "other",
        };
        *self.s.records_by_kind.entry(kind).or_default() += 1;
        let cpu = match &r {
            Record::Flush(f) => Some(f.cpu),
            Record::Switch(s) => Some(s.cpu),
            Record::IpiSend(s) => Some(s.cpu),
            Record::CallFunction(c) => Some(c.cpu),
            Record::Other(o) => Some(o.cpu),
            Record::Task(_) => None,
        };
        let Some(cpu) = cpu else {
            if let Record::Task(t) = r {
                self.tgid.insert(t.pid, t.tgid);
                if kernel_thread(&t.comm) {
                    self.kthreads.insert(t.pid);
                } else {
                    self.kthreads.remove(&t.pid);
                }
            }
            return Ok(());
        };
        self.check_cpu(index, cpu)?;
        let c = cpu as usize;
        if self.pending.len() <= c {
            self.pending.resize(c + 1, None);
            self.on_cpu.resize(c + 1, None);
            self.last_on_cpu.resize(c + 1, None);
            self.switch_seen.resize(c + 1, false);
        }
        let cpu = cpu as u16;
        // A reason 4 whose reason 3 did not come in time was a request on its own.
        if let Some(p) = self.pending[c] {
            if rel > p.ts + self.opts.pair_window_ns {
                self.pending[c] = None;
                self.send_only(cpu, p);
            }
        }
        match r {
            Record::Flush(f) => {
                self.s.recorded_tlb_flush.entry(f.reason).or_default().add(f.pages);
                self.activity(f.pid, cpu, rel);
                self.flush(cpu, rel, f.pid, f.reason, f.pages);
            }
            Record::Switch(s) => self.switch(cpu, rel, s.prev_pid, s.next_pid),
            Record::IpiSend(s) => {
                self.s.recorded_ipi_sends += 1;
                self.s.recorded_ipi_targets += s.targets.len() as u64;
                self.activity(s.pid, cpu, rel);
            }
            Record::CallFunction(f) => self.activity(f.pid, cpu, rel),
            Record::Other(o) => self.activity(o.pid, cpu, rel),
            Record::Task(_) => {}
        }
        Ok(())
    }

    fn check_cpu(&mut self, index: u64, cpu: u32) -> Result<(), ReplayError> {
        let limit = self.opts.cpus.unwrap_or(MAX_TRACE_CPUS);
        if cpu as usize >= limit {
            return Err(ReplayError::CpuOutOfRange { index, cpu, cpus: limit });
        }
        self.max_cpu = Some(self.max_cpu.map_or(cpu, |m| m.max(cpu)));
        Ok(())
    }

    fn thread(&mut self, pid: i32) -> &mut ThreadB {
        let i = *self.index.entry(pid).or_insert_with(|| {
            self.threads.push(ThreadB { pid, ..ThreadB::default() });
            self.threads.len() - 1
        });
        &mut self.threads[i]
    }

    /// The thread ran on `cpu` at `ts` (it is the record's current task).
    fn activity(&mut self, pid: i32, cpu: u16, ts: u64) {
        // A CPU runs one thread at a time: another thread's event (or the idle task's) there
        // ends the run of the thread seen there before, at that thread's last event.
        let c = usize::from(cpu);
        match self.last_on_cpu[c] {
            Some(prev) if prev != pid && prev > 0 => {
                let th = self.thread(prev);
                if let Some(iv) = th.open.filter(|iv| iv.cpu == cpu) {
                    th.open = None;
                    th.inferred.push(iv);
                }
            }
            _ => {}
        }
        self.last_on_cpu[c] = Some(pid);
        if pid <= 0 {
            return;
        }
        let gap = self.opts.idle_gap_ns;
        let th = self.thread(pid);
        match &mut th.open {
            Some(iv) if iv.cpu == cpu && ts <= iv.to.saturating_add(gap) => iv.to = iv.to.max(ts),
            open => {
                if let Some(iv) = open.replace(Iv { cpu, from: ts, to: ts }) {
                    th.inferred.push(iv);
                }
            }
        }
    }

    fn switch(&mut self, cpu: u16, ts: u64, prev: i32, next: i32) {
        self.any_switch = true;
        let c = usize::from(cpu);
        match self.on_cpu[c].take() {
            Some((pid, since)) => self.thread(pid).switch_ivs.push(Iv { cpu, from: since, to: ts }),
            // The first switch on this CPU: `prev` ran from the start of the trace.
            None if !self.switch_seen[c] && prev > 0 => {
                self.thread(prev).switch_ivs.push(Iv { cpu, from: 0, to: ts })
            }
            None => {}
        }
        self.switch_seen[c] = true;
        if next > 0 {
            self.thread(next);
            self.on_cpu[c] = Some((next, ts));
        }
    }

    fn flush(&mut self, cpu: u16, ts: u64, pid: i32, why: i32, pages: i64) {
        let c = usize::from(cpu);
        match why {
            reason::REMOTE_SEND_IPI => {
                if let Some(p) = self.pending[c].take() {
                    self.send_only(cpu, p);
                }
                if pid > 0 {
                    self.pending[c] = Some(Pending { ts, pid, pages });
                } else {
                    self.s.requests_without_thread += 1;
                }
            }
            reason::LOCAL_MM_SHOOTDOWN | reason::LOCAL_SHOOTDOWN => {
                let paired = match self.pending[c].take() {
                    Some(p) if p.pid == pid && ts <= p.ts + self.opts.pair_window_ns => Some(p),
                    Some(p) => {
                        self.send_only(cpu, p);
                        None
                    }
                    None => None,
                };
                if pid <= 0 {
                    self.s.requests_without_thread += 1;
                    return;
                }
                let at = paired.map_or(ts, |p| p.ts);
                if why == reason::LOCAL_SHOOTDOWN {
                    self.s.requests.batches += 1;
                    self.request(cpu, pid, at, Size::Censored, Kind::Batch);
                    return;
                }
                let size = match paired {
                    Some(p) => {
                        self.s.requests.paired += 1;
                        self.size_of(p.pages, Some(pages))
                    }
                    None => {
                        self.s.requests.local_only += 1;
                        self.size_of(pages, None)
                    }
                };
                self.request(cpu, pid, at, size, Kind::Mm);
            }
            _ => {} // outcomes of the policy (0, 1, 5): regenerated by the model
        }
    }

    fn send_only(&mut self, cpu: u16, p: Pending) {
        self.s.requests.send_only += 1;
        let size = self.size_of(p.pages, None);
        self.request(cpu, p.pid, p.ts, size, Kind::Mm);
    }

    /// The size of a request from its first event's `pages` and, when paired, reason 3's.
    fn size_of(&mut self, first: i64, local: Option<i64>) -> Size {
        let r = &mut self.s.requests;
        let n = match (first, local) {
            (-1, _) => {
                r.censored += 1;
                return Size::Censored;
            }
            (n, Some(l)) if n > 0 && l > 0 && n > l && n % l == 0 => {
                r.huge_stride += 1;
                l as u64
            }
            (n, _) if n > 0 => n as u64,
            (n, _) if n < -1 => {
                // Not a value the kernel prints; treat it as full, like -1.
                r.censored += 1;
                return Size::Censored;
            }
            _ => {
                r.unknown_size += 1;
                1
            }
        };
        let n = if n > MAX_REQUEST_PAGES {
            r.clamped += 1;
            MAX_REQUEST_PAGES
        } else {
            n
        };
        *r.sizes.entry(n).or_default() += 1;
        Size::Pages(n)
    }

    fn request(&mut self, cpu: u16, pid: i32, at_ns: u64, size: Size, kind: Kind) {
        self.s.requests.total += 1;
        self.thread(pid).requests.push((cpu, Request { at_ns, size, kind }));
    }

    fn finish(mut self, cpus: usize) -> Result<Plan, ReplayError> {
        let end = self.latest.saturating_sub(self.t0.unwrap_or(0));
        for c in 0..self.pending.len() {
            if let Some(p) = self.pending[c].take() {
                self.send_only(c as u16, p);
            }
            if let Some((pid, since)) = self.on_cpu[c].take() {
                self.thread(pid).switch_ivs.push(Iv { cpu: c as u16, from: since, to: end });
            }
        }
        if self.s.requests.total == 0 {
            return Err(ReplayError::NothingToReplay);
        }
        let mut threads = Vec::with_capacity(self.threads.len());
        for th in std::mem::take(&mut self.threads) {
            if th.requests.is_empty() && self.kthreads.contains(&th.pid) {
                self.s.kernel_threads_left_out += 1;
                continue;
            }
            let from_switches = !th.switch_ivs.is_empty();
            if from_switches {
                self.s.threads_from_switches += 1;
            } else {
                self.s.threads_inferred += 1;
            }
            let mut th = schedule(th, from_switches);
            for seg in &mut th.segments {
                seg.from_ns = self.quiet.map(seg.from_ns);
                seg.to_ns = self.quiet.map(seg.to_ns);
            }
            for r in &mut th.requests {
                r.at_ns = self.quiet.map(r.at_ns);
            }
            threads.push(th);
        }
        let mut groups: Vec<(i32, Vec<usize>)> = Vec::new();
        let mut group_of: HashMap<i32, usize> = HashMap::new();
        for (i, th) in threads.iter().enumerate() {
            let tgid = match self.tgid.get(&th.pid) {
                Some(&g) if g > 0 => g,
                _ => {
                    self.s.threads_without_tgid += 1;
                    th.pid
                }
            };
            let g = *group_of.entry(tgid).or_insert_with(|| {
                groups.push((tgid, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
        self.s.span_ns = end;
        self.s.quiet_gaps = self.quiet.gaps.len() as u64;
        self.s.quiet_ns_skipped = self.quiet.total;
        self.s.cpus = cpus;
        self.s.schedule =
            if self.any_switch { ScheduleMode::Switch } else { ScheduleMode::Inferred };
        self.s.threads = threads.len() as u64;
        self.s.processes = groups.len() as u64;
        Ok(Plan {
            cpus,
            end_ns: self.quiet.map(end),
            threads,
            processes: groups.into_iter().map(|(_, threads)| Process { threads }).collect(),
            summary: self.s,
        })
    }
}

/// A thread's segments: its intervals (from switches, else inferred) and a point at each of its
/// requests, merged where they touch on one CPU (or, inferred, are within the idle gap, which
/// the builder already applied); each request goes to the segment that holds it.
fn schedule(mut th: ThreadB, from_switches: bool) -> Thread {
    let mut ivs = if from_switches {
        th.switch_ivs
    } else {
        th.inferred.extend(th.open.take());
        th.inferred
    };
    ivs.extend(th.requests.iter().map(|(cpu, r)| Iv { cpu: *cpu, from: r.at_ns, to: r.at_ns }));
    ivs.sort_by_key(|iv| (iv.from, iv.to, iv.cpu));
    let mut merged: Vec<Iv> = Vec::with_capacity(ivs.len());
    for iv in ivs {
        match merged.last_mut() {
            Some(m) if m.cpu == iv.cpu && iv.from <= m.to => m.to = m.to.max(iv.to),
            _ => merged.push(iv),
        }
    }
    // The segment of each request: the last one on its CPU that starts at or before it.
    let mut placed: Vec<(usize, Request)> = th
        .requests
        .iter()
        .map(|&(cpu, r)| {
            let upto = merged.partition_point(|s| s.from <= r.at_ns);
            let seg = (0..upto)
                .rev()
                .find(|&i| merged[i].cpu == cpu && merged[i].to >= r.at_ns)
                .expect("every request's point is inside a merged segment on its CPU");
            (seg, r)
        })
        .collect();
    placed.sort_by_key(|(seg, r)| (*seg, r.at_ns));
    let mut segments: Vec<Segment> = merged
        .iter()
        .map(|iv| Segment { cpu: iv.cpu, from_ns: iv.from, to_ns: iv.to, first: 0, end: 0 })
        .collect();
    let mut i = 0;
    for (s, seg) in segments.iter_mut().enumerate() {
        seg.first = i;
        while i < placed.len() && placed[i].0 == s {
            i += 1;
        }
        seg.end = i;
    }
    Thread { pid: th.pid, segments, requests: placed.into_iter().map(|(_, r)| r).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_flushtrace::{Flush, Origin, Switch, Task};

    fn f(ts_ns: u64, cpu: u32, pid: i32, reason: i32, pages: i64) -> Record {
        Record::Flush(Flush { ts_ns, cpu, pid, reason, pages })
    }

    fn plan(records: Vec<Record>) -> Plan {
        Plan::build(&Header::new(Origin::Recorded), records, &ReplayOptions::default()).unwrap()
    }

    fn sizes(p: &Plan) -> Vec<Size> {
        p.threads.iter().flat_map(|t| t.requests.iter().map(|r| r.size)).collect()
    }

    #[test]
    fn a_send_and_the_local_flush_of_the_same_thread_are_one_request() {
        let p = plan(vec![f(0, 0, 5, 4, 3), f(100, 0, 5, 3, 3)]);
        let r = &p.summary.requests;
        assert_eq!((r.total, r.paired, r.local_only, r.send_only), (1, 1, 0, 0));
        assert_eq!(sizes(&p), vec![Size::Pages(3)]);
    }

    #[test]
    fn a_send_not_followed_in_time_by_its_thread_is_a_request_of_its_own() {
        // Another thread's local flush, a second send, and a local flush after the window.
        let p = plan(vec![
            f(0, 0, 5, 4, 2),
            f(10, 0, 6, 3, 1),
            f(20, 0, 5, 4, 4),
            f(30, 0, 5, 4, 7),
            f(5_000_000, 0, 5, 3, 7),
        ]);
        let r = &p.summary.requests;
        assert_eq!((r.total, r.paired, r.local_only, r.send_only), (5, 0, 2, 3));
        let mut s = sizes(&p);
        s.sort_by_key(|s| format!("{s:?}"));
        let want = [1, 2, 4, 7, 7].map(Size::Pages);
        assert_eq!(s.len(), want.len());
        for w in want {
            assert!(s.contains(&w), "{s:?}");
        }
    }

    #[test]
    fn sizes_full_unknown_huge_stride_and_clamped() {
        let p = plan(vec![
            f(0, 0, 5, 4, -1),
            f(1, 0, 5, 3, -1),
            f(10, 0, 5, 3, 0),
            f(20, 1, 5, 4, 512),
            f(21, 1, 5, 3, 1),
            f(30, 1, 5, 3, 1 << 20),
        ]);
        let r = &p.summary.requests;
        assert_eq!((r.censored, r.unknown_size, r.huge_stride, r.clamped), (1, 1, 1, 1));
        assert_eq!(
            sizes(&p),
            vec![Size::Censored, Size::Pages(1), Size::Pages(1), Size::Pages(MAX_REQUEST_PAGES)]
        );
    }

    #[test]
    fn batches_and_events_without_a_thread() {
        let p =
            plan(vec![f(0, 0, 5, 4, -1), f(1, 0, 5, 2, -1), f(2, 1, 0, 3, 1), f(3, 1, 9, 1, 1)]);
        let r = &p.summary.requests;
        assert_eq!((r.total, r.batches, r.paired), (1, 1, 0));
        assert_eq!(p.threads[0].requests[0].kind, Kind::Batch);
        assert_eq!(p.summary.requests_without_thread, 1);
        assert_eq!(p.summary.recorded_tlb_flush[&1].partial, 1);
    }

    #[test]
    fn switches_give_the_schedule_and_the_first_switch_closes_a_run_from_the_start() {
        let sw = |ts_ns, cpu, prev_pid, next_pid| {
            Record::Switch(Switch { ts_ns, cpu, prev_pid, prev_state: 1, next_pid })
        };
        let p = plan(vec![
            f(0, 0, 5, 3, 1),
            sw(1_000, 0, 5, 6),
            sw(2_000, 0, 6, 5),
            f(3_000, 0, 5, 3, 1),
            Record::Task(Task { ts_ns: 3_500, pid: 6, tgid: 5, comm: "b".into() }),
            sw(4_000, 1, 0, 6),
        ]);
        assert_eq!(p.summary.schedule, ScheduleMode::Switch);
        assert_eq!(p.summary.processes, 1, "6 is a thread of 5");
        let t5 = &p.threads[0];
        let spans: Vec<_> = t5.segments.iter().map(|s| (s.cpu, s.from_ns, s.to_ns)).collect();
        assert_eq!(spans, vec![(0, 0, 1_000), (0, 2_000, 4_000)]);
        assert!(t5.sleeps_before(1));
        let t6 = &p.threads[1];
        let spans: Vec<_> = t6.segments.iter().map(|s| (s.cpu, s.from_ns, s.to_ns)).collect();
        assert_eq!(spans, vec![(0, 1_000, 2_000), (1, 4_000, 4_000)]);
    }

    #[test]
    fn without_switches_another_threads_event_ends_a_run() {
        // Threads 5 and 6 take turns on CPU 0 every 100 µs; 5 also runs on CPU 1 later.
        let mut r: Vec<Record> =
            (0..6).map(|i| f(i * 100_000, 0, if i % 2 == 0 { 5 } else { 6 }, 3, 1)).collect();
        r.push(f(600_000, 1, 5, 3, 1));
        r.push(f(650_000, 1, 5, 3, 1));
        let p = plan(r);
        let spans = |t: &Thread| -> Vec<(u16, u64, u64)> {
            t.segments.iter().map(|s| (s.cpu, s.from_ns, s.to_ns)).collect()
        };
        assert_eq!(
            spans(&p.threads[0]),
            vec![(0, 0, 0), (0, 200_000, 200_000), (0, 400_000, 400_000), (1, 600_000, 650_000)]
        );
        assert_eq!(
            spans(&p.threads[1]),
            vec![(0, 100_000, 100_000), (0, 300_000, 300_000), (0, 500_000, 500_000)]
        );
    }

    #[test]
    fn kernel_threads_without_requests_are_left_out() {
        let task =
            |pid, comm: &str| Record::Task(Task { ts_ns: 0, pid, tgid: pid, comm: comm.into() });
        let sw = |ts_ns, prev_pid, next_pid| {
            Record::Switch(Switch { ts_ns, cpu: 0, prev_pid, prev_state: 1, next_pid })
        };
        let p = plan(vec![
            task(5, "app"),
            task(7, "kworker/0:1"),
            task(8, "kswapd0"),
            sw(0, 0, 5),
            f(10, 0, 5, 3, 1),
            sw(20, 5, 7),
            sw(30, 7, 8),
            f(40, 0, 8, 2, -1),
            sw(50, 8, 5),
        ]);
        assert_eq!(p.summary.kernel_threads_left_out, 1, "the kworker; kswapd made a request");
        let pids: Vec<i32> = p.threads.iter().map(|t| t.pid).collect();
        assert_eq!(pids, vec![5, 8]);
    }

    /// Gaps longer than 2 s lose their excess; times between gaps keep their distances; the
    /// map never goes back, even inside a gap.
    #[test]
    fn quiet_gaps_are_shortened_to_two_seconds() {
        let s = 1_000_000_000;
        let mut q = Quiet::default();
        q.gap(10, 10 + s); // 1 s: kept
        q.gap(100 * s, 105 * s); // 5 s: 3 s skipped
        q.gap(200 * s, 200 * s + 2 * s + 1); // 1 ns skipped
        assert_eq!((q.gaps.len(), q.total), (2, 3 * s + 1));
        assert_eq!(q.map(50 * s), 50 * s);
        assert_eq!(q.map(100 * s), 100 * s);
        assert_eq!(q.map(105 * s), 102 * s);
        assert_eq!(q.map(150 * s), 147 * s);
        assert_eq!(q.map(202 * s + 1), 199 * s);
        let inside: Vec<u64> = (0..=50).map(|i| q.map(100 * s + i * s / 10)).collect();
        assert!(inside.windows(2).all(|w| w[0] <= w[1]), "{inside:?}");
        assert_eq!(*inside.last().unwrap(), 102 * s);
    }

    #[test]
    fn without_switches_a_gap_longer_than_the_idle_gap_is_sleep() {
        let p = plan(vec![f(0, 0, 5, 3, 1), f(500_000, 0, 5, 3, 1), f(5_000_000, 0, 5, 3, 1)]);
        assert_eq!(p.summary.schedule, ScheduleMode::Inferred);
        let t = &p.threads[0];
        let spans: Vec<_> =
            t.segments.iter().map(|s| (s.from_ns, s.to_ns, s.first, s.end)).collect();
        assert_eq!(spans, vec![(0, 500_000, 0, 2), (5_000_000, 5_000_000, 2, 3)]);
        assert_eq!(p.summary.threads_without_tgid, 1);
    }
}
