//! `run` and `check` through the library: the same bytes whatever the number of threads, the
//! explanation's shape, a witness whose replay command re-finds it, bad requests refused
//! before anything runs.

use std::sync::atomic::{AtomicU64, Ordering};
use tlblab_kernel::workloads::StormOp;
use tlblab_kernel::{EffectStatus, Mechanism};
use tlblab_runs::{
    check, check_json, run, CheckRequest, NoProgress, Progress, RunRequest, RunsError,
};

/// Counts what a progress display is told.
#[derive(Default)]
struct Counting {
    starts: AtomicU64,
    total: AtomicU64,
    finished: AtomicU64,
}

impl Progress for Counting {
    fn start(&self, _what: &str, total: u64) {
        self.starts.fetch_add(1, Ordering::SeqCst);
        self.total.fetch_add(total, Ordering::SeqCst);
    }

    fn finished(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// `f` on a rayon pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

fn pingpong() -> RunRequest {
    let mut request = RunRequest::new("pingpong", &["linux-4.13", "linux-4.14"]);
    request.params.iterations = 100;
    request.seeds = 2;
    request.explain = true;
    request.without = tlblab_runs::mechanisms_without(&["mlp"]).unwrap();
    request
}

/// The checker's scenario that catches bad-lazy-no-catch-up (as the CLI's tests run it).
fn lazy_readers(policies: &[&str], schedules: u64) -> CheckRequest {
    let mut request = CheckRequest::new("lazy-readers", policies);
    request.cpus = 3;
    request.params.tasks = 2;
    request.params.pages = 8;
    request.params.iterations = 10;
    request.schedules = schedules;
    request.speed_runs = 2;
    request
}

#[test]
fn a_run_is_the_same_bytes_whatever_the_number_of_threads() {
    let request = pingpong();
    let progress = Counting::default();
    let one = on_threads(1, || run(&request, &progress)).unwrap().to_json().unwrap();
    let two = on_threads(2, || run(&request, &NoProgress)).unwrap().to_json().unwrap();
    assert_eq!(one, two);
    assert!(one.starts_with("{\n  \"schema\": \"tlblab.sim.run/1\",") && one.ends_with("}\n"));
    // Every run was counted once: 2 policies × (1 + the mechanisms explained) × 2 seeds.
    let report: serde_json::Value = serde_json::from_str(&one).unwrap();
    let explained = report["policies"][0]["explanation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "ran")
        .count() as u64;
    assert_eq!(progress.starts.load(Ordering::SeqCst), 1);
    assert_eq!(progress.total.load(Ordering::SeqCst), 2 * (1 + explained) * 2);
    assert_eq!(progress.finished.load(Ordering::SeqCst), 2 * (1 + explained) * 2);
}

#[test]
fn the_explanation_lists_every_mechanism_and_the_baseline_has_no_verdict() {
    let request = pingpong();
    let report = run(&request, &NoProgress).unwrap();
    assert_eq!(report.without, [Mechanism::Mlp]);
    assert_eq!(report.noise, tlblab_stats::DEFAULT_NOISE);
    let [base, other] = &report.policies[..] else { panic!("two policies") };
    assert!(base.ratio.is_none() && base.verdict.is_none());
    assert!(other.ratio.is_some() && other.verdict.is_some());
    for p in &report.policies {
        assert_eq!((p.values.len(), p.runs.len()), (2, 2));
        let effects = p.explanation.as_ref().unwrap();
        let names: Vec<Mechanism> = effects.iter().map(|e| e.mechanism).collect();
        assert_eq!(names, Mechanism::ALL);
        for e in effects {
            match e.status {
                EffectStatus::Ran => assert_eq!(e.values.len(), 2, "{}", e.mechanism),
                _ => assert!(e.values.is_empty() && e.effect.is_none(), "{}", e.mechanism),
            }
        }
        let mlp = effects.iter().find(|e| e.mechanism == Mechanism::Mlp).unwrap();
        assert_eq!(mlp.status, EffectStatus::Off, "off in every run: not run again");
    }
    // Without --explain there is no explanation, and the runs with everything on are the same.
    let plain = run(&RunRequest { explain: false, ..request }, &NoProgress).unwrap();
    assert!(plain.policies.iter().all(|p| p.explanation.is_none()));
    assert_eq!(plain.policies[1].values, report.policies[1].values);
}

#[test]
fn a_check_is_the_same_bytes_whatever_the_number_of_threads() {
    let request = lazy_readers(&["linux-6.18", "bad-lazy-no-catch-up"], 20);
    let one = on_threads(1, || check(&request, &NoProgress)).unwrap();
    let two = on_threads(2, || check(&request, &NoProgress)).unwrap();
    let json = check_json(&one).unwrap();
    assert_eq!(json, check_json(&two).unwrap());
    // Two policies: an array of their reports; one: the report itself.
    assert!(json.starts_with("[\n  {\n    \"schema\": \"tlblab.sim.check/1\","));
    assert!(check_json(&one[..1]).unwrap().starts_with("{\n  \"schema\": \"tlblab.sim.check/1\","));
}

/// The two known-bad variants from real bugs (CVE-2025-22045's `flush_tlb_range()` without
/// `freed_tables`; a 2 MiB-stride INVLPGB over 4 KiB entries) on `collapse-readers`, each beside
/// the faithful kernel it changes: the same bytes on one thread and on two, the faithful kernel
/// clean, the variant caught in every schedule.
#[test]
fn the_collapse_variants_are_caught_the_same_whatever_the_number_of_threads() {
    for (machine, good, bad) in [
        ("skylake", "linux-6.18", "bad-collapse-no-freed-tables"),
        ("zen4", "linux-6.18+invlpgb", "bad-invlpgb-2m-stride"),
    ] {
        let mut request = CheckRequest::new("collapse-readers", &[good, bad]);
        request.machine = machine.into();
        request.cpus = 6;
        request.params.tasks = 2;
        request.params.busy = 3;
        request.params.pages = 1024;
        request.params.iterations = 6;
        request.schedules = 10;
        request.speed_runs = 1;
        let one = on_threads(1, || check(&request, &NoProgress)).unwrap();
        let two = on_threads(2, || check(&request, &NoProgress)).unwrap();
        assert_eq!(check_json(&one).unwrap(), check_json(&two).unwrap(), "{bad}");
        assert_eq!(one[0].violations, 0, "{good} passes the schedules that catch {bad}");
        assert_eq!(one[1].schedules_with_violations, 10, "{bad}");
    }
}

#[test]
fn a_known_bad_policy_yields_a_witness_whose_replay_finds_it_again() {
    let progress = Counting::default();
    let reports =
        check(&lazy_readers(&["linux-6.18", "bad-lazy-no-catch-up"], 50), &progress).unwrap();
    assert_eq!(progress.starts.load(Ordering::SeqCst), 2);
    assert_eq!(progress.finished.load(Ordering::SeqCst), 100, "the speed runs are not counted");
    let [good, bad] = &reports[..] else { panic!("two reports") };
    assert_eq!((good.violations, good.witnesses.len()), (0, 0), "the faithful kernel passes");
    assert!(bad.violations > 0 && bad.schedules_with_violations > 0);
    let speed = bad.speed.as_ref().unwrap();
    assert_eq!(speed.seeds, [1, 2]);
    let witness = &bad.witnesses[0];
    assert_eq!(witness.violation.kind, tlblab_kernel::ViolationKind::StaleAfterCompletion);
    // The replay command, read back into a request, checks that one schedule and finds the
    // same first violation.
    let again = replay_request(&witness.replay);
    assert_eq!((again.schedules, again.first_seed), (1, witness.seed));
    let again = check(&again, &NoProgress).unwrap();
    assert_eq!(again[0].witnesses[0].violation, witness.violation);
    assert_eq!(again[0].witnesses[0].replay, witness.replay);
}

#[test]
fn the_replay_command_names_every_setting() {
    let mut request = lazy_readers(&["mine.toml"], 5);
    request.machine = "presets/zen4.toml".into();
    request.params.threads = false;
    request.params.op = StormOp::Mprotect;
    // Every parameter away from its default, so a missing option shows.
    let p = &mut request.params;
    (p.iterations, p.touch, p.busy, p.tasks, p.pages) = (11, 12, 13, 14, 15);
    (p.cycles_per_page, p.jobs, p.window_ms, p.burst_us, p.warmup_ms) = (16, 17, 18, 19, 20);
    request.max_ipi_delay = 123;
    request.disturb_every = 0;
    let command = request.replay_command("mine.toml", 9);
    let back = replay_request(&command);
    assert_eq!(back.policies, ["mine.toml"]);
    assert_eq!(
        (back.machine.as_str(), back.scenario.as_str()),
        ("presets/zen4.toml", "lazy-readers")
    );
    assert_eq!((back.cpus, back.max_ipi_delay, back.disturb_every), (3, 123, 0));
    assert_eq!((back.first_seed, back.schedules), (9, 1));
    let json = |r: &CheckRequest| serde_json::to_string(&r.params).unwrap();
    assert_eq!(json(&back), json(&request));
}

/// A request from a replay command line (`tlblab sim check --NAME VALUE …`), refusing any
/// option it does not know.
fn replay_request(command: &str) -> CheckRequest {
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[..3], ["tlblab", "sim", "check"]);
    let mut r = CheckRequest::new("", &[]);
    for pair in words[3..].chunks(2) {
        let [flag, value] = pair else {
            panic!("{flag:?} without a value in {command}", flag = pair[0])
        };
        let n = || value.parse::<u64>().unwrap_or_else(|_| panic!("{flag} {value}"));
        let p = &mut r.params;
        match *flag {
            "--policies" => r.policies = vec![value.to_string()],
            "--scenario" => r.scenario = value.to_string(),
            "--machine" => r.machine = value.to_string(),
            "--cpus" => r.cpus = n() as u16,
            "--max-ipi-delay" => r.max_ipi_delay = n(),
            "--disturb-every" => r.disturb_every = n(),
            "--iterations" => p.iterations = n(),
            "--touch" => p.touch = n(),
            "--busy" => p.busy = n() as usize,
            "--tasks" => p.tasks = n() as usize,
            "--mode" => p.threads = *value == "threads",
            "--op" => p.op = if *value == "munmap" { StormOp::Munmap } else { StormOp::Mprotect },
            "--pages" => p.pages = n(),
            "--cycles-per-page" => p.cycles_per_page = n(),
            "--jobs" => p.jobs = n(),
            "--window-ms" => p.window_ms = n(),
            "--burst-us" => p.burst_us = n(),
            "--warmup-ms" => p.warmup_ms = n(),
            "--schedules" => r.schedules = n(),
            "--seed" => r.first_seed = n(),
            other => panic!("unknown option {other} in {command}"),
        }
    }
    r
}

#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let progress = Counting::default();
    let refused = |request: &RunRequest| run(request, &progress).unwrap_err();
    let base = RunRequest::new("pingpong", &["linux-6.18"]);
    let e = refused(&RunRequest {
        policies: vec!["linux-6.18".into(), "linux-9.99".into()],
        ..base.clone()
    });
    assert!(matches!(e, RunsError::Policy(_)) && e.to_string().contains("\"linux-9.99\""), "{e}");
    assert!(e.is_bad_input());
    let e = refused(&RunRequest { scenario: "nope".into(), ..base.clone() });
    assert!(e.to_string().starts_with("unknown scenario \"nope\""), "{e}");
    let e = refused(&RunRequest { machine: "nope".into(), ..base.clone() });
    assert!(e.to_string().contains("machine preset named \"nope\""), "{e}");
    let e = refused(&RunRequest { policies: vec![], ..base.clone() });
    assert_eq!(e.to_string(), "no policy given: give at least one");
    let e = refused(&RunRequest { seeds: 0, ..base.clone() });
    assert_eq!(e.to_string(), "seeds 0: give a value from 1 to 1000");
    let e = refused(&RunRequest { noise: 1.5, ..base.clone() });
    assert_eq!(e.to_string(), "noise 1.5: give a value from 0 to 1 (a fraction)");
    let e = refused(&RunRequest { cpus: 0, ..base.clone() });
    assert_eq!(e.to_string(), "cpus 0: give a value from 1 to 4096");
    let e = refused(&RunRequest { first_seed: u64::MAX, seeds: 2, ..base.clone() });
    assert!(matches!(e, RunsError::SeedOverflow { .. }), "{e}");
    let e = tlblab_runs::mechanisms_without(&["nope"]).unwrap_err();
    assert!(e.to_string().starts_with("unknown mechanism \"nope\""), "{e}");

    let e = check(&CheckRequest { schedules: 0, ..lazy_readers(&["linux-6.18"], 1) }, &progress)
        .unwrap_err();
    assert_eq!(e.to_string(), "schedules 0: give a value of at least 1");
    // A bad policy after a good one: refused before the good one is checked.
    let e = check(&lazy_readers(&["linux-6.18", "nope.toml"], 1), &progress).unwrap_err();
    assert!(e.to_string().starts_with("policy file nope.toml: cannot read it"), "{e}");
    assert_eq!(progress.starts.load(Ordering::SeqCst), 0, "nothing started");
    // A scenario that needs more CPUs than the run has: the kernel model's own words.
    let storm = RunRequest { cpus: 3, ..RunRequest::new("storm", &["linux-6.18"]) };
    let e = run(&storm, &NoProgress).unwrap_err();
    assert_eq!(e.to_string(), "scenario storm needs at least 4 CPUs, the run has 3");
}
