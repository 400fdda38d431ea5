//! Fuzzing the files a user writes: machine presets and policy files with a number changed to
//! zero, one, a negative, a huge or a random value are refused with a message naming the file,
//! or run a short scenario within a time bound: never a panic, never a hang (issue 18, item 4:
//! `hz = 0` divided by zero, `hz = 10^8` or a path cost near u64::MAX ran for hours).

use super::*;
use crate::workloads::Params;
use proptest::prelude::*;
use std::time::Duration;
use tlblab_sim::machine::BUILTIN_PRESETS;

/// Longest a case may take: parsing, and 30 iterations of a scenario in a debug build.
const BOUND: Duration = Duration::from_secs(10);

/// Runs `f` on a thread of its own; fails if it panics or takes longer than `bound`.
fn within<T: Send + 'static>(bound: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
}

/// The byte ranges of the numbers written as `= N` in `text` (a key's value, an inline
/// table's field).
fn numbers(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = text[i..].find("= ").map(|p| i + p + 2) {
        let end = at
            + bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'e'))
                .count();
        if end > at && bytes[at].is_ascii_digit() {
            out.push(at..end);
        }
        i = at;
    }
    out
}

/// A value to put in a number's place.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("9223372036854775807".to_string()),
        Just("18446744073709551615".to_string()),
        Just("4294967296".to_string()),
        Just("1e300".to_string()),
        Just("0.5".to_string()),
        any::<u64>().prop_map(|v| (v >> (v % 64)).to_string()),
    ]
}

/// The preset, or the error it gets; if accepted, 30 iterations of madv-migrate on 2 CPUs.
fn load_and_run(preset: String, policy: Option<String>) -> Result<(), String> {
    let spec = MachineSpec::from_toml(&preset, "fuzz.toml").map_err(|e| e.to_string())?;
    let policy = match policy {
        Some(text) => Policy::from_toml(&text, "fuzz-policy.toml").map_err(|e| e.to_string())?,
        None => Policy::named("linux-6.18").unwrap(),
    };
    let mut k = Kernel::new(&spec, &policy, KernelConfig::new(2, 1), crate::observer::NoObserver)
        .map_err(|e| e.to_string())?;
    let p = Params { iterations: 30, ..Params::default() };
    let s = crate::workloads::scenario("madv-migrate").unwrap();
    s.install(&mut k, &p).map_err(|e| e.to_string())?;
    s.run(&mut k, &p);
    Ok(())
}

fn skylake_kvm() -> &'static str {
    BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A preset (with kernel, idle and guest figures) with up to three numbers changed.
    #[test]
    fn presets_with_any_numbers_are_refused_or_run_in_bounded_time(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), value()), 1..4),
    ) {
        let mut text = skylake_kvm().to_string();
        for (at, v) in edits {
            let spots = numbers(&text);
            let spot = spots[at.index(spots.len())].clone();
            text.replace_range(spot, &v);
        }
        if let Err(e) = within(BOUND, move || load_and_run(text, None)) {
            prop_assert!(e.contains("fuzz.toml") || e.starts_with("policy ") || e.contains("machine"), "{e}");
        }
    }

    /// A policy file that sets numeric switches to any value (and a boolean one to a number).
    #[test]
    fn policy_files_with_any_numbers_are_refused_or_run_in_bounded_time(
        hz in value(), ceiling in value(), pcid in prop_oneof![Just("true".to_string()), value()],
    ) {
        let policy = format!(
            "name = 'fuzz'\nbase = 'linux-6.18'\n[set]\nhz = {hz}\n\
             tlb_single_page_flush_ceiling = {ceiling}\npcid = {pcid}\n"
        );
        let preset = skylake_kvm().to_string();
        if let Err(e) = within(BOUND, move || load_and_run(preset, Some(policy))) {
            prop_assert!(e.contains("fuzz-policy.toml"), "{e}");
        }
    }
}

#[test]
fn numbers_are_found_where_toml_writes_values() {
    let text = "mhz = 2300\nx = { cycles = 20, ns = 102.6, source = \"a\" }\nname = \"= 5\"\n";
    let found: Vec<&str> = numbers(text).into_iter().map(|r| &text[r]).collect();
    assert_eq!(found, ["2300", "20", "102.6", "5"]);
    assert!(numbers(skylake_kvm()).len() > 50);
}
