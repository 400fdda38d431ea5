//! Prints the figures of the crate's closing report on this machine: for each pair of
//! configurations, one warm-up run each, then ten 0.5-s runs each, interleaved (A B B A …);
//! the median, min and max per configuration; then the harness overhead.
//!
//! `cargo run --release -p tlblab-live --example live_figures`

use std::time::Duration;
use tlblab_live::*;

fn p(f: impl FnOnce(&mut LiveParams)) -> LiveParams {
    let mut params = LiveParams::default();
    f(&mut params);
    params
}

fn main() -> Result<(), LiveError> {
    let len = RunLength::Time(Duration::from_millis(500));
    let tasks = online_cpus()?.len().min(2);
    let pairs = [
        ("madvise-busy", p(|p| p.busy = Some(0)), p(|p| p.busy = Some(tasks - 1))),
        ("pingpong", p(|p| p.touch = Some(0)), p(|p| p.touch = Some(512))),
        (
            "munmap-threads",
            p(|p| (p.tasks, p.mode) = (Some(tasks), Some(Mode::Threads))),
            p(|p| (p.tasks, p.mode) = (Some(tasks), Some(Mode::Processes))),
        ),
    ];
    for (name, a, b) in pairs {
        let spec = |params| ScenarioSpec { name: name.into(), params };
        let mut both =
            [prepare(&spec(a), &Placement::default())?, prepare(&spec(b), &Placement::default())?];
        let mut values = [Vec::new(), Vec::new()];
        for prepared in &mut both {
            prepared.run(len)?; // warm-up
        }
        for i in 0..20 {
            let which = [0, 1, 1, 0][i % 4];
            values[which].push(both[which].run(len)?.value);
        }
        for (prepared, mut v) in both.iter().zip(values) {
            v.sort_by(f64::total_cmp);
            let params = serde_json::to_string(&prepared.spec().params).unwrap_or_default();
            let unit = prepared.info().unit.symbol();
            println!(
                "{name:15} {params:45} median {:>10.3} {unit:6} (min {:.3}, max {:.3}, {} runs)",
                (v[4] + v[5]) / 2.0,
                v[0],
                v[9],
                v.len()
            );
        }
    }
    let spec = ScenarioSpec { name: "madvise-busy".into(), params: p(|p| p.busy = Some(0)) };
    let o = calibrate_overhead(&spec, &Placement::default())?;
    println!(
        "harness overhead, madvise-busy --busy 0, {} pairs of {} ms: median {:+.2}% (quartiles {:+.2}% … {:+.2}%), \
         bare {:.1} ns/op, harness {:.1} ns/op; machinery alone {:.3} ns/op = {:.4}% of the op",
        o.repeats,
        o.slice_ns / 1_000_000,
        o.percent,
        o.percent_p25,
        o.percent_p75,
        o.bare_ns_per_op,
        o.harness_ns_per_op,
        o.machinery_ns_per_op,
        o.machinery_percent
    );
    Ok(())
}
