//! What the importer knows of each thread, and when a `Task` record must say something new.
//!
//! A thread is announced (a [`Task`] record before the event that revealed it, with that
//! event's timestamp) when its pid is first seen, and again when what is known of it changes:
//! another comm (an exec or a rename), or a tgid learnt or changed. Sources: the context of
//! every event line (ftrace's comm comes from its saved-cmdlines cache) and the prev/next
//! threads of `sched_switch` (the comm the kernel held at the switch; tgid unknown).
//!
//! Placeholders never replace a name: ftrace's `<...>` (the cache lost the pid) and perf's
//! `:PID` (a thread perf never saw named) announce a new pid but are ignored for a known one.
//! Pid 0 (the idle tasks) is announced once: each CPU's idle task shares it under its own name
//! (`swapper/0`, `swapper/1`, ftrace's `<idle>`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::file::MAX_COMM_BYTES;
use crate::model::Task;

/// What is known of one thread.
struct Known {
    comm: Box<[u8]>,
    placeholder: bool,
    tgid: i32,
}

/// The threads seen so far.
#[derive(Default)]
pub(super) struct Tasks {
    known: HashMap<i32, Known, BuildHasherDefault<PidHasher>>,
    /// `Task` records whose comm was cut to [`MAX_COMM_BYTES`].
    pub(super) cut: u64,
}

/// `comm` as text (invalid UTF-8 replaced), cut on a character boundary to the format's
/// [`MAX_COMM_BYTES`]; and whether it was cut.
fn comm_text(comm: &[u8]) -> (String, bool) {
    let mut text = String::from_utf8_lossy(comm).into_owned();
    if text.len() <= MAX_COMM_BYTES {
        return (text, false);
    }
    let mut end = MAX_COMM_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

impl Tasks {
    /// Notes a sighting of `pid` as `comm` (with `tgid`, -1 if unknown) at `ts_ns`, and returns
    /// the `Task` record to emit if this says something new.
    pub(super) fn sight(&mut self, ts_ns: u64, pid: i32, comm: &[u8], tgid: i32) -> Option<Task> {
        let placeholder = is_placeholder(comm);
        let cut = &mut self.cut;
        let mut task = |comm: &[u8], tgid| {
            let (comm, was_cut) = comm_text(comm);
            *cut += u64::from(was_cut);
            Task { ts_ns, pid, tgid, comm }
        };
        let Some(k) = self.known.get_mut(&pid) else {
            self.known.insert(pid, Known { comm: comm.into(), placeholder, tgid });
            return Some(task(comm, tgid));
        };
        if pid == 0 {
            return None;
        }
        let new_comm = !placeholder && (k.placeholder || *k.comm != *comm);
        let new_tgid = tgid != -1 && tgid != k.tgid;
        if !new_comm && !new_tgid {
            return None;
        }
        if new_comm {
            k.comm = comm.into();
            k.placeholder = false;
        }
        if new_tgid {
            k.tgid = tgid;
        }
        Some(task(&k.comm, k.tgid))
    }
}

/// `<...>` (ftrace) or `:PID` (perf).
fn is_placeholder(comm: &[u8]) -> bool {
    comm == b"<...>"
        || comm
            .strip_prefix(b":")
            .is_some_and(|d| !d.is_empty() && d.iter().all(|b| b.is_ascii_digit() || *b == b'-'))
}

/// A multiplicative hash for pids (SipHash costs more than the rest of a line's parse).
#[derive(Default)]
struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_i32(&mut self, i: i32) {
        self.0 = u64::from(i as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comms(t: &mut Tasks, seq: &[(i32, &str, i32)]) -> Vec<Option<(String, i32)>> {
        seq.iter()
            .enumerate()
            .map(|(i, &(pid, comm, tgid))| {
                t.sight(i as u64, pid, comm.as_bytes(), tgid).map(|t| (t.comm, t.tgid))
            })
            .collect()
    }

    #[test]
    fn announces_new_pids_and_changes_only() {
        let mut t = Tasks::default();
        let got = comms(
            &mut t,
            &[
                (10, "bash", -1),      // new
                (10, "bash", -1),      // nothing new
                (10, "bash", 10),      // tgid learnt
                (10, "<...>", -1),     // placeholder: ignored
                (10, "madv_loop", -1), // exec: new comm, tgid kept
                (11, "<...>", -1),     // new pid, placeholder announced
                (11, "worker", 10),    // name replaces the placeholder
                (0, "<idle>", -1),     // idle: once
                (0, "swapper/1", -1),
                (12, ":12", -1), // perf's placeholder
                (12, ":12", -1),
            ],
        );
        let s = |c: &str, g| Some((c.to_string(), g));
        assert_eq!(
            got,
            vec![
                s("bash", -1),
                None,
                s("bash", 10),
                None,
                s("madv_loop", 10),
                s("<...>", -1),
                s("worker", 10),
                s("<idle>", -1),
                None,
                s(":12", -1),
                None
            ]
        );
    }
}
