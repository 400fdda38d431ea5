//! Result files as `tlblab report` and `tlblab compare` read them, damaged: a value replaced by
//! an extreme one (huge, negative, fractional, a string with control bytes, null), a key
//! removed, or the text cut or with bytes flipped. Each is read or refused with an error, and
//! rendered when read, never a panic, each case within a time bound (issue 18, item 4).

mod common;

use common::fixture;
use proptest::prelude::*;
use serde_json::Value;
use std::time::Duration;
use tlblab_bench::render::{self, Format};
use tlblab_bench::{compare_results, BenchResults, CompareSettings};
use tlblab_report::Report;

/// Longest a case may take (reading and rendering a result of up to 70 KB, debug build).
const BOUND: Duration = Duration::from_secs(10);

/// The result files of every kind the report reads, small enough to fuzz quickly.
const FIXTURES: [&str; 9] = [
    "bench-madvise-busy.json",
    "check-bad-lazy.json",
    "check-latr.json",
    "replay-live.json",
    "sweep-live-working-set.json",
    "trace-report-live.json",
    "trace-report-perf-text.json",
    "study-s1-quick.json",
    "study-s2-quick-1seed.json",
];

/// Runs `f` on a thread of its own; fails if it panics or takes longer than `bound`.
fn within<T: Send + 'static>(bound: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
}

/// A damaged value.
fn extreme() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(0.into()),
        Just((-1).into()),
        Just(u64::MAX.into()),
        Just(i64::MIN.into()),
        Just(1e308.into()),
        Just((-1e308).into()),
        Just(1e-300.into()),
        Just(Value::from("\u{1b}[2J\u{7}x")),
        Just(Value::Array(vec![])),
        Just(Value::Object(Default::default())),
    ]
}

/// Every leaf of `v` (and every object member, to remove), as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// `v` with the value at `pointer` replaced (or, with `None`, its member removed).
fn edit(v: &mut Value, pointer: &str, with: Option<Value>) {
    match with {
        Some(new) => {
            if let Some(slot) = v.pointer_mut(pointer) {
                *slot = new;
            }
        }
        None => {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            if let Some(Value::Object(m)) = v.pointer_mut(parent) {
                m.remove(&key.replace("~1", "/").replace("~0", "~"));
            }
        }
    }
}

/// Reads `text` as the report does and renders it; as a bench result, compares it with the
/// fixture and renders the comparison in every format.
fn read_everywhere(name: &'static str, text: String) {
    let mut report = Report::new("fuzz");
    if report.add_json(name, &text).is_ok() {
        let _ = report.render_html();
        let _ = report.render_markdown();
    }
    if let Ok(damaged) = serde_json::from_str::<BenchResults>(&text) {
        let good: BenchResults =
            serde_json::from_str(&std::fs::read_to_string(fixture(FIXTURES[0])).unwrap()).unwrap();
        if let Ok(cmp) = compare_results(("a", &good), ("b", &damaged), &CompareSettings::default())
        {
            for format in [Format::Table, Format::Json, Format::Csv, Format::Markdown] {
                let _ = render::comparison(&cmp, format);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn damaged_values_are_read_or_refused_quickly(
        which in 0..FIXTURES.len(),
        edits in proptest::collection::vec(
            (any::<prop::sample::Index>(), prop::option::weighted(0.85, extreme())), 1..6),
    ) {
        let name = FIXTURES[which];
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
        for (at, with) in edits {
            let mut all = Vec::new();
            pointers(&v, String::new(), &mut all);
            if all.is_empty() {
                break;
            }
            edit(&mut v, &all[at.index(all.len())], with);
        }
        let text = v.to_string();
        within(BOUND, move || read_everywhere(name, text));
    }

    #[test]
    fn damaged_bytes_are_read_or_refused_quickly(
        which in 0..FIXTURES.len(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let name = FIXTURES[which];
        let mut bytes = std::fs::read(fixture(name)).unwrap();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let text = String::from_utf8_lossy(&bytes).into_owned();
        within(BOUND, move || read_everywhere(name, text));
    }
}
