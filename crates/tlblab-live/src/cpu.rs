//! Online CPUs, pinning, and restoring the caller's affinity.

use crate::error::{Context, LiveError};
use nix::errno::Errno;
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::cell::RefCell;
use std::marker::PhantomData;

const ONLINE: &str = "/sys/devices/system/cpu/online";

/// The online CPUs, from `/sys/devices/system/cpu/online` (not from the caller's affinity, which
/// an earlier `prepare` on this thread may have narrowed to one CPU).
pub fn online_cpus() -> Result<Vec<usize>, LiveError> {
    let text =
        std::fs::read_to_string(ONLINE).map_err(|source| LiveError::Io { path: ONLINE, source })?;
    parse_cpu_list(&text).ok_or(LiveError::Parse { path: ONLINE, text })
}

/// Parses the kernel's CPU list format (`0-3,6,8-9`) with [`tlblab_types::parse_cpu_list`], and
/// refuses CPUs beyond what an affinity mask can hold.
pub(crate) fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let cpus = tlblab_types::parse_cpu_list(text).ok()?;
    let cpus: Vec<usize> = cpus.into_iter().map(|c| c as usize).collect();
    cpus.iter().all(|&c| c < CpuSet::count()).then_some(cpus)
}

/// The CPUs the calling thread may run on.
pub fn thread_affinity() -> Result<Vec<usize>, LiveError> {
    let set =
        sched_getaffinity(Pid::from_raw(0)).call(|| "sched_getaffinity(this thread)".into())?;
    Ok((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
}

/// A set holding one CPU.
pub(crate) fn one_cpu(cpu: usize) -> Result<CpuSet, Errno> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    Ok(set)
}

/// Pins the calling thread to `cpu`. Allocation-free, so forked children may call it.
pub(crate) fn pin_current(cpu: usize) -> Result<(), Errno> {
    sched_setaffinity(Pid::from_raw(0), &one_cpu(cpu)?)
}

thread_local! {
    /// The affinity this thread had before its first live `Prepared`, and how many are alive.
    static SAVED: RefCell<Option<(CpuSet, usize)>> = const { RefCell::new(None) };
}

/// Restores the calling thread's CPU affinity when the last guard on the thread is dropped.
///
/// Guards nest: the first one on a thread saves the affinity, later ones (a harness that prepares
/// configurations A and B to interleave their runs) only count, so the original affinity comes
/// back whatever the drop order. The guard is `!Send`: it must drop on the thread it saved.
pub(crate) struct AffinityGuard {
    _not_send: PhantomData<*const ()>,
}

impl AffinityGuard {
    pub(crate) fn save() -> Result<AffinityGuard, LiveError> {
        SAVED.with(|s| {
            let mut s = s.borrow_mut();
            match s.as_mut() {
                Some((_, n)) => *n += 1,
                None => {
                    let set = sched_getaffinity(Pid::from_raw(0))
                        .call(|| "sched_getaffinity(this thread)".into())?;
                    *s = Some((set, 1));
                }
            }
            Ok(AffinityGuard { _not_send: PhantomData })
        })
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        SAVED.with(|s| {
            let mut s = s.borrow_mut();
            if let Some((set, n)) = s.as_mut() {
                *n -= 1;
                if *n == 0 {
                    let _ = sched_setaffinity(Pid::from_raw(0), set);
                    *s = None;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_beyond_an_affinity_mask_are_refused() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("2-1"), None);
        assert_eq!(parse_cpu_list("0-99999"), None);
    }

    #[test]
    fn nested_guards_restore_the_first_saved_affinity() {
        let before = thread_affinity().unwrap();
        let online = online_cpus().unwrap();
        let a = AffinityGuard::save().unwrap();
        pin_current(online[0]).unwrap();
        let b = AffinityGuard::save().unwrap();
        drop(a); // out of order: b still holds the count
        assert_eq!(thread_affinity().unwrap(), vec![online[0]]);
        drop(b);
        assert_eq!(thread_affinity().unwrap(), before);
    }
}
