//! docs/sim-output.md stays true: it names every JSON field the tool prints, and its text
//! example is the tool's output for the golden fixture.

use crate::common::{data, json_of, tlblab};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sim-output.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every object key in `value`, at any depth.
fn keys(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn output_doc_names_every_json_field() {
    let mut all = BTreeSet::new();
    // A good file and a missing one, so that both `runs` and `errors` have an entry.
    let output = tlblab()
        .args(["sim", "trace", "--json", "--machine"])
        .arg(data("golden-machine.toml"))
        .arg(data("golden.lackey"))
        .arg("no-such-file.lackey")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let trace: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(trace["errors"].as_array().unwrap().len(), 1);
    keys(&trace, &mut all);
    let demo = json_of(["sim", "demo", "--json", "--accesses", "100"]);
    keys(&demo, &mut all);
    let text = doc();
    // Named in code style, alone (`origin`) or as the last part of a path (`machine.origin`).
    let named = |k: &str| {
        let tail = format!("{k}`");
        text.match_indices(&tail).any(|(i, _)| matches!(text[..i].chars().last(), Some('`' | '.')))
    };
    let missing: Vec<_> = all.iter().filter(|k| !named(k)).collect();
    assert!(missing.is_empty(), "docs/sim-output.md does not describe {missing:?}");
    assert!(text.contains("`tlblab.sim.trace/1`") && text.contains("`tlblab.sim.demo/1`"));
}

#[test]
fn output_doc_text_example_is_the_tools_output() {
    let text = doc();
    let start = text.find("The same run as text:").expect("the text example");
    let block = &text[start..];
    let block = &block[block.find("```text\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    let output = tlblab()
        .current_dir(data(""))
        .args(["sim", "trace", "--machine", "golden-machine.toml", "golden.lackey"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), block);
}
