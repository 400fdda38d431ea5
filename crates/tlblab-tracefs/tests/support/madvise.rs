//! Test workload: two threads of one process, so they share an mm. One touches a page and
//! drops it with `madvise(MADV_DONTNEED)` in a loop; the other spins on another CPU, so each
//! madvise must flush both CPUs' TLBs (tlb_flush reasons 3 and 4 on the first CPU, 1 on the
//! second when the IPI is delivered).
//!
//! This is the crate's only unsafe code: mmap and madvise(MADV_DONTNEED) have no safe wrapper.
#![allow(unsafe_code)]
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Pins the calling thread to `cpu` (ignored if that fails, e.g. a CPU set without it).
pub fn pin_to(cpu: usize) -> bool {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).is_ok()
}

/// Runs `iterations` touch + `madvise(MADV_DONTNEED)` rounds on `cpus.0` while a sibling
/// thread spins on `cpus.1`. Returns the number of madvise calls that succeeded.
pub fn madvise_loop(iterations: u64, cpus: (usize, usize)) -> u64 {
    const LEN: usize = 4096;
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            pin_to(cpus.1);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    pin_to(cpus.0);
    // SAFETY: a fresh private anonymous mapping; no Rust reference points into it.
    let ptr = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            LEN,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::PRIVATE,
        )
    }
    .expect("mmap of one anonymous page");
    let mut ok = 0;
    for i in 0..iterations {
        // SAFETY: `ptr` is the start of our LEN-byte read-write mapping; a volatile write
        // faults the page in, so the next madvise has a TLB entry to shoot down.
        unsafe { std::ptr::write_volatile(ptr.cast::<u8>(), i as u8) };
        // SAFETY: MADV_DONTNEED on our own mapping only zeroes its content, which nothing
        // reads; no reference into it exists.
        if unsafe { rustix::mm::madvise(ptr, LEN, rustix::mm::Advice::LinuxDontNeed) }.is_ok() {
            ok += 1;
        }
    }
    // SAFETY: unmapping the mapping made above, not used afterwards.
    unsafe { rustix::mm::munmap(ptr, LEN) }.expect("munmap");
    stop.store(true, Ordering::Relaxed);
    spinner.join().expect("spinner thread");
    ok
}
