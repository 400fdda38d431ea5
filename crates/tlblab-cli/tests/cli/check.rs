//! `tlblab sim check`: the faithful kernel passes, the known-bad variant is caught with a
//! witness that its replay command reproduces, the output does not depend on the thread count,
//! and bad input is refused.

use crate::common::{one_error, tlblab};
use serde_json::Value;

/// lazy-readers at a size that runs in milliseconds.
const LAZY_READERS: [&str; 10] = [
    "--scenario",
    "lazy-readers",
    "--cpus",
    "3",
    "--tasks",
    "2",
    "--pages",
    "8",
    "--iterations",
    "10",
];

fn check(policy: &str, threads: &str) -> (i32, Value) {
    check_json(policy, &LAZY_READERS, "200", threads)
}

#[test]
fn the_faithful_kernel_passes_every_schedule() {
    let (code, r) = check("linux-6.18", "2");
    assert_eq!(code, 0);
    assert_eq!(r["schema"], "tlblab.sim.check/1");
    assert_eq!((r["schedules"].as_u64(), r["violations"].as_u64()), (Some(200), Some(0)));
    assert!(r["accesses"].as_u64().unwrap() >= 200 * 10 * 24);
    assert_eq!(r["witnesses"], Value::Array(vec![]));
    // linux-6.18 declares no deferral: no exposure of either kind.
    let e = &r["exposure"];
    assert_eq!(
        (&e["declared"], &e["user"], &e["kernel"]),
        (&Value::Array(vec![]), &Value::Null, &Value::Null)
    );
}

/// shared-writers at a size that runs in a fraction of a second.
const SHARED_WRITERS: [&str; 10] =
    ["-s", "shared-writers", "--cpus", "4", "--tasks", "2", "--pages", "8", "--iterations", "10"];

fn check_json(policy: &str, scenario: &[&str], schedules: &str, threads: &str) -> (i32, Value) {
    let out = tlblab()
        .args(["sim", "check", "--json", "--policy", policy, "--schedules", schedules])
        .args(scenario)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code().unwrap(), serde_json::from_slice(&out.stdout).unwrap())
}

/// LATR's readers keep using the writers' pages after each MADV_DONTNEED returned: exposure
/// inside the declared windows, not violations; the exposure is the same bytes whatever the
/// number of threads.
#[test]
fn latr_shows_exposure_and_no_violation_the_same_whatever_the_threads() {
    let (code, one) = check_json("latr", &SHARED_WRITERS, "40", "1");
    let (_, two) = check_json("latr", &SHARED_WRITERS, "40", "2");
    assert_eq!(code, 0);
    assert_eq!(one, two, "the same bytes whatever the number of threads");
    assert_eq!(one["violations"], 0);
    let e = &one["exposure"];
    assert_eq!(e["declared"][0]["name"], "latr");
    assert_eq!(e["declared"][0]["mappings"], "user");
    assert_eq!(e["kernel"], Value::Null);
    let u = &e["user"];
    // Two writers × 10 rounds × 40 schedules; a MADV_DONTNEED is deferred unless no other
    // CPU was to be interrupted (all lazy: a disturbance's kernel thread, a migration).
    let ops = u["operations"].as_u64().unwrap();
    assert!(ops > 400 && ops <= 800, "{ops} deferred");
    assert!(u["uses"].as_u64().unwrap() > 0);
    assert_eq!(u["missed_catch_ups"], 0);
    let w = &u["per_cpu"];
    let closed = w["closed"].as_u64().unwrap();
    assert!(closed > 0);
    let in_buckets: u64 =
        w["log2_histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(in_buckets, closed);
    let q = &w["cycles"];
    let mhz = one["clock_mhz"].as_f64().unwrap();
    assert!(q["p50"].as_f64() <= q["p90"].as_f64() && q["p99"].as_f64() <= q["max"].as_f64());
    assert_eq!(w["micros"]["max"].as_f64().unwrap(), q["max"].as_f64().unwrap() / mhz);
    // Every exposed CPU has a window: the per-CPU count is what the CPUs-per-operation
    // distribution adds up to.
    let exposed: u64 = u["cpus_exposed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cpus"].as_u64().unwrap() * c["operations"].as_u64().unwrap())
        .sum();
    assert_eq!(exposed, closed + w["censored"].as_u64().unwrap());
}

/// xpfo-deferred declares its kernel-mapping deferral, and the check reports its windows.
#[test]
fn xpfo_deferred_shows_its_kernel_exposure_windows() {
    let (code, r) = check_json("xpfo-deferred", &SHARED_WRITERS, "5", "2");
    assert_eq!(code, 0);
    let e = &r["exposure"];
    assert_eq!(e["declared"][0]["name"], "xpfo-deferred");
    assert_eq!(e["user"], Value::Null);
    let k = &e["kernel"];
    assert!(k["operations"].as_u64().unwrap() > 0);
    assert_eq!(k["uses"], Value::Null, "the model's kernel makes no memory accesses");
    // Every other CPU is marked at each unmap.
    assert_eq!(k["cpus_exposed"][0]["cpus"], 3);
    assert!(
        k["per_cpu"]["closed"].as_u64().unwrap() + k["per_cpu"]["censored"].as_u64().unwrap() > 0
    );
}

#[test]
fn a_known_bad_variant_is_caught_with_a_witness_that_replays() {
    let (code, one) = check("bad-lazy-no-catch-up", "1");
    let (_, two) = check("bad-lazy-no-catch-up", "2");
    assert_eq!(code, 1, "violations exit with status 1");
    assert_eq!(one, two, "the same bytes whatever the number of threads");
    assert!(one["violations"].as_u64().unwrap() > 0);
    let w = &one["witnesses"][0];
    assert_eq!(w["violation"]["kind"], "stale-after-completion");
    // The replay command runs that one schedule and finds the same first violation.
    let replay: Vec<&str> = w["replay"].as_str().unwrap().split(' ').skip(1).collect();
    let out = tlblab().args(&replay).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["witnesses"][0]["violation"], w["violation"]);
    assert_eq!(again["schedules"], 1);
}

#[test]
fn text_names_the_witness_steps_in_order() {
    let out = tlblab()
        .args(["sim", "check", "--policy", "bad-lazy-no-catch-up"])
        .args(LAZY_READERS)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} not in {text}"));
    assert!(at("VIOLATIONS: ") < at("walked page"));
    assert!(at("walked page") < at("changed the PTE"));
    assert!(at("changed the PTE") < at("completed (version"));
    assert!(at("completed (version") < at("used the cached translation"));
    assert!(at("used the cached translation") < at("replay: tlblab sim check"));
}

#[test]
fn unknown_policy_or_scenario_is_refused() {
    let err =
        one_error(tlblab().args(["sim", "check", "--policy", "linux-9.99"]).args(LAZY_READERS), 2);
    assert!(err.contains("linux-9.99"), "{err}");
    let err = one_error(
        tlblab().args(["sim", "check", "--policy", "linux-6.18", "--scenario", "nope"]),
        2,
    );
    assert!(err.contains("nope"), "{err}");
}

/// Every known-bad variant is caught on the scenario that exposes it, and the faithful kernel
/// it changes passes the same schedules.
#[test]
fn every_known_bad_variant_is_caught_and_its_faithful_kernel_passes() {
    let shared =
        |name| ["-s", name, "--cpus", "4", "--tasks", "2", "--pages", "8", "--iterations", "10"];
    let (shared_writers, switching_readers) =
        (shared("shared-writers"), shared("switching-readers"));
    let collapse = |machine| {
        let s = ["-s", "collapse-readers", "--cpus", "6", "--tasks", "2", "--busy", "3"];
        [&["-m", machine][..], &s, &["--pages", "1024", "--iterations", "6"]].concat()
    };
    let (collapse_skylake, collapse_zen4) = (collapse("skylake"), collapse("zen4"));
    let migrate_readers = [
        "-s",
        "migrate-readers",
        "--cpus",
        "4",
        "--tasks",
        "3",
        "--pages",
        "16",
        "--iterations",
        "50",
    ];
    let cases: [(&str, &str, &[&str]); 8] = [
        ("bad-lazy-no-catch-up", "linux-6.18", &LAZY_READERS),
        ("bad-partial-flush", "linux-6.18", &shared_writers),
        ("bad-no-switching-check", "linux-6.18", &switching_readers),
        (
            "bad-lazy-skip-freed-tables",
            "linux-6.18",
            &[
                "-s",
                "lazy-readers",
                "--cpus",
                "3",
                "--tasks",
                "2",
                "--pages",
                "1024",
                "--iterations",
                "4",
            ],
        ),
        (
            "bad-pti-no-user-flush",
            "linux-4.14+pti-deferred",
            &["-s", "madvise-busy", "--cpus", "2", "--busy", "0", "--iterations", "50"],
        ),
        ("bad-collapse-no-freed-tables", "linux-6.18", &collapse_skylake),
        ("bad-invlpgb-2m-stride", "linux-6.18+invlpgb", &collapse_zen4),
        ("bad-luf-reuse-without-flush", "luf", &migrate_readers),
    ];
    for (bad, good, scenario) in cases {
        let run = |policy: &str| {
            let out = tlblab()
                .args(["sim", "check", "--json", "--schedules", "50", "--policy", policy])
                .args(scenario)
                .output()
                .unwrap();
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            let kinds: Vec<String> = r["witnesses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w["violation"]["kind"].as_str().unwrap().to_string())
                .collect();
            (out.status.code(), r["violations"].as_u64().unwrap(), kinds)
        };
        let (code, found, kinds) = run(bad);
        assert!(code == Some(1) && found > 0, "{bad}: {found} violations");
        // The freed table is a state rule (held in a PDE cache); the others are stale uses.
        let kind = match bad {
            "bad-lazy-skip-freed-tables" | "bad-collapse-no-freed-tables" => "freed-table-cached",
            _ => "stale-after-completion",
        };
        assert_eq!(kinds, [kind], "{bad}: one witness, of its kind");
        assert_eq!(run(good), (Some(0), 0, vec![]), "{good} on the scenario of {bad}");
    }
}

/// The speed shown next to a verdict is the scenario's metric of unperturbed runs without the
/// checker: the values `tlblab sim run` gives for the same seeds, on a scenario whose value
/// depends on the seed (kbuild draws its jobs from it).
#[test]
fn the_speed_is_that_of_plain_runs_of_the_same_seeds() {
    let scenario = ["--scenario", "kbuild", "--cpus", "2", "--tasks", "2", "--window-ms", "1"];
    let out = tlblab()
        .args(["sim", "check", "--json", "--policy", "linux-4.14", "--schedules", "3"])
        .args(["--seed", "7", "--speed-runs", "3"])
        .args(scenario)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let speed = &r["speed"];
    assert_eq!(speed["seeds"], serde_json::json!([7, 8, 9]));
    assert_ne!(speed["values"][0], speed["values"][1], "the seed matters here");
    let out = tlblab()
        .args(["sim", "run", "--json", "--policies", "linux-4.14", "--seeds", "3", "--seed", "7"])
        .args(scenario)
        .output()
        .unwrap();
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(speed["values"], run["policies"][0]["values"]);
    assert_eq!(speed["summary"]["mean"], run["policies"][0]["mean"]);
    assert_eq!(speed["unit"], run["metric"]);
    let none = tlblab()
        .args(["sim", "check", "--json", "--policy", "linux-4.14", "--schedules", "1"])
        .args(["--speed-runs", "0"])
        .args(scenario)
        .output()
        .unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&none.stdout).unwrap()["speed"], Value::Null);
}

/// The two variants of real bugs on `collapse-readers` (khugepaged's collapse of a normal PMD):
/// each witness names a reader's CPU (1 or 2; the writer runs on 0) and the page: the
/// collapsed block's first page for CVE-2025-22045's cached page table, another page of the
/// block for the 4 KiB entry a 2 MiB-stride INVLPGB left; in every schedule tried.
#[test]
fn the_collapse_variants_witness_a_readers_cpu_and_the_stale_page() {
    for (policy, machine, kind, at_block_start) in [
        ("bad-collapse-no-freed-tables", "skylake", "freed-table-cached", true),
        ("bad-invlpgb-2m-stride", "zen4", "stale-after-completion", false),
    ] {
        let out = tlblab()
            .args(["sim", "check", "--json", "--schedules", "20", "--policy", policy])
            .args(["-m", machine, "-s", "collapse-readers", "--cpus", "6", "--tasks", "2"])
            .args(["--busy", "3", "--pages", "1024", "--iterations", "6"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{policy}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["schedules_with_violations"], 20, "{policy}: caught in every schedule");
        let w = &r["witnesses"][0]["violation"];
        assert_eq!(w["kind"], kind, "{policy}");
        let cpu = w["cpu"].as_u64().unwrap();
        assert!(cpu == 1 || cpu == 2, "{policy}: a reader's CPU, not {cpu}");
        assert_eq!(w["vpn"].as_u64().unwrap().is_multiple_of(512), at_block_start, "{policy}: {w}");
    }
}
