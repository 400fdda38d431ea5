//! A private tracing instance (`instances/tlblab-<pid>-<pidns>-<n>-<purpose>`), removed on drop.
//!
//! tlblab never touches the top-level buffer or instances it did not create. Every exit path
//! removes the instance: [`Instance::remove`] (errors returned), `Drop` (also while unwinding
//! from a panic), [`remove_registered_instances`] (for a thread that watches SIGINT/SIGTERM),
//! and [`cleanup_stale`] for instances left by a process that was killed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{read_text, write_text, Error, Result};
use crate::event::{CpuLoss, Schema};
use crate::format::{parse_header_page, EventFormat, EventName};
use crate::mount::{online_cpus, read_event_format, Tracefs};
use crate::ringbuf::PageLayout;

/// Prefix of every instance this crate creates.
pub const INSTANCE_PREFIX: &str = "tlblab-";

/// What to set up in a new instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceOptions {
    /// `buffer_size_kb`: ring-buffer size per CPU.
    pub buffer_size_kb: u32,
    /// Events to enable; a missing one is an error.
    pub required_events: Vec<EventName>,
    /// Events to enable if the kernel has them; a missing one gives a note.
    pub optional_events: Vec<EventName>,
    /// Record only these pids (`set_event_pid`); empty = system-wide.
    pub pids: Vec<u32>,
    /// With `pids`: also follow their children (`options/event-fork`).
    pub follow_forks: bool,
    /// `trace_clock`; `mono` makes timestamps comparable with `CLOCK_MONOTONIC`, which the
    /// merging reader uses. Falls back to the kernel default, with a note, if unavailable.
    pub clock: Option<String>,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            buffer_size_kb: 4096,
            required_events: vec![EventName::tlb_flush()],
            optional_events: Vec::new(),
            pids: Vec::new(),
            follow_forks: false,
            clock: Some("mono".into()),
        }
    }
}

/// A tracing instance owned by this process.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    name: String,
    enabled: Vec<EventName>,
    notes: Vec<String>,
    clock: String,
    removed: bool,
}

/// Instance directories created and not yet removed by this process.
static REGISTRY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

fn registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Instance {
    /// Creates `instances/tlblab-<pid>-<pidns>-<n>-<purpose>` (`pidns`: the inode of our pid
    /// namespace, as containers share one tracefs), configures it and turns tracing on.
    /// `purpose` (e.g. `bench`, `trace`) is reduced to `[a-z0-9_]`, at most 16 characters. On
    /// any error the instance is removed again.
    pub fn create(tracefs: &Tracefs, purpose: &str, opts: &InstanceOptions) -> Result<Instance> {
        let purpose: String = purpose
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(16)
            .collect();
        let instances = tracefs.root().join("instances");
        let (dir, name) = loop {
            let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "{INSTANCE_PREFIX}{}-{}-{n}-{purpose}",
                std::process::id(),
                own_pid_namespace()
            );
            let dir = instances.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => break (dir, name),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("mkdir", &dir, e)),
            }
        };
        registry().push(dir.clone());
        // From here on, an early return drops `inst`, which removes the directory.
        let mut inst = Instance {
            dir,
            name,
            enabled: Vec::new(),
            notes: Vec::new(),
            clock: String::new(),
            removed: false,
        };
        inst.configure(opts)?;
        Ok(inst)
    }

    fn configure(&mut self, opts: &InstanceOptions) -> Result<()> {
        self.set_tracing_on(false)?;
        write_text(&self.dir.join("buffer_size_kb"), &opts.buffer_size_kb.to_string())?;
        if let Some(clock) = &opts.clock {
            let path = self.dir.join("trace_clock");
            if let Err(e) = write_text(&path, clock) {
                self.notes.push(format!("trace clock {clock:?} not set ({e}); using the default"));
            }
        }
        self.clock = current_clock(&read_text(&self.dir.join("trace_clock"))?);
        if !opts.pids.is_empty() {
            self.set_event_pids(&opts.pids, opts.follow_forks)?;
        }
        let events = opts.required_events.iter().map(|e| (e, true));
        for (event, required) in events.chain(opts.optional_events.iter().map(|e| (e, false))) {
            let event_dir = self.dir.join("events").join(&event.system).join(&event.name);
            if !event_dir.is_dir() {
                if required {
                    return Err(Error::MissingEvent { event: event.to_string(), path: event_dir });
                }
                self.notes.push(format!("event {event} is not available on this kernel: skipped"));
                continue;
            }
            write_text(&event_dir.join("enable"), "1")?;
            self.enabled.push(event.clone());
        }
        self.set_tracing_on(true)
    }

    /// The instance directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The instance name (`tlblab-<pid>-<pidns>-<n>-<purpose>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The events that were enabled.
    pub fn enabled_events(&self) -> &[EventName] {
        &self.enabled
    }

    /// Notes about what was skipped (missing optional events, clock not settable).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The trace clock in use (`mono`, `local`, ...).
    pub fn clock(&self) -> &str {
        &self.clock
    }

    /// Records only events of these threads (`set_event_pid`; an empty list clears the filter)
    /// and, with `follow_forks`, of the threads and processes they create from now on
    /// (`options/event-fork`). For `-- CMD` tracing: start the child blocked, set its pid here,
    /// then let it run.
    pub fn set_event_pids(&self, pids: &[u32], follow_forks: bool) -> Result<()> {
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        // Opening with O_TRUNC clears the list; with no pids nothing more is written.
        write_text(&self.dir.join("set_event_pid"), &pids.join(" "))?;
        write_text(&self.dir.join("options/event-fork"), if follow_forks { "1" } else { "0" })
    }

    /// Writes `tracing_on`.
    pub fn set_tracing_on(&self, on: bool) -> Result<()> {
        write_text(&self.dir.join("tracing_on"), if on { "1" } else { "0" })
    }

    /// Empties this instance's buffers and zeroes their loss counters (truncates its `trace`
    /// file), so that the next reading holds only what is recorded from now on.
    pub fn clear(&self) -> Result<()> {
        write_text(&self.dir.join("trace"), "")
    }

    /// The page layout of this instance's buffers (`events/header_page`).
    pub fn page_layout(&self) -> Result<PageLayout> {
        let path = self.dir.join("events/header_page");
        Ok(PageLayout::from_header(&parse_header_page(&read_text(&path)?, &path)?))
    }

    /// The format of `event` as this instance sees it.
    pub fn event_format(&self, event: &EventName) -> Result<EventFormat> {
        read_event_format(&self.dir, event)
    }

    /// The formats of all enabled events.
    pub fn schema(&self) -> Result<Schema> {
        let formats =
            self.enabled.iter().map(|e| self.event_format(e)).collect::<Result<Vec<_>>>()?;
        Schema::new(formats).ok_or_else(|| {
            Error::format(
                &self.dir.join("events"),
                0,
                "no enabled event with common_type and common_pid",
            )
        })
    }

    /// The online CPUs whose buffers this instance has.
    pub fn cpus(&self) -> Result<Vec<u32>> {
        Ok(online_cpus()?.into_iter().filter(|c| self.cpu_dir(*c).is_dir()).collect())
    }

    pub(crate) fn cpu_dir(&self, cpu: u32) -> PathBuf {
        self.dir.join(format!("per_cpu/cpu{cpu}"))
    }

    /// The kernel's loss counters of one CPU (`per_cpu/cpuN/stats`).
    pub fn cpu_stats(&self, cpu: u32) -> Result<CpuLoss> {
        let path = self.cpu_dir(cpu).join("stats");
        Ok(parse_cpu_stats(cpu, &read_text(&path)?))
    }

    /// Turns tracing off and removes the instance, returning any error.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        remove_instance_dir(&self.dir)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.removed {
            // Errors cannot be returned from drop; `remove()` is the way to see them, and
            // `cleanup_stale` removes what is left after this process exits.
            let _ = remove_instance_dir(&self.dir);
        }
    }
}

fn current_clock(trace_clock: &str) -> String {
    trace_clock
        .split_whitespace()
        .find_map(|c| c.strip_prefix('[').and_then(|c| c.strip_suffix(']')))
        .unwrap_or("local")
        .to_string()
}

pub(crate) fn parse_cpu_stats(cpu: u32, text: &str) -> CpuLoss {
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.trim().parse::<u64>().ok())
    };
    CpuLoss {
        cpu,
        overrun: value("overrun"),
        dropped_events: value("dropped events"),
        ..CpuLoss::default()
    }
}

/// Turns tracing off and removes an instance directory; a directory already gone is fine.
/// The kernel refuses (EBUSY) while a `trace_pipe*` file is open, so retry for up to ~1 s.
fn remove_instance_dir(dir: &Path) -> Result<()> {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    let mut tries = 0;
    let result = loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => break Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => break Ok(()),
            Err(e)
                if e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error())
                    && tries < 50 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => break Err(Error::io("rmdir", dir, e)),
        }
    };
    if result.is_ok() {
        registry().retain(|d| d != dir);
    }
    result
}

/// Removes every instance this process created and has not removed yet. Meant for a thread
/// that waits for SIGINT/SIGTERM (e.g. with `signal-hook`'s `Signals` iterator) just before
/// the process exits; not async-signal-safe, so do not call it from a signal handler itself.
/// Instances whose reader still has `trace_pipe_raw` open stay busy; a later
/// [`cleanup_stale`] removes them.
pub fn remove_registered_instances() -> Vec<(PathBuf, Result<()>)> {
    let dirs: Vec<PathBuf> = registry().clone();
    dirs.into_iter()
        .map(|d| {
            let r = remove_instance_dir(&d);
            (d, r)
        })
        .collect()
}

/// An instance removed (or attempted) by [`cleanup_stale`].
#[derive(Debug)]
pub struct Removed {
    /// Instance name.
    pub name: String,
    /// The dead pid in its name.
    pub pid: u32,
    /// Whether removal worked.
    pub result: Result<()>,
}

/// Who created an instance, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The creating process.
    pub pid: u32,
    /// The inode of its pid namespace (`/proc/self/ns/pid`).
    pub pid_ns: u64,
}

/// The owner encoded in an instance name made by [`Instance::create`], if it is one.
pub fn instance_owner(name: &str) -> Option<Owner> {
    let mut parts = name.strip_prefix(INSTANCE_PREFIX)?.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let pid_ns = parts.next()?.parse().ok()?;
    parts.next()?;
    Some(Owner { pid, pid_ns })
}

/// The inode of this process's pid namespace; 0 if `/proc/self/ns/pid` is unreadable.
fn own_pid_namespace() -> u64 {
    let link = std::fs::read_link("/proc/self/ns/pid").ok();
    let ino = link
        .as_ref()
        .and_then(|l| l.to_str()?.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok());
    ino.unwrap_or(0)
}

/// Removes the `tlblab-<pid>-<pidns>-*` instances of our pid namespace whose process is gone
/// (no `/proc/<pid>`). Live ones, other tools' instances and instances made in other pid
/// namespaces (containers sharing this kernel: their pids mean nothing here) are left alone.
pub fn cleanup_stale(tracefs: &Tracefs) -> Result<Vec<Removed>> {
    let instances = tracefs.root().join("instances");
    let entries = std::fs::read_dir(&instances).map_err(|e| Error::io("read", &instances, e))?;
    let our_ns = own_pid_namespace();
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", &instances, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(owner) = instance_owner(&name) else { continue };
        if owner.pid_ns != our_ns || Path::new(&format!("/proc/{}", owner.pid)).exists() {
            continue;
        }
        let result = remove_instance_dir(&entry.path());
        removed.push(Removed { name, pid: owner.pid, result });
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names() {
        let owner = |pid, pid_ns| Some(Owner { pid, pid_ns });
        assert_eq!(instance_owner("tlblab-1234-4026531836-0-bench"), owner(1234, 4026531836));
        assert_eq!(instance_owner("tlblab-1234-5-7-"), owner(1234, 5));
        assert_eq!(instance_owner("tlblab-1234-0"), None, "no counter");
        assert_eq!(instance_owner("tlblab-x-1-0-a"), None);
        assert_eq!(instance_owner("perf-1234-1-0-a"), None);
        assert!(own_pid_namespace() > 0);
    }

    #[test]
    fn clock_and_stats_files() {
        assert_eq!(current_clock("local global [mono] boot\n"), "mono");
        assert_eq!(current_clock("[local] global\n"), "local");
        let stats =
            "entries: 5\noverrun: 12\ncommit overrun: 0\nbytes: 100\noldest event ts:  1.000\n\
                     now ts:  2.000\ndropped events: 3\nread events: 9\n";
        let l = parse_cpu_stats(1, stats);
        assert_eq!((l.cpu, l.overrun, l.dropped_events), (1, Some(12), Some(3)));
        assert!(l.any());
    }
}
