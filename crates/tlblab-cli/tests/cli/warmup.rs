//! `sim trace --warmup`: the first accesses fill the model without being counted.

use crate::common::{golden_machine, golden_trace, json_of, tlblab};
use serde_json::Value;

fn run(warmup: u64) -> Value {
    let (machine, trace) = (golden_machine(), golden_trace());
    let report = json_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--json".as_ref(),
        "--machine".as_ref(),
        machine.as_os_str(),
        "--warmup".as_ref(),
        warmup.to_string().as_ref(),
        trace.as_os_str(),
    ]);
    report["runs"][0].clone()
}

fn total(run: &Value, path: &[&str]) -> u64 {
    path.iter().fold(&run["total"], |v, k| &v[*k]).as_u64().expect("a counter")
}

#[test]
fn no_warmup_is_the_default() {
    let zero = run(0);
    assert_eq!(zero["warmup_accesses"], 0);
    assert_eq!(zero["warmup_complete"], true);
    assert_eq!(total(&zero, &["accesses", "total"]), 30, "the golden trace has 30 accesses");
}

#[test]
fn warmup_accesses_are_not_counted_but_fill_the_tlbs() {
    let all = run(0);
    for warmup in [1u64, 10, 29] {
        let measured = run(warmup);
        assert_eq!(measured["warmup_complete"], true);
        assert_eq!(total(&measured, &["accesses", "total"]), 30 - warmup);
        // Fewer walks than a cold start of the same suffix would have, never more than the
        // whole trace had: the warm-up's fills are kept.
        assert!(
            total(&measured, &["page_walks", "walks"]) <= total(&all, &["page_walks", "walks"])
        );
    }
    // The golden trace's first access (a fetch) walks; after warming up on it, the rest of the
    // trace has exactly one walk fewer than the whole trace.
    let after_first = run(1);
    assert_eq!(
        total(&after_first, &["page_walks", "walks"]) + 1,
        total(&all, &["page_walks", "walks"])
    );
}

#[test]
fn a_warmup_longer_than_the_trace_measures_nothing_and_says_so() {
    let (machine, trace) = (golden_machine(), golden_trace());
    let output = tlblab()
        .args(["sim", "trace", "--json", "--warmup", "1000", "--machine"])
        .arg(&machine)
        .arg(&trace)
        .output()
        .expect("running tlblab");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning") && stderr.contains("30 of 1000 accesses"), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let run = &report["runs"][0];
    assert_eq!(run["warmup_complete"], false);
    assert_eq!(total(run, &["accesses", "total"]), 0);
    assert_eq!(total(run, &["page_walks", "walks"]), 0);
}
