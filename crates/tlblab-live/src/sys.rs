//! The crate's only unsafe code: anonymous mappings at fixed addresses, volatile touches of
//! their pages, a zero-initialised `MAP_SHARED` control block, and `fork`.
//!
//! Everything else is written against the safe types defined here. The invariants they keep:
//! a [`Region`] owns its mapping (unmapped on drop, touched only within bounds and only while
//! writable); a [`Shared`] holds only types whose all-zero bytes are a valid value; a forked
//! child runs code that makes raw syscalls and touches memory, never allocates or locks, and
//! leaves with `_exit`.
#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::sys::mman::{self, MapFlags, MmapAdvise, ProtFlags};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::{self, ForkResult, Pid, SysconfVar};
use std::num::NonZeroUsize;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// The base page size, from `sysconf(_SC_PAGESIZE)` (4096 on x86).
pub(crate) fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| match unistd::sysconf(SysconfVar::PAGE_SIZE) {
        Ok(Some(n)) if n > 0 => n as usize,
        _ => 4096,
    })
}

/// Regions of at least this many bytes are marked `MADV_NOHUGEPAGE`: smaller ones can never
/// hold an aligned 2 MiB range, so no transparent huge page (or huge zero page) can back them.
const THP_BYTES: usize = 2 << 20;

/// A private anonymous read-write mapping at a fixed address, owned by this value.
pub(crate) struct Region {
    ptr: NonNull<u8>,
    pages: usize,
    /// The page size, cached: `write` and `read` use it per page.
    page: usize,
    writable: bool,
}

// SAFETY: the mapping belongs to the process, not to a thread; the value owns it exclusively.
unsafe impl Send for Region {}

impl Region {
    /// Maps `pages` pages at exactly `addr` with `MAP_FIXED_NOREPLACE`: it fails with `EEXIST`
    /// rather than replace an existing mapping, and also when an old kernel (before 4.17) took
    /// the flag as a mere hint and placed the mapping elsewhere.
    pub(crate) fn map_fixed(addr: usize, pages: usize) -> Result<Region, Errno> {
        let len =
            pages.checked_mul(page_size()).and_then(NonZeroUsize::new).ok_or(Errno::EINVAL)?;
        let flags = MapFlags::MAP_PRIVATE | MapFlags::MAP_FIXED_NOREPLACE;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping, so no memory that
        // Rust code references can be affected; the new mapping is owned by the returned value.
        let ptr = unsafe { mman::mmap_anonymous(NonZeroUsize::new(addr), len, prot, flags)? };
        let region = Region { ptr: ptr.cast(), pages, page: page_size(), writable: true };
        if ptr.as_ptr() as usize != addr {
            return Err(Errno::EEXIST); // dropping `region` unmaps the misplaced mapping
        }
        if len.get() >= THP_BYTES {
            // SAFETY: advice on our own mapping; NOHUGEPAGE does not change its contents.
            unsafe { mman::madvise(region.ptr.cast(), len.get(), MmapAdvise::MADV_NOHUGEPAGE)? };
        }
        Ok(region)
    }

    /// Pages in the region.
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// The byte range of `pages` clamped to the region.
    fn span(&self, pages: Range<usize>) -> (NonNull<std::ffi::c_void>, usize) {
        let end = pages.end.min(self.pages);
        let start = pages.start.min(end);
        // SAFETY: start <= self.pages, so the offset stays within (or one past) the mapping.
        let ptr = unsafe { self.ptr.add(start * self.page) };
        (ptr.cast(), (end - start) * self.page)
    }

    /// Writes one byte to each page in `pages` (clamped to the region).
    #[inline(always)]
    pub(crate) fn write(&self, pages: Range<usize>) -> Result<(), Errno> {
        if !self.writable {
            return Err(Errno::EACCES);
        }
        for i in pages.start..pages.end.min(self.pages) {
            // SAFETY: i < self.pages, the mapping is live and currently PROT_WRITE; the memory
            // is never referenced by Rust values, only through these volatile accesses.
            unsafe { self.ptr.add(i * self.page).write_volatile(1) };
        }
        Ok(())
    }

    /// Reads one byte of each page in `pages` (clamped to the region).
    #[inline(always)]
    pub(crate) fn read(&self, pages: Range<usize>) {
        for i in pages.start..pages.end.min(self.pages) {
            // SAFETY: as in `write`; the mapping is always at least PROT_READ.
            std::hint::black_box(unsafe { self.ptr.add(i * self.page).read_volatile() });
        }
    }

    /// The first byte of page `page` (0 beyond the region).
    #[inline(always)]
    pub(crate) fn load(&self, page: usize) -> u8 {
        if page >= self.pages {
            return 0;
        }
        // SAFETY: as in `read`.
        unsafe { self.ptr.add(page * self.page).read_volatile() }
    }

    /// `madvise(MADV_DONTNEED)` on `pages`: their next touch faults in fresh zeroed pages.
    #[inline(always)]
    pub(crate) fn dontneed(&self, pages: Range<usize>) -> Result<(), Errno> {
        let (ptr, len) = self.span(pages);
        // SAFETY: the range lies within our mapping, which no Rust value references.
        unsafe { mman::madvise(ptr, len, MmapAdvise::MADV_DONTNEED) }
    }

    /// `mprotect(PROT_READ)` then `mprotect(PROT_READ | PROT_WRITE)` on the whole region.
    #[inline(always)]
    pub(crate) fn protect_cycle(&mut self) -> Result<(), Errno> {
        let (ptr, len) = self.span(0..self.pages);
        self.writable = false;
        // SAFETY: our own mapping; `writable` is false until write access is restored, so
        // `write` refuses to store to it in between.
        unsafe { mman::mprotect(ptr, len, ProtFlags::PROT_READ)? };
        // SAFETY: as above.
        unsafe { mman::mprotect(ptr, len, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE)? };
        self.writable = true;
        Ok(())
    }

    /// Unmaps the region, reporting the error that `Drop` would ignore.
    #[inline(always)]
    pub(crate) fn unmap(self) -> Result<(), Errno> {
        let (ptr, len) = self.span(0..self.pages);
        std::mem::forget(self);
        // SAFETY: we own the mapping and `self` is forgotten, so nothing touches it again.
        unsafe { mman::munmap(ptr, len) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let (ptr, len) = self.span(0..self.pages);
        // SAFETY: we own the mapping and this is its last use.
        let _ = unsafe { mman::munmap(ptr, len) };
    }
}

/// Types for which all-zero bytes are a valid value and which are safe to share between
/// processes (plain atomics, no pointers).
///
/// # Safety
/// Implement only for types made of atomics, integers and arrays of them.
pub(crate) unsafe trait ZeroShareable: Sync {}

// SAFETY: `Control` and its `TaskSlot`s consist only of atomic integers and booleans, for which
// zero bytes mean 0 / false, and which work across processes in a MAP_SHARED mapping.
unsafe impl ZeroShareable for crate::team::Control {}

/// A `T` in a zero-filled `MAP_SHARED` anonymous mapping: threads and forked children see the
/// same memory, so atomics in it coordinate both.
pub(crate) struct Shared<T: ZeroShareable> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: T is Sync and owned by the mapping, which lives as long as this value.
unsafe impl<T: ZeroShareable> Send for Shared<T> {}
// SAFETY: as above; only shared references to T are handed out.
unsafe impl<T: ZeroShareable> Sync for Shared<T> {}

impl<T: ZeroShareable> Shared<T> {
    /// Maps a zeroed `T`.
    pub(crate) fn new() -> Result<Shared<T>, Errno> {
        let len = std::mem::size_of::<T>().max(1).next_multiple_of(page_size());
        let len_nz = NonZeroUsize::new(len).ok_or(Errno::EINVAL)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: a fresh mapping at an address the kernel chooses; page alignment satisfies
        // T's alignment (at most 64 here) and the zero fill is a valid T (ZeroShareable).
        let ptr = unsafe { mman::mmap_anonymous(None, len_nz, prot, MapFlags::MAP_SHARED)? };
        Ok(Shared { ptr: ptr.cast(), len })
    }
}

impl<T: ZeroShareable> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: valid, initialised (zeroed) and alive for as long as `self`.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ZeroShareable> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: our own mapping; no reference to it outlives `self`.
        let _ = unsafe { mman::munmap(self.ptr.cast(), self.len) };
    }
}

/// Forks a child that runs `body` and leaves with `_exit(body())`; returns its pid.
///
/// The child first asks for `SIGKILL` when the parent *thread* that forked it exits
/// (`PR_SET_PDEATHSIG`), leaves at once if the parent already died in between, and ignores
/// `SIGINT`, so a Ctrl-C at the terminal reaches only the harness, which then kills it.
///
/// `body` must only make raw syscalls and touch memory: the parent may have other threads, whose
/// locks (the allocator's among them) may be held forever in the child.
pub(crate) fn fork_child(body: impl FnOnce() -> i32) -> Result<Pid, Errno> {
    let parent = unistd::getpid();
    // SAFETY: in the child we run only `body`, which by this function's contract is
    // async-signal-safe, then `_exit`, which runs no destructors or atexit handlers.
    match unsafe { unistd::fork()? } {
        ForkResult::Parent { child } => Ok(child),
        ForkResult::Child => {
            let code = if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err()
                || unistd::getppid() != parent
            {
                126
            } else {
                // SAFETY: SIG_IGN installs no handler code.
                let _ = unsafe { signal::signal(Signal::SIGINT, SigHandler::SigIgn) };
                body()
            };
            // SAFETY: _exit ends the process at once, running no Rust or libc cleanup.
            unsafe { libc::_exit(code) }
        }
    }
}
