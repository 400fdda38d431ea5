//! docs/sim-output.md stays true: it names every JSON field the tool prints, and its text
//! example is the tool's output for the golden fixture.

use crate::common::{data, json_keys, json_of, sim_output_doc, tlblab, undocumented};
use serde_json::Value;
use std::collections::BTreeSet;

fn doc() -> String {
    sim_output_doc()
}

fn keys(value: &Value, out: &mut BTreeSet<String>) {
    json_keys(value, &[], out);
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
    // A guest under EPT adds `nested_paging`.
    let output = tlblab()
        .args(["sim", "trace", "--json", "--machine", "skylake-kvm"])
        .arg(data("golden.lackey"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let kvm: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        kvm["runs"][0]["total"]["nested_paging"]["cache"]["misses"].as_u64().unwrap() > 0,
        "{kvm}"
    );
    keys(&kvm, &mut all);
    let text = doc();
    let missing = undocumented(&all, &text);
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
