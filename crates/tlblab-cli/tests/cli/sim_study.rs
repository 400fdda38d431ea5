//! `tlblab sim study`: the built-in studies S1–S5.
//!
//! Each study runs `--quick --seeds 2 --json` twice, with 1 and with 2 threads: the bytes must
//! be the same, and the results must show the mechanism the study is about.

use crate::common::{
    json_keys, json_of, one_error, sim_output_doc, stdout_of, tlblab, undocumented, MECHANISMS,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

const STUDIES: [(&str, &str); 10] = [
    ("s1-pti", "S1"),
    ("s2-pcid", "S2"),
    ("s3-la57", "S3"),
    ("s4-flush-info", "S4"),
    ("s5-xpfo", "S5"),
    ("s6-broadcast", "S6"),
    ("s7-lazy-cpumask", "S7"),
    ("s8-deferred", "S8"),
    ("s9-pv-flush", "S9"),
    ("s10-ceiling", "S10"),
];

/// `args` run with `threads` rayon threads; must succeed.
fn run_with_threads(args: &[&str], threads: &str) -> Vec<u8> {
    let output = tlblab().args(args).env("RAYON_NUM_THREADS", threads).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tlblab {args:?} failed ({}): {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    output.stdout
}

/// The quick JSON report of `study` with 2 seeds, after checking that 1 and 2 threads print
/// the same bytes. Run once per study for the whole test binary: several tests read the same
/// report, and a study is the slowest thing the suite runs.
fn quick_json(study: &str) -> Value {
    static REPORTS: Mutex<BTreeMap<String, Arc<OnceLock<Value>>>> = Mutex::new(BTreeMap::new());
    let cell = REPORTS.lock().unwrap().entry(study.to_string()).or_default().clone();
    cell.get_or_init(|| {
        let args = ["sim", "study", study, "--quick", "--seeds", "2", "--json"];
        let one = run_with_threads(&args, "1");
        let two = run_with_threads(&args, "2");
        assert!(one == two, "{study}: output differs between 1 and 2 threads");
        let report: Value = serde_json::from_slice(&one).unwrap();
        assert_eq!(report["schema"], "tlblab.sim.study/1");
        assert_eq!(report["quick"], true);
        assert_eq!(report["seeds"], 2);
        report
    })
    .clone()
}

/// The part whose label starts with `label`.
fn part<'a>(report: &'a Value, label: &str) -> &'a Value {
    report["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"].as_str().unwrap().starts_with(label))
        .unwrap_or_else(|| panic!("no part {label:?} in {}", report["study"]))
}

/// The policy `name` of a part.
fn policy<'a>(part: &'a Value, name: &str) -> &'a Value {
    part["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"]["name"] == name)
        .unwrap_or_else(|| panic!("no policy {name} in {}", part["label"]))
}

/// The measure `key` of policy `name`: its per-seed values (empty when the runs have none,
/// with a note saying why), and the note.
fn measure(part: &Value, name: &str, key: &str) -> (Vec<f64>, Value) {
    let keys: Vec<&str> =
        part["measures"].as_array().unwrap().iter().map(|m| m["key"].as_str().unwrap()).collect();
    let i = keys.iter().position(|k| *k == key).unwrap_or_else(|| panic!("no measure {key}"));
    let m = &policy(part, name)["measures"][i];
    assert_eq!(m["measure"], key);
    let v: Vec<f64> = m["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    (v, m["note"].clone())
}

/// The per-seed values of measure `key` for policy `name`, which every run must have.
fn values(part: &Value, name: &str, key: &str) -> Vec<f64> {
    let (v, note) = measure(part, name, key);
    assert_eq!(v.len(), 2, "{name} {key}: one value per seed ({note})");
    v
}

/// A counter summed over the runs of policy `name`.
fn run_sum(part: &Value, name: &str, field: impl Fn(&Value) -> u64) -> u64 {
    policy(part, name)["runs"].as_array().unwrap().iter().map(field).sum()
}

#[test]
fn list_names_every_study() {
    let text = String::from_utf8(stdout_of(["sim", "study", "list"])).unwrap();
    for (name, short) in STUDIES {
        assert!(text.contains(&format!("{name} ({short})")), "{name}: {text}");
    }
    for policy in
        ["pti-invpcid", "linux-4.14-nopcid", "la57-patched", "flush-info-stack", "xpfo-sync"]
    {
        assert!(text.contains(policy), "{policy}: {text}");
    }
}

#[test]
fn unknown_study_exits_2_naming_the_known_ones() {
    let e = one_error(tlblab().args(["sim", "study", "s9-nope"]), 2);
    assert!(e.contains("unknown study \"s9-nope\""), "{e}");
    for (name, _) in STUDIES {
        assert!(e.contains(name), "{name}: {e}");
    }
}

#[test]
fn one_seed_says_there_is_no_interval() {
    let text =
        String::from_utf8(stdout_of(["sim", "study", "S2", "--quick", "--seeds", "1"])).unwrap();
    assert!(text.contains("QUICK RUN"), "{text}");
    assert!(text.contains("One seed: no interval"), "{text}");
    assert!(!text.contains("significant"), "no significance without ratios: {text}");
}

/// S2: 4.13 interrupts the CPU that madv-migrate just left on every madvise, 4.14 (PCID, lazy
/// CPUs leave the mm) never; with PCID the two pingpong processes keep their TLB entries.
#[test]
fn s2_quick_is_deterministic_and_pcid_removes_ipis_and_walks() {
    let r = quick_json("s2");
    assert_eq!(r["study"], "s2-pcid");
    let migrate = part(&r, "madv-migrate");
    assert!(values(migrate, "linux-4.13", "ipis_per_op").iter().all(|&v| v >= 1.0));
    assert!(values(migrate, "linux-4.14", "ipis_per_op").iter().all(|&v| v == 0.0));
    let ratio = &policy(migrate, "linux-4.14")["measures"][0]["ratio"];
    assert!(ratio["ci"]["high"].as_f64().unwrap() < 1.0, "4.14 is faster: {ratio}");
    let touch = part(&r, "pingpong --touch 512");
    let walks = |p| values(touch, p, "dtlb_walks_per_op");
    for (pcid, nopcid) in walks("linux-4.14").iter().zip(walks("linux-4.14-nopcid")) {
        assert!(*pcid * 10.0 < nopcid, "PCID keeps the 2 × 512 pages: {pcid} vs {nopcid}");
    }
    assert_eq!(part(&r, "pthread-mmap")["params"]["pages"], 8192);
}

/// S4: the on-stack flush_tlb_info re-enables preemption while waiting, so its
/// preemption-disabled sections are never longer than the per-CPU variant's.
#[test]
fn s4_quick_is_deterministic_and_the_stack_variant_shortens_preempt_off() {
    let r = quick_json("s4");
    let busy = part(&r, "madvise-busy");
    for key in ["preempt_off_max_us", "preempt_off_p99_us"] {
        let (percpu, stack) =
            (values(busy, "flush-info-percpu", key), values(busy, "flush-info-stack", key));
        for (s, p) in stack.iter().zip(&percpu) {
            assert!(s <= p, "{key}: stack {s} > per-CPU {p}");
        }
    }
    // Every madvise shoots down the 3 busy siblings.
    let ops = run_sum(busy, "flush-info-percpu", |run| run["ops"].as_u64().unwrap());
    let ipis = run_sum(busy, "flush-info-percpu", |run| run["ipis_sent"].as_u64().unwrap());
    assert!(ipis as f64 >= 2.99 * ops as f64, "{ipis} IPIs for {ops} ops");
    let workers: Vec<u64> = r["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["scenario"]["name"] == "madvise-scale")
        .map(|p| p["params"]["tasks"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [1, 4, 16], "quick worker counts");
}

/// S4 rt-latency: an interrupts-off burst on
/// a remote CPU lengthens the per-CPU variant's preemption-off section, not the stack's.
#[test]
fn s4_rt_latency_stack_variant_bounds_preempt_off() {
    let r = quick_json("s4");
    assert!(r["not_run"].as_array().unwrap().is_empty(), "{}", r["not_run"]);
    let rt = part(&r, "rt-latency");
    let (percpu, stack) = (
        values(rt, "flush-info-percpu", "preempt_off_max_us"),
        values(rt, "flush-info-stack", "preempt_off_max_us"),
    );
    for (s, p) in stack.iter().zip(&percpu) {
        assert!(s <= p, "stack {s} > per-CPU {p}");
    }
    let text =
        String::from_utf8(stdout_of(["sim", "study", "s4", "--quick", "--seeds", "2"])).unwrap();
    assert!(text.contains("Amean  workers-16"), "mmtests table: {text}");
    assert!(text.contains("scheduling latency"), "{text}");
}

/// S1: INVPCID type 0 only under pti-invpcid, and every partial flush costs
/// fewer cycles when the user-PCID flush is deferred.
#[test]
fn s1_quick_is_deterministic_and_deferral_cheapens_partial_flushes() {
    let r = quick_json("s1");
    let kbuild = part(&r, "kbuild");
    let invpcid = |p| {
        run_sum(kbuild, p, |run| {
            run["hw"]["invalidations"]["invpcid_indiv_addr"]["count"].as_u64().unwrap_or(0)
        })
    };
    assert!(invpcid("pti-invpcid") > 0);
    assert_eq!(invpcid("pti-deferred"), 0);
    let sizes = |p| {
        let mut by = std::collections::BTreeMap::<i64, (u64, u64)>::new();
        for run in policy(kbuild, p)["runs"].as_array().unwrap() {
            for f in run["flush_sizes"].as_array().unwrap() {
                let e = by.entry(f["pages"].as_i64().unwrap()).or_default();
                e.0 += f["flushes"].as_u64().unwrap();
                e.1 += f["cycles"].as_u64().unwrap();
            }
        }
        by
    };
    let (now, deferred) = (sizes("pti-invpcid"), sizes("pti-deferred"));
    let partial: Vec<_> = now.iter().filter(|(&pages, _)| pages > 0).collect();
    assert!(!partial.is_empty(), "a build makes partial flushes");
    for (pages, &(n, c)) in partial {
        if let Some(&(dn, dc)) = deferred.get(pages) {
            assert!(dc * n < c * dn, "{pages} pages: deferred {dc}/{dn} vs invpcid {c}/{n}");
        }
    }
    let text =
        String::from_utf8(stdout_of(["sim", "study", "s1", "--quick", "--seeds", "1"])).unwrap();
    assert!(text.contains("pages  % of flushes  cumulative %  avg cycles  cycles/page  samples"));
}

/// S3: only la57-runtime runs the p4d_folded checks, and they slow the build down; patching
/// them away costs exactly what a 4-level-only kernel does; real 5-level walks cost more per
/// walk.
#[test]
fn s3_quick_is_deterministic_and_only_runtime_checks_cost() {
    let r = quick_json("s3");
    let four = part(&r, "kbuild-allmod (make -j100), 4-level");
    assert!(values(four, "la57-runtime", "la57_checks").iter().all(|&v| v > 0.0));
    for p in ["la57-off", "la57-patched"] {
        assert!(values(four, p, "la57_checks").iter().all(|&v| v == 0.0), "{p}");
    }
    // The build's speed (the scenario's metric: work done per second).
    let speed = |p| values(four, p, "scenario_metric");
    assert_eq!(speed("la57-patched"), speed("la57-off"));
    for (rt, off) in speed("la57-runtime").iter().zip(speed("la57-off")) {
        assert!(*rt < off, "run-time checks slow the build: {rt} vs {off}");
    }
    let on = part(&r, "kbuild-allmod (make -j100), la57-on");
    for (five, four) in values(on, "linux-4.14+la57-on", "walk_cycles_per_walk").iter().zip(values(
        on,
        "la57-off",
        "walk_cycles_per_walk",
    )) {
        assert!(*five > four, "5-level walks: {five} vs {four}");
    }
    let text =
        String::from_utf8(stdout_of(["sim", "study", "s3", "--quick", "--seeds", "1"])).unwrap();
    assert!(text.contains("Performance counter stats for 'kbuild-allmod' under la57-runtime"));
    assert!(text.contains("<not modelled>      instructions"), "{text}");
}

/// S5: only xpfo-sync sends kernel-flush IPIs; deferring trades them
/// for longer exposure windows; no-xpfo's exposure is unbounded.
#[test]
fn s5_quick_is_deterministic_and_deferral_trades_ipis_for_exposure() {
    let r = quick_json("s5");
    for label in ["kbuild-xpfo (make -j60)", "kbuild-xpfo (make -j4)"] {
        let p = part(&r, label);
        let ipis = |q| values(p, q, "ipis_sent");
        for ((sync, none), deferred) in
            ipis("xpfo-sync").iter().zip(ipis("no-xpfo")).zip(ipis("xpfo-deferred"))
        {
            assert!(*sync > none && *sync > deferred, "{label}: {sync} vs {none}, {deferred}");
        }
        let (none, note) = measure(p, "no-xpfo", "exposure_max_us");
        assert!(none.is_empty() && note == "unbounded (never unmapped)", "{label}: {note}");
        // IPIs close a synchronous window within microseconds (only those opened just before
        // the end stay open); deferred ones wait for every other CPU's next mm switch, and CPUs
        // that do not switch again before the end leave them open.
        let censored = |q| values(p, q, "exposure_censored");
        for (s, d) in censored("xpfo-sync").iter().zip(censored("xpfo-deferred")) {
            assert!(*s < d, "{label}: censored windows: sync {s}, deferred {d}");
        }
        let sync = values(p, "xpfo-sync", "exposure_max_us");
        let (deferred, _) = measure(p, "xpfo-deferred", "exposure_max_us");
        for (s, d) in sync.iter().zip(&deferred) {
            assert!(s < d, "{label}: sync exposure {s} µs vs deferred {d} µs");
        }
    }
    // Deferred flushes are full flushes at mm switches, and only deferral does them. Quick
    // windows are short (a few jobs end in them), so look where 64 CPUs switch.
    let p = part(&r, "kbuild-xpfo core sweep, 64 CPUs");
    assert!(values(p, "xpfo-deferred", "xpfo_full_flushes").iter().all(|&v| v > 0.0));
    for q in ["no-xpfo", "xpfo-sync"] {
        assert!(values(p, q, "xpfo_full_flushes").iter().all(|&v| v == 0.0), "{q}");
    }
}

/// S7, thread mode (one mm on 72 CPUs, each of which runs it): 6.13 sets each CPU's bit when
/// it first switches to the mm and clears it when the exit's flush sends the lazy CPU to
/// init_mm (2 writes per CPU); 6.14+ only sets it (1). Process mode: the lazy mask keeps the
/// bits of every CPU a process ran on, so its exit's flush (freed page tables) interrupts them
/// all, where 6.13's mask holds only the CPU it runs on.
#[test]
fn s7_quick_is_deterministic_and_follows_the_cpumask_rules() {
    let r = quick_json("s7");
    for label in ["hackbench, threads, sockets", "hackbench, threads, pipes"] {
        let p = part(&r, label);
        assert_eq!(values(p, "linux-6.13", "cpumask_writes"), [144.0, 144.0], "{label}");
        for lazy in ["linux-6.18", "linux-6.18+no-trim-cpumask"] {
            assert_eq!(values(p, lazy, "cpumask_writes"), [72.0, 72.0], "{label} {lazy}");
        }
    }
    for label in ["hackbench, processes, sockets", "hackbench, processes, pipes"] {
        let p = part(&r, label);
        let eager = values(p, "linux-6.13", "ipis_sent");
        for (e, l) in eager.iter().zip(values(p, "linux-6.18", "ipis_sent")) {
            assert!(l > *e, "{label}: 6.18 {l} IPIs vs 6.13 {e}");
        }
    }
    let flush2 = part(&r, "tlb-flush2, 104 threads");
    assert!(values(flush2, "linux-6.13", "ipis_sent").iter().all(|&v| v > 0.0));
    // Mechanism tlbstate-lines: 6.13's tlb_is_not_lazy() reads is_lazy lines that stay put
    // while the threads run; 6.18's should_flush_tlb() reads every other CPU's loaded_mm line,
    // rewritten by its handler of the previous flush: a transfer per CPU and flush, and fewer
    // pages per thread per second. The quick part's 64 pages per thread are mostly the start,
    // when 104 threads map their regions under mmap_lock; with lock stealing (rwsem-steal)
    // the order in which they get it varies with the seed by more than the lines cost, so
    // the lines are compared without it.
    let r = json_of([
        "sim",
        "study",
        "s7",
        "--quick",
        "--seeds",
        "2",
        "--without",
        "rwsem-steal",
        "--json",
    ]);
    let flush2 = part(&r, "tlb-flush2, 104 threads");
    let old = values(flush2, "linux-6.13", "tlbstate_line_transfers");
    let new = values(flush2, "linux-6.18", "tlbstate_line_transfers");
    for (o, n) in old.iter().zip(&new) {
        assert!(*n > 10.0 * o, "6.18 {n} vs 6.13 {o} transfers");
    }
    let per_task = |p| values(flush2, p, "ops_per_task_per_second");
    for (o, n) in per_task("linux-6.13").iter().zip(per_task("linux-6.18")) {
        assert!(n < *o, "6.18 {n} vs 6.13 {o} pages per thread per second");
    }
}

/// docs/sim-output.md names every field of the study JSON.
/// S9: on dedicated pCPUs PV flush and native IPIs give the same runs; at 2× overcommit PV
/// flush leaves flushes to the host, sends fewer IPIs and waits less, with posted interrupts or
/// without; posted interrupts make native IPIs cheaper on dedicated pCPUs.
#[test]
fn s9_quick_is_deterministic_and_pv_flush_acts_only_on_preempted_vcpus() {
    let r = quick_json("s9");
    for posted in ["posted interrupts", "no posted interrupts"] {
        let dedicated = part(&r, &format!("madvise-busy, {posted}, overcommit 1×, 16 vCPUs"));
        assert_eq!(dedicated["machine"]["guest"]["overcommit"], 1.0);
        for key in ["scenario_metric", "ipis_sent"] {
            assert_eq!(
                values(dedicated, "linux-6.18+no-pv-flush", key),
                values(dedicated, "linux-6.18", key),
                "{posted} {key}"
            );
        }
        assert_eq!(values(dedicated, "linux-6.18", "pv_flushes_marked"), [0.0, 0.0]);
        let shared = part(&r, &format!("madvise-busy, {posted}, overcommit 2×, 16 vCPUs"));
        let (native, pv) = (
            values(shared, "linux-6.18+no-pv-flush", "scenario_metric"),
            values(shared, "linux-6.18", "scenario_metric"),
        );
        assert!(pv.iter().zip(&native).all(|(p, n)| p < n), "{posted}: µs/op {pv:?} {native:?}");
        assert!(values(shared, "linux-6.18", "pv_flushes_marked").iter().all(|&n| n > 0.0));
        assert_eq!(values(shared, "linux-6.18+no-pv-flush", "pv_flushes_marked"), [0.0, 0.0]);
        let (native_ipis, pv_ipis) = (
            values(shared, "linux-6.18+no-pv-flush", "ipis_sent"),
            values(shared, "linux-6.18", "ipis_sent"),
        );
        assert!(pv_ipis.iter().zip(&native_ipis).all(|(p, n)| p < n), "{posted}");
        assert!(values(shared, "linux-6.18", "steal_pct").iter().all(|&s| s > 30.0), "{posted}");
    }
    let metric = |posted: &str| {
        let p = part(&r, &format!("madvise-busy, {posted}, overcommit 1×, 16 vCPUs"));
        values(p, "linux-6.18+no-pv-flush", "scenario_metric")
    };
    let (with, without) = (metric("posted interrupts"), metric("no posted interrupts"));
    assert!(with.iter().zip(&without).all(|(w, o)| w < o), "{with:?} {without:?}");
}

#[test]
fn study_json_fields_are_documented() {
    // Reason names of the tlb:tlb_flush tracepoint, and instruction names, are values of a
    // table rather than fields.
    let keys =
        |v: &Value, out: &mut BTreeSet<String>| json_keys(v, &["tlb_flush", "invalidations"], out);
    let mut all = BTreeSet::new();
    let base = ["sim", "study", "--quick", "--seeds", "2", "--json"];
    let extra = ["s2", "--explain", "--without", "zap-batch"];
    keys(&serde_json::from_slice(&stdout_of(base.iter().chain(&extra))).unwrap(), &mut all);
    keys(&quick_json("s4"), &mut all);
    keys(&quick_json("s9"), &mut all);
    assert!(all.contains("explanation") && all.contains("answer_changes"), "{all:?}");
    let text = sim_output_doc();
    let missing = undocumented(&all, &text);
    assert!(missing.is_empty(), "docs/sim-output.md does not describe {missing:?}");
    assert!(text.contains("`tlblab.sim.study/1`") && text.contains("`tlblab.sim.study-all/1`"));
}

#[test]
fn study_help_documents_the_output_and_every_study() {
    let text = String::from_utf8(stdout_of(["sim", "study", "--help"])).unwrap();
    for needle in ["--seeds", "--seed", "--quick", "--json", "tlblab.sim.study/1", "mmtests"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    for (name, _) in STUDIES {
        assert!(text.contains(name), "{name}: {text}");
    }
    let sim = String::from_utf8(stdout_of(["sim", "--help"])).unwrap();
    assert!(sim.contains("study"), "{sim}");
}

/// S5's core sweep prints as one mmtests-style table per measure; the speed's cells carry each
/// policy's slowdown against no-xpfo, 1 / the mean per-seed speed ratio of the JSON.
#[test]
fn s5_core_sweep_prints_the_slowdown_per_cpu_count() {
    let args = ["sim", "study", "s5", "--quick", "--seeds", "2"];
    let text = String::from_utf8(stdout_of(args)).unwrap();
    let json = quick_json("s5");
    assert!(text.contains("== kbuild-xpfo core sweep: scenario kbuild-xpfo on skylake-server"));
    let p = part(&json, "kbuild-xpfo core sweep, 64 CPUs");
    assert_eq!(p["sweep"]["axis"], "cpus");
    let sync = &policy(p, "xpfo-sync")["measures"][0];
    // The point of the log-ratio interval: the geometric mean of the per-seed ratios.
    let slowdown = 1.0 / sync["ratio"]["ci"]["point"].as_f64().unwrap();
    let row = text.lines().find(|l| l.trim_start().starts_with("Amean  cpus-64")).unwrap();
    assert!(row.contains(&format!("*×{slowdown:.3}*")), "{row} (want ×{slowdown:.3})");
    // The table of each other measure follows, with the same rows.
    let rows = text.lines().filter(|l| l.trim_start().starts_with("Amean  cpus-")).count();
    assert_eq!(rows, 3 * p["measures"].as_array().unwrap().len());
}

/// `sim study --without` parses its names as `sim run --without` does, with the same error and
/// exit status, before anything runs.
#[test]
fn study_without_an_unknown_mechanism_fails_as_sim_run_does() {
    for names in ["guest,idle-state", "tlb"] {
        let study = one_error(tlblab().args(["sim", "study", "s4", "--without", names]), 2);
        let run = one_error(tlblab().args(["sim", "run", "-s", "pingpong", "--without", names]), 2);
        assert_eq!(study, run);
        assert!(study.contains("unknown mechanism"), "{study}");
        assert!(study.contains(&MECHANISMS.join(", ")), "{study}");
    }
    let e = one_error(tlblab().args(["sim", "study", "all", "--explain", "--without", "gest"]), 2);
    assert!(e.contains("did you mean \"guest\"?"), "{e}");
}

/// S1 and S4 run on bare-metal presets (no [guest]): `--without guest` changes nothing but the
/// line and the field that say it was off.
#[test]
fn without_guest_on_bare_metal_studies_changes_only_what_says_so() {
    for study in ["s1", "s4"] {
        let args = ["sim", "study", study, "--quick", "--seeds", "2"];
        let without = |json: bool| {
            let extra: &[&str] =
                if json { &["--without", "guest", "--json"] } else { &["--without", "guest"] };
            stdout_of(args.iter().chain(extra))
        };
        let plain =
            |json: bool| stdout_of(args.iter().chain(if json { &["--json"][..] } else { &[] }));
        let text = String::from_utf8(without(false)).unwrap();
        let line = "  mechanisms off in every run (--without): guest\n";
        assert_eq!(text.matches(line).count(), 1, "{study}: {text}");
        assert_eq!(text.replacen(line, "", 1).into_bytes(), plain(false), "{study} text");
        let json = String::from_utf8(without(true)).unwrap();
        let field = "  \"without\": [\n    \"guest\"\n  ],\n";
        assert_eq!(json.matches(field).count(), 1, "{study}: {json}");
        assert_eq!(json.replacen(field, "", 1).into_bytes(), plain(true), "{study} JSON");
    }
}

/// `--explain` (S4, quick): every part lists every mechanism, those its machine lacks as not
/// present; the others ran on the same seeds for every policy. The part's own results are
/// those without `--explain`, and the bytes do not depend on the number of threads.
#[test]
fn explain_lists_every_mechanism_for_every_part_and_is_deterministic() {
    let args = ["sim", "study", "s4", "--quick", "--seeds", "2", "--explain"];
    let text = run_with_threads(&args, "1");
    assert!(text == run_with_threads(&args, "2"), "text differs between 1 and 2 threads");
    let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
    let json = run_with_threads(&json_args, "1");
    assert!(json == run_with_threads(&json_args, "2"), "JSON differs between 1 and 2 threads");
    let mut r: Value = serde_json::from_slice(&json).unwrap();
    let parts = r["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 5);
    for p in parts {
        let e = &p["explanation"];
        assert_eq!(e["measure"], p["measures"][0]["key"], "the headline is the first measure");
        let names: Vec<&str> = e["mechanisms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mechanism"].as_str().unwrap())
            .collect();
        assert_eq!(names, MECHANISMS, "{}", p["label"]);
        for m in e["mechanisms"].as_array().unwrap() {
            let policies = m["policies"].as_array().unwrap();
            match m["status"].as_str().unwrap() {
                "ran" => {
                    assert_eq!(policies.len(), 2);
                    for (q, pe) in policies.iter().enumerate() {
                        assert_eq!(pe["policy"], p["policies"][q]["policy"]["name"]);
                        assert_eq!(pe["off"]["values"].as_array().unwrap().len(), 2, "{pe}");
                    }
                    assert!(policies[0]["answer_on"].is_null(), "the baseline has no answer");
                    assert!(!policies[1]["off"]["ratio"].is_null(), "{}", policies[1]);
                }
                "not-present" => assert!(policies.is_empty()),
                s => panic!("status {s}"),
            }
        }
        let status = |name: &str| {
            let m = e["mechanisms"].as_array().unwrap().iter().find(|m| m["mechanism"] == name);
            m.unwrap()["status"].as_str().unwrap().to_string()
        };
        assert_eq!(status("guest"), "not-present", "icelake-server is bare metal");
        assert_eq!(status("csd-queue"), "ran", "the csd queue is the kernel's own");
    }
    // madvise-busy shoots down 3 CPUs per madvise: the csd queue's costs are in its headline.
    let busy = &parts[0]["explanation"]["mechanisms"][2];
    assert_eq!(busy["mechanism"], "csd-queue");
    assert_ne!(busy["policies"][0]["change"], 0.0, "{busy}");
    // Without the explanations, the report is the one without --explain.
    for p in r["parts"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("explanation");
    }
    assert_eq!(r, quick_json("s4"));
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("== each mechanism off in turn (--explain) =="), "{text}");
    let tables = text.split("--explain) ==").nth(1).unwrap();
    assert_eq!(tables.matches("headline:").count(), 5, "one table per part: {tables}");
    for name in MECHANISMS {
        assert_eq!(tables.matches(&format!("\n  {name}  ")).count(), 5, "{name}: {tables}");
    }
}

/// A comma-separated list runs those studies, once each and in the order given, reported as
/// `all` is; `tlblab study --only` refuses an unknown study before it writes anything.
#[test]
fn a_list_of_studies_is_reported_as_all_is() {
    let r = json_of(["sim", "study", "s4,S2,s4-flush-info", "--quick", "--seeds", "1", "--json"]);
    let names: Vec<&str> =
        r["studies"].as_array().unwrap().iter().map(|s| s["study"].as_str().unwrap()).collect();
    assert_eq!(names, ["s4-flush-info", "s2-pcid"]);
    assert!(r["not_run"].as_array().unwrap().is_empty());
    let e = one_error(tlblab().args(["sim", "study", "s2,s42"]), 2);
    assert!(e.contains("unknown study \"s42\""), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lab");
    let e = one_error(tlblab().args(["study", "--only", "s2,s42", "--out"]).arg(&out), 2);
    assert!(e.contains("unknown study \"s42\""), "{e}");
    assert!(!out.exists(), "nothing is written before the names are checked");
    let e = one_error(tlblab().args(["study", "--only", " , ", "--out"]).arg(&out), 2);
    assert!(e.contains("--only names no study (known: s1-pti (s1)"), "{e}");
    assert!(!out.exists(), "nothing is written for an empty list either");
}

/// S8: speed, IPIs, the checker's verdict and the exposure side by side. LATR takes the IPIs
/// out of the munmap its caller waits for; migrc and LUF replace a flush per migration by one
/// per reuse, pass the checker with exposure windows, and the known-bad control fails it.
#[test]
fn s8_quick_shows_speed_beside_the_checkers_verdict_and_exposure() {
    let r = quick_json("s8");
    assert_eq!(r["study"], "s8-deferred");
    let mean = |part: &Value, policy_name: &str, key: &str| -> Option<f64> {
        let p = policy(part, policy_name);
        let m = p["measures"].as_array().unwrap().iter().find(|m| m["measure"] == key).unwrap();
        m["mean"].as_f64()
    };
    let munmap = part(&r, "munmap-latency, 1 page");
    assert!(
        mean(munmap, "latr", "scenario_metric") < mean(munmap, "linux-6.18", "scenario_metric")
    );
    assert_eq!(mean(munmap, "latr", "ipis_per_op"), Some(0.0));
    assert_eq!(mean(munmap, "linux-6.18", "ipis_per_op"), Some(15.0), "15 siblings per munmap");
    assert_eq!(mean(munmap, "latr", "check_violations"), Some(0.0));
    let migrate = part(&r, "migrate-readers");
    for good in ["migrc", "luf"] {
        assert_eq!(mean(migrate, good, "check_violations"), Some(0.0), "{good}");
        assert!(mean(migrate, good, "check_exposure_median_us") > Some(0.0), "{good}");
        assert!(
            mean(migrate, good, "ipis_per_op") < mean(migrate, "linux-6.18", "ipis_per_op"),
            "{good}"
        );
    }
    assert!(mean(migrate, "bad-luf-reuse-without-flush", "check_violations") > Some(0.0));
    // The baseline flushes before completion: it declares nothing.
    let base = policy(migrate, "linux-6.18")["measures"].as_array().unwrap().clone();
    let exposure = base.iter().find(|m| m["measure"] == "check_exposure_median_us").unwrap();
    assert_eq!(exposure["note"], "nothing deferred");
    let args = ["sim", "study", "s8", "--quick", "--seeds", "2"];
    let text = String::from_utf8(stdout_of(args)).unwrap();
    let row = |name: &str| {
        text.lines()
            .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
            .find(|l| l.trim_end().ends_with("pass") || l.contains("FAIL ("))
            .unwrap_or_else(|| panic!("no side-by-side row for {name}: {text}"))
            .to_string()
    };
    assert!(row("luf").trim_end().ends_with("pass"));
    assert!(row("bad-luf-reuse-without-flush").contains("FAIL ("));
}

/// S10: every part carries its cost curve along the ceiling, relative to 33, and the fields are
/// documented. On the traces, ceiling 1 turns every multi-page request into a full flush and a
/// refill of the whole 512-page working set: dearer than 33, where they stay partial.
#[test]
fn s10_quick_draws_a_cost_curve_per_part() {
    let r = quick_json("s10");
    assert_eq!(r["study"], "s10-ceiling");
    let mut all = BTreeSet::new();
    json_keys(&r, &["tlb_flush", "invalidations"], &mut all);
    assert!(all.contains("ceiling_curve") && all.contains("tied_with_best"), "{all:?}");
    let missing = undocumented(&all, &sim_output_doc());
    assert!(missing.is_empty(), "docs/sim-output.md does not describe {missing:?}");
    let text =
        String::from_utf8(stdout_of(["sim", "study", "s10", "--quick", "--seeds", "2"])).unwrap();
    for p in r["parts"].as_array().unwrap() {
        let c = &p["ceiling_curve"];
        assert_eq!(c["baseline"], 33, "{}", p["label"]);
        let ceilings: Vec<u64> = c["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["ceiling"].as_u64().unwrap())
            .collect();
        assert_eq!(ceilings, [1, 8, 33, 128, 512]);
        assert!(c["tied_with_best"].as_array().unwrap().contains(&c["best"]));
        if p["scenario"]["name"].as_str().unwrap().starts_with("replay:") {
            let at1 = &c["points"][0];
            assert!(at1["ratio"]["ci"]["low"].as_f64().unwrap() > 1.0, "{}", p["label"]);
            assert_eq!(c["best"], 33, "{}", p["label"]);
        }
    }
    assert!(text.contains("best ceiling: 33"), "{text}");
}
