//! The one list of the loops the host preset measures: what each times, in words a reader of a
//! report can check. A live configuration whose own loop is one of these, or whose predicted
//! time comes mostly from one of them, is *calibrated*, not predicted (docs/host-preset.md,
//! "Calibrated and predicted"): `tlblab study` finds out which by scaling each measurement in
//! turn and simulating again ([`CALIBRATION_STEP`]).

use crate::names;

/// One measured loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredLoop {
    /// Its measurement name ([`names`]).
    pub name: &'static str,
    /// One operation of the loop.
    pub operation: &'static str,
}

/// How much `tlblab study` scales one measurement to find the share of a prediction that comes
/// from it: +10%, large enough that the change is many cycles on every path, small enough that
/// the scheduling of a multi-task run rarely changes order because of it.
pub const CALIBRATION_STEP: f64 = 0.10;

/// Above this share of its predicted time from one measured loop, a configuration is
/// *calibrated*: most of the prediction is that loop timed alone ("most" is more than half).
pub const CALIBRATED_SHARE: f64 = 0.5;

/// Every loop the host preset measures, in measuring order ([`names::ALL`]).
pub const MEASURED_LOOPS: [MeasuredLoop; 41] = [
    MeasuredLoop { name: names::NULL_SYSCALL, operation: "getppid()" },
    MeasuredLoop {
        name: names::FAULT_ZERO,
        operation: "first read of a fresh anonymous page (maps the zero page)",
    },
    MeasuredLoop {
        name: names::FAULT_ANON,
        operation: "first write of a fresh anonymous page (allocate, zero, map)",
    },
    MeasuredLoop {
        name: names::FAULT_ANON_HOT,
        operation: "first write of one of 256 pages an untimed MADV_DONTNEED of all of them \
                    freed just before (allocate a frame this CPU freed a moment ago, zero, map)",
    },
    MeasuredLoop {
        name: names::MADVISE_EMPTY,
        operation: "MADV_DONTNEED of 64 pages none of which is present (no zap, no flush)",
    },
    MeasuredLoop {
        name: names::DONTNEED_ONE,
        operation: "MADV_DONTNEED of one present page, its write untimed (one zap, one local \
                    flush): the one-page madvise loop of madvise-busy --busy 0 and madvise-scale",
    },
    MeasuredLoop {
        name: names::DONTNEED_RANGE,
        operation: "MADV_DONTNEED of 16 present pages, their writes untimed (below the flush \
                    ceiling: one INVLPG per page)",
    },
    MeasuredLoop {
        name: names::DONTNEED_SMALL,
        operation: "MADV_DONTNEED of 64 present pages, their writes untimed (a full flush)",
    },
    MeasuredLoop {
        name: names::DONTNEED_LARGE,
        operation: "MADV_DONTNEED of 256 present pages, their writes untimed (a full flush): \
                    munmap-threads' DONTNEED at its default 256 pages",
    },
    MeasuredLoop {
        name: names::MPROTECT_ONE,
        operation: "mprotect of one present page, read-only and read-write by turns (its PTE \
                    changed, one local INVLPG flush)",
    },
    MeasuredLoop {
        name: names::MPROTECT_SMALL,
        operation: "mprotect of 64 present pages, read-only and read-write by turns (a full flush)",
    },
    MeasuredLoop {
        name: names::MPROTECT_LARGE,
        operation:
            "mprotect of 256 present pages, read-only and read-write by turns (a full flush)",
    },
    MeasuredLoop {
        name: names::MPROTECT_EMPTY,
        operation: "mprotect of a page never touched, read-only and read-write by turns (the \
                    syscall and its VMA work: no PTE changed, nothing flushed)",
    },
    MeasuredLoop {
        name: names::MPROTECT_PAIR_NEAR,
        operation: "mprotect of a 34-page VMA whose only present pages are its first two, \
                    read-only and read-write by turns (two PTEs changed, two INVLPGs)",
    },
    MeasuredLoop {
        name: names::MPROTECT_PAIR_FAR,
        operation: "the same with its first and last pages present (two PTEs changed, a full \
                    flush)",
    },
    MeasuredLoop {
        name: names::REREAD_AFTER_NONE,
        operation: "per page, reading 64 present pages right after an mprotect of a page never \
                    touched (nothing flushed)",
    },
    MeasuredLoop {
        name: names::REREAD_AFTER_INVLPG,
        operation: "per page, reading 64 present pages right after an mprotect of one other \
                    present page (one INVLPG)",
    },
    MeasuredLoop {
        name: names::REREAD_AFTER_FLUSH,
        operation: "per page, reading 64 present pages right after an mprotect of 64 other \
                    present pages (a full flush)",
    },
    MeasuredLoop {
        name: names::MMAP_MUNMAP,
        operation: "mmap + munmap of 16 untouched pages (no zap, no flush)",
    },
    MeasuredLoop {
        name: names::MUNMAP_SPLIT,
        operation: "munmap of the untouched upper page of a 2-page VMA (__split_vma())",
    },
    MeasuredLoop {
        name: names::THREAD_SWITCH,
        operation: "one switch between two threads of one process on one CPU passing a token \
                    through eventfds: pingpong's loop, between threads instead of processes",
    },
    MeasuredLoop {
        name: names::LINE_PINGPONG,
        operation: "one cache line passed to a thread spinning on the other CPU and back, \
                    halved: a core-to-core line transfer",
    },
    MeasuredLoop {
        name: names::THREAD_WAKE_REMOTE,
        operation: "one pass of the same token between threads on two CPUs: each pass wakes a \
                    thread whose CPU went idle (in a guest, a halted vCPU) when it blocked",
    },
    MeasuredLoop {
        name: names::IPI_CALL_REMOTE,
        operation: "a perf event bound to the other CPU enabled or disabled: one synchronous \
                    cross-CPU call (an IPI round trip, the initiator spinning as in a shootdown)",
    },
    MeasuredLoop {
        name: names::IPI_CALL_LOCAL,
        operation: "the same on the own CPU: the function called directly, no IPI",
    },
    MeasuredLoop {
        name: names::SHOOTDOWN_TARGET,
        operation: "per shootdown IPI received, the time lost by a sibling thread spinning on \
                    the other CPU while this thread MADV_DONTNEEDs one page of their mm: what \
                    a running target pays (not the sender's time, which is madvise-busy's)",
    },
    MeasuredLoop {
        name: names::MEMBARRIER_IPI,
        operation: "membarrier(PRIVATE_EXPEDITED) with a sibling spinning on the other CPU",
    },
    MeasuredLoop {
        name: names::MEMBARRIER_NO_IPI,
        operation: "membarrier(PRIVATE_EXPEDITED) with the sibling blocked (no IPI)",
    },
    MeasuredLoop {
        name: names::PIPE_PAIR,
        operation: "a 100-byte pipe write and its read by the same thread (no wake-up)",
    },
    MeasuredLoop {
        name: names::SOCKET_PAIR,
        operation: "a 100-byte AF_UNIX stream socket write and its read by the same thread",
    },
    MeasuredLoop {
        name: names::PIPE_REMOTE_READ,
        operation: "a 100-byte pipe message read on the other CPU than the one that wrote it, \
                    less one read where it was written (batches of 64, no wake-up)",
    },
    MeasuredLoop {
        name: names::SOCKET_REMOTE_READ,
        operation: "the same over an AF_UNIX stream socket pair",
    },
    MeasuredLoop {
        name: names::PIPE_QUEUED,
        operation: "a 100-byte message written and read back with 200 queued in each of 20 \
                    pipes, less with one queued in each (hackbench's senders' depth)",
    },
    MeasuredLoop {
        name: names::SOCKET_QUEUED,
        operation: "the same over 20 AF_UNIX stream socket pairs",
    },
    MeasuredLoop {
        name: names::PIPE_WRITE,
        operation: "a 100-byte pipe write alone, no reader waiting",
    },
    MeasuredLoop {
        name: names::PIPE_WAKE_LOCAL,
        operation: "the same write waking a reader blocked on the same CPU",
    },
    MeasuredLoop {
        name: names::PIPE_WAKE_REMOTE,
        operation: "the same write waking a reader blocked on the other CPU (recorded, not used)",
    },
    MeasuredLoop { name: names::VMEXIT_CPUID, operation: "CPUID leaf 0 (in a guest, a VM exit)" },
    MeasuredLoop {
        name: names::MIGRATE,
        operation: "sched_setaffinity to the other CPU, alternating: madv-migrate's migration",
    },
    MeasuredLoop {
        name: names::FORK_EXIT,
        operation:
            "clone(SIGCHLD) of a small process (a child of the measuring one that withholds \
                    its inherited anonymous memory); the child _exit(0)s; the parent waitpid()s",
    },
    MeasuredLoop {
        name: names::FORK_EXIT_GROWN,
        operation: "the same with 64 MiB more of written private anonymous memory passed on: \
                    what each page a fork copies and an exit frees adds",
    },
];

/// The loop named `name`.
pub fn measured_loop(name: &str) -> Option<&'static MeasuredLoop> {
    MEASURED_LOOPS.iter().find(|l| l.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_every_measurement_in_measuring_order() {
        let listed: Vec<&str> = MEASURED_LOOPS.iter().map(|l| l.name).collect();
        assert_eq!(listed, names::ALL.to_vec());
    }

    #[test]
    fn a_loop_is_found_by_name() {
        assert_eq!(measured_loop("dontneed_1").map(|l| l.name), Some(names::DONTNEED_ONE));
        assert!(measured_loop("pingpong").is_none());
    }
}
