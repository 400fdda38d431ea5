//! Prints the figures of the crate's closing report on this machine: median µs/op (or ops/s)
//! over ten 0.5-s runs after a warm-up, for the S2/S4 settings, and the harness overhead.
//!
//! `cargo run --release -p tlblab-live --example live_figures`

use std::time::Duration;
use tlblab_live::*;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), LiveError> {
    let runs = 10;
    let len = RunLength::Time(Duration::from_millis(500));
    let cpus = online_cpus()?.len();
    let mut configs = vec![
        ("madvise-busy", LiveParams { busy: Some(0), ..Default::default() }),
        ("pingpong", LiveParams::default()),
        ("pingpong", LiveParams { touch: Some(512), ..Default::default() }),
        (
            "munmap-threads",
            LiveParams {
                tasks: Some(2.min(cpus)),
                mode: Some(Mode::Threads),
                ..Default::default()
            },
        ),
        (
            "munmap-threads",
            LiveParams {
                tasks: Some(2.min(cpus)),
                mode: Some(Mode::Processes),
                ..Default::default()
            },
        ),
    ];
    if cpus >= 2 {
        configs.insert(1, ("madvise-busy", LiveParams { busy: Some(1), ..Default::default() }));
    }
    for (name, params) in configs {
        let spec = ScenarioSpec { name: name.into(), params };
        let mut p = prepare(&spec, &Placement::default())?;
        p.run(len)?; // warm-up
        let values: Vec<f64> =
            (0..runs).map(|_| p.run(len).map(|s| s.value)).collect::<Result<_, _>>()?;
        let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let unit = p.info().unit.symbol();
        let params = serde_json::to_string(&p.spec().params).unwrap_or_default();
        println!(
            "{name:15} {params:55} median {:>12.3} {unit}  (min {lo:.3}, max {hi:.3}, {runs} runs)",
            median(values)
        );
    }
    let spec = ScenarioSpec {
        name: "madvise-busy".into(),
        params: LiveParams { busy: Some(0), ..Default::default() },
    };
    let o = calibrate_overhead(&spec, &Placement::default())?;
    println!(
        "harness overhead, madvise-busy --busy 0: {:+.2}% of one op (quartiles {:+.2}% … {:+.2}%; bare {:.1} ns/op, harness {:.1} ns/op; {} pairs of {} ops)",
        o.percent, o.percent_p25, o.percent_p75, o.bare_ns_per_op, o.harness_ns_per_op, o.repeats, o.ops_per_repeat
    );
    Ok(())
}
