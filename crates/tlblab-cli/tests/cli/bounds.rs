//! Command-line numbers (issue 29, ../shared/repro/more/): one test per reproduction. Each
//! number is checked against the one table of bounds (`tlblab_types::bounds`) where it is
//! parsed: out of range, the command stops at once with exit status 2 and a message that names
//! the option, the value and the range, instead of panicking (P1, P2) or running for ever (H1, H2).

use crate::common::{data, tlblab};
use std::time::Duration;

/// Longer than any of these commands takes in a debug build; the hangs never ended.
const BOUND: Duration = Duration::from_secs(60);

/// Runs `args`; it must be refused with status 2, no panic, and a message naming `option`,
/// `value` and `range`.
fn refused(args: &[&str], option: &str, value: &str, range: &str) {
    let output = tlblab().args(args).timeout(BOUND).output().expect("running tlblab");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    for part in [option, value, range] {
        assert!(stderr.contains(part), "{args:?}: {part:?} not in {stderr}");
    }
}

const U64_MAX: &str = "18446744073709551615";

/// P1: `--busy` u64::MAX made `busy + 1` wrap to 0, so the CPU check passed and the kernel
/// model indexed past its CPUs.
#[test]
fn p1_busy_past_its_bound_is_refused_not_a_panic() {
    let args = ["sim", "run", "-s", "storm", "--cpus", "4", "--busy", U64_MAX, "--pages", "8"];
    refused(
        &[&args[..], &["--iterations", "10", "--seeds", "1"]].concat(),
        "--busy",
        U64_MAX,
        "0 to 4095",
    );
}

/// P2: numbers with no upper bound allocated until the allocator aborted ("capacity
/// overflow", SIGABRT); each is refused at the sweep's bound, in every command that takes it.
#[test]
fn p2_sizes_past_their_bounds_are_refused_not_an_abort() {
    let check = ["sim", "check", "-p", "linux-6.18", "-s", "lazy-readers", "--cpus", "3"];
    let run = ["sim", "run", "-s", "pingpong", "--cpus", "2", "--iterations", "20", "--seeds", "1"];
    for (line, option, range) in [
        (&check[..], "--schedules", "1 to 1000000"),
        (&check[..], "--speed-runs", "0 to 1000"),
        (&check[..], "--tasks", "1 to 4096"),
        (&check[..], "--pages", "1 to 16777216"),
        (&run[..], "--touch", "0 to 1048576"),
        (&run[..], "--fds", "1 to 256"),
        (&run[..], "--tasks", "1 to 4096"),
    ] {
        for value in [U64_MAX, "9223372036854775807", "4294967296"] {
            refused(&[line, &[option, value]].concat(), option, value, range);
        }
    }
    let trace = data("repro/replay-small.flushtrace");
    let replay = ["sim", "replay", "--refill", "working-set", "--working-set", U64_MAX];
    refused(
        &[&replay[..], &[trace.to_str().unwrap()]].concat(),
        "--working-set",
        U64_MAX,
        "1 to 1048576",
    );
}

/// H1: `--disturb-every 10` never ended: disturbances came faster than one costs, and the
/// writer never got back to user mode. Below 10,000 cycles (0 aside) it is refused, on the
/// command line and in a sweep spec.
#[test]
fn h1_disturbances_faster_than_their_cost_are_refused() {
    let check = ["sim", "check", "-p", "linux-6.18", "-s", "lazy-readers", "--cpus", "3"];
    let small = ["--tasks", "2", "--pages", "8", "--iterations", "2", "--schedules", "1"];
    let line = [&check[..], &small, &["--speed-runs", "0", "--disturb-every"]].concat();
    for value in ["10", "9999"] {
        let args = [&line[..], &[value]].concat();
        refused(&args, "--disturb-every", value, "0 (none) or 10000 to 1000000000000");
    }
    // The edges run: 0 (none) and the smallest gap.
    for value in ["0", "10000"] {
        let out = tlblab().args([&line[..], &[value]].concat()).timeout(BOUND).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{value}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = data("repro/sweep-hang-disturb10.toml");
    let out = tlblab()
        .arg("sweep")
        .arg(&spec)
        .arg("-o")
        .arg(dir.path().join("h1"))
        .timeout(BOUND)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sweep-hang-disturb10.toml"), "{stderr}");
    assert!(stderr.contains("disturb_every = 10 is outside 0 (none) or 10000 to"), "{stderr}");
}

/// H2: `--max-ipi-delay` was unbounded (2 × 10^10 ran for minutes); the sweep's cap of 10^9
/// now holds everywhere.
#[test]
fn h2_ipi_delays_past_the_sweeps_cap_are_refused() {
    let check = ["sim", "check", "-p", "linux-6.18", "-s", "lazy-readers", "--max-ipi-delay"];
    for value in ["20000000000", U64_MAX, "1000000001"] {
        refused(&[&check[..], &[value]].concat(), "--max-ipi-delay", value, "0 to 1000000000");
    }
}
