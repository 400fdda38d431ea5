//! The crate's only unsafe code: a private anonymous mapping touched page by page, `madvise`,
//! `mprotect`, `mmap`/`munmap` of an untouched region, `fork` and `clone` + `_exit`,
//! `membarrier`, a CPU-bound perf event toggled by `ioctl`, and `sched_setscheduler`.
//!
//! The invariants: an [`Anon`] owns its mapping (unmapped on drop, touched only within its
//! pages); no Rust reference ever points into it; a cloned child calls only `_exit`, and a
//! forked one runs its body and `_exit`s.
#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::sys::mman::{self, MapFlags, MmapAdvise, ProtFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::ptr::NonNull;

/// The x86 base page.
pub(crate) const PAGE: usize = 4096;

/// A private anonymous read-write mapping, `MADV_NOHUGEPAGE`, owned by this value.
pub(crate) struct Anon {
    ptr: NonNull<c_void>,
    pages: usize,
}

impl Anon {
    /// Maps `pages` fresh pages (nothing present until touched).
    pub(crate) fn map(pages: usize) -> Result<Anon, Errno> {
        let len = pages.checked_mul(PAGE).and_then(NonZeroUsize::new).ok_or(Errno::EINVAL)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: a new mapping at an address the kernel chooses affects no existing memory.
        let ptr = unsafe { mman::mmap_anonymous(None, len, prot, MapFlags::MAP_PRIVATE)? };
        let region = Anon { ptr, pages };
        // SAFETY: advice on our own mapping; NOHUGEPAGE changes no contents.
        unsafe { mman::madvise(ptr, len.get(), MmapAdvise::MADV_NOHUGEPAGE)? };
        Ok(region)
    }

    fn byte(&self, page: usize) -> *mut u8 {
        assert!(page < self.pages, "page {page} outside a {}-page region", self.pages);
        self.ptr.as_ptr().cast::<u8>().wrapping_add(page * PAGE)
    }

    /// Reads the first byte of `page` (a first read maps the zero page).
    pub(crate) fn read(&self, page: usize) -> u8 {
        // SAFETY: in bounds (checked), mapped readable; no reference aliases the mapping.
        unsafe { self.byte(page).read_volatile() }
    }

    /// Writes the first byte of `page` (a first write allocates the page).
    pub(crate) fn write(&self, page: usize) {
        // SAFETY: in bounds (checked), mapped writable; no reference aliases the mapping.
        unsafe { self.byte(page).write_volatile(1) }
    }

    /// `mprotect` of the whole region: read-write, or read-only (no write may follow until it is
    /// read-write again).
    pub(crate) fn protect(&self, writable: bool) -> Result<(), Errno> {
        let prot = if writable {
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
        } else {
            ProtFlags::PROT_READ
        };
        // SAFETY: our own mapping, whole; a protection change moves no memory, and the callers
        // write only while the region is read-write.
        unsafe { mman::mprotect(self.ptr, self.pages * PAGE, prot) }
    }

    /// Whether children forked from now on inherit the region (`MADV_DOFORK`) or not
    /// (`MADV_DONTFORK`).
    pub(crate) fn inherited(&self, yes: bool) -> Result<(), Errno> {
        let advice = if yes { MmapAdvise::MADV_DOFORK } else { MmapAdvise::MADV_DONTFORK };
        // SAFETY: our own mapping, whole; the advice changes only what a later fork copies.
        unsafe { mman::madvise(self.ptr, self.pages * PAGE, advice) }
    }

    /// `madvise(MADV_DONTNEED)` of `pages`.
    pub(crate) fn dontneed(&self, pages: Range<usize>) -> Result<(), Errno> {
        assert!(pages.start < pages.end && pages.end <= self.pages);
        let start = NonNull::new(self.byte(pages.start).cast::<c_void>()).ok_or(Errno::EINVAL)?;
        // SAFETY: our own mapping, in bounds; DONTNEED only makes later reads see zeroes, and no
        // Rust reference points into it.
        unsafe { mman::madvise(start, (pages.end - pages.start) * PAGE, MmapAdvise::MADV_DONTNEED) }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and nothing refers to it any more.
        let _ = unsafe { mman::munmap(self.ptr, self.pages * PAGE) };
    }
}

/// Two anonymous pages in one VMA, the lower one written: unmapping the upper page splits the
/// VMA (`__split_vma()`), and mapping it back with `MAP_FIXED_NOREPLACE` merges it again (same
/// flags, and the lower page's anon_vma is compatible with none).
pub(crate) struct MergedPair {
    ptr: NonNull<c_void>,
}

impl MergedPair {
    /// Maps the pair and writes its lower page.
    pub(crate) fn map() -> Result<MergedPair, Errno> {
        let len = NonZeroUsize::new(2 * PAGE).ok_or(Errno::EINVAL)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: a new mapping at an address the kernel chooses affects no existing memory.
        let ptr = unsafe { mman::mmap_anonymous(None, len, prot, MapFlags::MAP_PRIVATE)? };
        // SAFETY: the first byte of our own fresh read-write mapping.
        unsafe { ptr.as_ptr().cast::<u8>().write_volatile(1) };
        Ok(MergedPair { ptr })
    }

    fn upper(&self) -> NonNull<c_void> {
        // SAFETY: one page into a 2-page mapping: in bounds, not null.
        unsafe { NonNull::new_unchecked(self.ptr.as_ptr().cast::<u8>().add(PAGE).cast()) }
    }

    /// `munmap` of the upper page (untouched: no zap, no flush).
    pub(crate) fn unmap_upper(&self) -> Result<(), Errno> {
        // SAFETY: our own page, which nothing refers to.
        unsafe { mman::munmap(self.upper(), PAGE) }
    }

    /// Maps the upper page again, at its address.
    pub(crate) fn remap_upper(&self) -> Result<(), Errno> {
        let len = NonZeroUsize::new(PAGE).ok_or(Errno::EINVAL)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        let flags = MapFlags::MAP_PRIVATE | MapFlags::MAP_FIXED_NOREPLACE;
        let at = NonZeroUsize::new(self.upper().as_ptr() as usize);
        // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping; the address is the page this
        // value unmapped.
        unsafe { mman::mmap_anonymous(at, len, prot, flags).map(|_| ()) }
    }
}

impl Drop for MergedPair {
    fn drop(&mut self) {
        // SAFETY: the pair is ours (its upper page may be unmapped: munmap ignores that).
        let _ = unsafe { mman::munmap(self.ptr, 2 * PAGE) };
    }
}

/// `mmap` of `pages` anonymous pages, then `munmap`, touching nothing.
pub(crate) fn map_unmap_untouched(pages: usize) -> Result<(), Errno> {
    let len = pages.checked_mul(PAGE).and_then(NonZeroUsize::new).ok_or(Errno::EINVAL)?;
    let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
    // SAFETY: a new mapping, unmapped at once; nothing refers to it.
    unsafe {
        let ptr = mman::mmap_anonymous(None, len, prot, MapFlags::MAP_PRIVATE)?;
        mman::munmap(ptr, len.get())
    }
}

/// The kernel's fork: `clone(SIGCHLD)` without the C library's fork handlers (which would touch
/// memory the child may not have, see [`withhold_from_children`]); the child calls `_exit(0)` at
/// once, touching only its stack; the parent reaps it.
pub(crate) fn clone_exit_wait() -> Result<(), Errno> {
    // SAFETY: a clone without CLONE_VM gives the child a copy of the address space (less what
    // is withheld), and the child runs nothing but `_exit` on the copy of this thread's stack.
    let pid =
        unsafe { libc::syscall(libc::SYS_clone, libc::c_long::from(libc::SIGCHLD), 0, 0, 0, 0) };
    match pid {
        -1 => Err(Errno::last()),
        // SAFETY: `_exit` is exit_group(2): it runs no handler and needs no memory but the stack.
        0 => unsafe { libc::_exit(0) },
        child => match waitpid(nix::unistd::Pid::from_raw(child as libc::pid_t), None)? {
            WaitStatus::Exited(_, 0) => Ok(()),
            _ => Err(Errno::ECHILD),
        },
    }
}

/// `madvise(MADV_DONTFORK)` of `range` (page-aligned): the caller's children do not inherit it.
/// The caller's own memory is unchanged.
pub(crate) fn withhold_from_children(range: Range<usize>) -> Result<(), Errno> {
    let start = NonNull::new(range.start as *mut c_void).ok_or(Errno::EINVAL)?;
    // SAFETY: DONTFORK changes only what a later fork copies; nothing in this process moves.
    unsafe { mman::madvise(start, range.end - range.start, MmapAdvise::MADV_DONTFORK) }
}

/// Runs `body` in a forked child process and returns what it wrote (its return value), or why
/// the child gave nothing. The child ends with `_exit`: no destructor or exit handler of this
/// process runs twice. `body` may allocate (the C library makes `malloc` safe in the child of a
/// multi-threaded process) but must not wait on another thread of this process: it has none.
pub(crate) fn in_child(body: impl FnOnce() -> String) -> Result<String, String> {
    // Close-on-exec: a program another thread starts meanwhile must not hold the write end open.
    let (mut read, mut write) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the child runs `body`, writes, and `_exit`s; it never returns into the caller.
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            drop(read);
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
                .unwrap_or_else(|_| "the measuring child panicked".to_owned());
            let code = i32::from(std::io::Write::write_all(&mut write, out.as_bytes()).is_err());
            // SAFETY: exit_group(2) without this process's exit handlers (they belong to the
            // parent).
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            drop(write);
            let mut out = String::new();
            let read = std::io::Read::read_to_string(&mut read, &mut out);
            let status = waitpid(child, None).map_err(|e| format!("waitpid: {e}"))?;
            read.map_err(|e| format!("reading the measuring child's result: {e}"))?;
            match status {
                WaitStatus::Exited(_, 0) => Ok(out),
                other => Err(format!("the measuring child ended with {other:?}")),
            }
        }
    }
}

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (Linux UAPI `linux/membarrier.h`).
pub(crate) const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
pub(crate) const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// `membarrier(cmd, 0, 0)`.
pub(crate) fn membarrier(cmd: libc::c_int) -> Result<(), Errno> {
    // SAFETY: membarrier takes no pointers; it only orders memory or fails.
    let r =
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) };
    Errno::result(r).map(drop)
}

/// `perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64 bytes: the kernel accepts any
/// published size and zero-fills the rest), from Linux UAPI `linux/perf_event.h`.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bit field; bit 0 is `disabled`.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// `PERF_TYPE_SOFTWARE`.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_DUMMY`: counts nothing; scheduling it in and out is list work only.
const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `PERF_EVENT_IOC_ENABLE`, `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`, `_IO('$', 1)`.
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// A software perf event bound to one CPU (any task), created disabled. Enabling or disabling
/// it runs `event_function_call()` → `cpu_function_call()` →
/// `smp_call_function_single(cpu, …, wait = 1)` (kernel/events/core.c): on another CPU one
/// synchronous call-function IPI round trip, on the caller's own CPU the same function called
/// directly with interrupts off. Needs `CAP_PERFMON` (or root) or `perf_event_paranoid` ≤ 0.
pub(crate) struct CpuEvent {
    fd: std::os::fd::OwnedFd,
    enabled: std::cell::Cell<bool>,
}

impl CpuEvent {
    /// Opens the event on `cpu`.
    pub(crate) fn open(cpu: usize) -> Result<CpuEvent, Errno> {
        use std::os::fd::FromRawFd;
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_DUMMY,
            flags: 1, // disabled
            ..PerfEventAttr::default()
        };
        let cpu = libc::c_int::try_from(cpu).map_err(|_| Errno::EINVAL)?;
        // SAFETY: `attr` is a valid, initialised perf_event_attr of the size it states, read
        // by the kernel during the call only; pid −1 with a CPU is a CPU-wide event.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        let fd = Errno::result(fd)?;
        // SAFETY: a new descriptor the kernel just gave us, owned by nothing else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) };
        Ok(CpuEvent { fd, enabled: std::cell::Cell::new(false) })
    }

    /// Enables the event if it is disabled, else disables it: one cross-CPU call either way
    /// (enabling an enabled event, or disabling a disabled one, returns without a call).
    pub(crate) fn toggle(&self) -> Result<(), Errno> {
        use std::os::fd::AsRawFd;
        let request =
            if self.enabled.get() { PERF_EVENT_IOC_DISABLE } else { PERF_EVENT_IOC_ENABLE };
        // SAFETY: an ioctl without argument on our own perf descriptor.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as _, 0) };
        Errno::result(r)?;
        self.enabled.set(!self.enabled.get());
        Ok(())
    }
}

/// Makes the calling thread `SCHED_BATCH` (nice 0): a task woken with this policy never
/// preempts the waker (`check_preempt_wakeup_fair()`), so a wake-up can be timed alone.
pub(crate) fn set_batch() -> Result<(), Errno> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is valid for the call.
    Errno::result(unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) }).map(drop)
}
