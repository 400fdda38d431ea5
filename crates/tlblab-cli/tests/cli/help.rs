//! Every command's help exits 0 and names its subcommands and key options.

use crate::common::stdout_of;
use tlblab_sim::workload::Workload;

fn help(args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.push("--help");
    String::from_utf8(stdout_of(&args)).expect("UTF-8 help")
}

fn assert_mentions(text: &str, what: &[&str], context: &str) {
    for needle in what {
        assert!(text.contains(needle), "`{context} --help` does not mention {needle:?}:\n{text}");
    }
}

#[test]
fn top_level_help_names_the_sim_command() {
    let text = help(&[]);
    assert_mentions(&text, &["Usage: tlblab <COMMAND>", "sim", "--version"], "tlblab");
    let version = String::from_utf8(stdout_of(["--version"])).unwrap();
    assert!(version.starts_with("tlblab "), "{version}");
}

#[test]
fn sim_help_names_every_subcommand() {
    let text = help(&["sim"]);
    assert_mentions(&text, &["demo", "trace", "convert", "machines"], "tlblab sim");
    // `help sim` is the same text.
    assert_eq!(String::from_utf8(stdout_of(["help", "sim"])).unwrap(), text);
}

#[test]
fn trace_help_names_every_option_and_format() {
    let text = help(&["sim", "trace"]);
    assert_mentions(
        &text,
        &[
            "<FILE>...",
            "--machine",
            "--replacement",
            "lru",
            "plru",
            "--paging-levels",
            "--format",
            "lackey",
            "champsim",
            "compact",
            "--page-size",
            "4k|2m|1g",
            "--cpu",
            "--pcid",
            "--json",
            "--per-cpu",
            "--jobs",
            "gzip",
            "xz",
            "docs/sim-output.md",
        ],
        "tlblab sim trace",
    );
}

#[test]
fn convert_help_names_every_option() {
    let text = help(&["sim", "convert"]);
    assert_mentions(
        &text,
        &["<INPUT>", "--output", "--force", "--format", "--page-size", "--cpu", "--pcid"],
        "tlblab sim convert",
    );
}

#[test]
fn demo_help_names_every_option_and_workload() {
    let text = help(&["sim", "demo"]);
    assert_mentions(
        &text,
        &["--machine", "--replacement", "--paging-levels", "--accesses", "--seed", "--workload"],
        "tlblab sim demo",
    );
    assert_mentions(&text, &["--json"], "tlblab sim demo");
    for w in Workload::ALL {
        assert_mentions(&text, &[w.name()], "tlblab sim demo");
    }
}

#[test]
fn machines_help_names_show_and_its_toml_option() {
    assert_mentions(&help(&["sim", "machines"]), &["show"], "tlblab sim machines");
    assert_mentions(
        &help(&["sim", "machines", "show"]),
        &["<NAME|PATH>", "--toml"],
        "tlblab sim machines show",
    );
}
