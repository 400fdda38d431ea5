//! `tlb_flush` events by thread, grouped into processes with the trace's task records.
//!
//! Each event is counted for the thread in `common_pid` under what the task records said about
//! that pid *at that moment*: a task record naming another process for a known pid (pid reuse)
//! starts a new entry, so events before and after are not mixed up; a record with a new `comm`
//! (exec) renames the entry. Threads whose process is unknown (no task record, or tgid -1) stay
//! on their own.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::rate::GROUPS;
use super::schema::{GroupCounts, ProcessRest, ProcessRow, Processes};
use crate::model::Task;

/// Hashes a pid with one multiplication (Fibonacci hashing); pids are not attacker-chosen here
/// and the default SipHash would dominate the cost of counting an event.
#[derive(Default)]
struct PidHasher(u64);

impl Hasher for PidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i32(&mut self, i: i32) {
        self.0 = u64::from(i as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// One thread under one process.
#[derive(Debug, Clone)]
struct Entry {
    pid: i32,
    tgid: i32,
    comm: Option<String>,
    counts: [u64; GROUPS],
}

/// Counts per thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskCounter {
    /// pid → its current entry.
    index: HashMap<i32, usize, BuildHasherDefault<PidHasher>>,
    entries: Vec<Entry>,
    /// The previous event's pid and entry: consecutive events mostly come from one thread.
    last: Option<(i32, usize)>,
}

impl TaskCounter {
    /// Takes in what a task record says.
    pub(crate) fn task(&mut self, t: &Task) {
        match self.index.get(&t.pid).copied() {
            Some(i)
                if self.entries[i].tgid == -1 || t.tgid == -1 || self.entries[i].tgid == t.tgid =>
            {
                let e = &mut self.entries[i];
                if t.tgid != -1 {
                    e.tgid = t.tgid;
                }
                e.comm = Some(t.comm.clone());
            }
            _ => {
                let i = self.push(t.pid, t.tgid, Some(t.comm.clone()));
                if self.last.is_some_and(|(pid, _)| pid == t.pid) {
                    self.last = Some((t.pid, i));
                }
            }
        }
    }

    fn push(&mut self, pid: i32, tgid: i32, comm: Option<String>) -> usize {
        self.entries.push(Entry { pid, tgid, comm, counts: [0; GROUPS] });
        let i = self.entries.len() - 1;
        self.index.insert(pid, i);
        i
    }

    /// Counts an event of `group` for `pid`.
    #[inline]
    pub(crate) fn event(&mut self, pid: i32, group: usize) {
        let i = match self.last {
            Some((p, i)) if p == pid => i,
            _ => {
                let i = match self.index.get(&pid) {
                    Some(&i) => i,
                    None => self.push(pid, -1, None),
                };
                self.last = Some((pid, i));
                i
            }
        };
        self.entries[i].counts[group] += 1;
    }

    /// The processes with events, the `top` busiest first, the rest together.
    pub(crate) fn finish(&self, top: usize) -> Processes {
        /// Known process: (tgid, None); unknown: (-1, Some(pid)).
        type Key = (i32, Option<i32>);
        let key = |e: &Entry| if e.tgid == -1 { (-1, Some(e.pid)) } else { (e.tgid, None) };
        #[derive(Default)]
        struct Group {
            counts: [u64; GROUPS],
            threads: u64,
            leader_comm: Option<String>,
            /// The lowest-numbered thread with a name.
            named: Option<(i32, String)>,
        }
        let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
        for e in self.entries.iter().filter(|e| e.counts.iter().any(|&c| c > 0)) {
            let g = groups.entry(key(e)).or_default();
            g.threads += 1;
            g.counts.iter_mut().zip(e.counts).for_each(|(s, c)| *s += c);
        }
        // Names come from every entry, also threads without events (a leader that only waits).
        for e in &self.entries {
            let (Some(g), Some(comm)) = (groups.get_mut(&key(e)), &e.comm) else { continue };
            if e.pid == e.tgid {
                g.leader_comm = Some(comm.clone());
            }
            if g.named.as_ref().is_none_or(|(pid, _)| e.pid < *pid) {
                g.named = Some((e.pid, comm.clone()));
            }
        }
        let counts = |c: [u64; GROUPS]| GroupCounts {
            initiated: c[0],
            sends: c[1],
            received: c[2],
            switch: c[3],
            other: c[4],
        };
        let mut rows: Vec<ProcessRow> = groups
            .into_iter()
            .map(|((tgid, pid), g)| ProcessRow {
                tgid,
                pid,
                comm: g
                    .leader_comm
                    .or(g.named.map(|(_, c)| c))
                    // ftrace's name for the idle task, which has no task record.
                    .unwrap_or_else(|| {
                        if tgid == 0 || pid == Some(0) { "<idle>" } else { "" }.into()
                    }),
                threads: g.threads,
                events: counts(g.counts),
                total: g.counts.iter().sum(),
            })
            .collect();
        // Stable sort: ties keep the BTreeMap's ascending (tgid, pid) order.
        rows.sort_by_key(|r| std::cmp::Reverse(r.total));
        let count = rows.len() as u64;
        let rest: Vec<ProcessRow> = rows.split_off(top.min(rows.len()));
        let rest = (!rest.is_empty()).then(|| {
            let mut sum = [0u64; GROUPS];
            for r in &rest {
                let e = r.events;
                for (s, c) in
                    sum.iter_mut().zip([e.initiated, e.sends, e.received, e.switch, e.other])
                {
                    *s += c;
                }
            }
            ProcessRest {
                processes: rest.len() as u64,
                threads: rest.iter().map(|r| r.threads).sum(),
                events: counts(sum),
                total: sum.iter().sum(),
            }
        });
        Processes { count, top: rows, rest }
    }
}
