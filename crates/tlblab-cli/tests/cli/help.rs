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
    // The commit it was built from (a hex hash, or `unknown` outside a git checkout).
    let commit = version.split("(commit ").nth(1).and_then(|r| r.split(')').next()).unwrap();
    let hash = commit.trim_end_matches("-dirty");
    assert!(
        hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
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
        &["<INPUT>", "--output", "--force", "--input-format", "--page-size", "--cpu", "--pcid"],
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

/// The bash completion script parses (`bash -n`) and completes the subcommands and a nested
/// command's options; an unknown shell is a usage error (2).
#[test]
fn completions_are_valid_bash_and_name_the_commands() {
    let script = String::from_utf8(stdout_of(["completions", "bash"])).unwrap();
    for needle in ["sim", "study", "bench", "--without", "--explain"] {
        assert!(script.contains(needle), "{needle}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tlblab.bash");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        assert!(!stdout_of(["completions", shell]).is_empty(), "{shell}");
    }
    let out = crate::common::tlblab().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `tlblab man DIR` writes a roff page for every visible command, named after its path, and
/// each page documents that command's own options; a DIR that is a file is refused.
#[test]
fn man_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let listed = String::from_utf8(stdout_of(["man", dir.path().to_str().unwrap()])).unwrap();
    let page = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    for name in ["tlblab.1", "tlblab-sim.1", "tlblab-sim-run.1", "tlblab-trace-record.1"] {
        assert!(listed.contains(name), "{name}: {listed}");
        assert!(page(name).starts_with(".ie") || page(name).contains(".TH"), "{name}");
    }
    assert!(page("tlblab-sim-run.1").contains("without"));
    assert!(page("tlblab-trace-record.1").contains("events"));
    // Hidden internal commands get no page, and nothing is left half-written.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".1") && !n.starts_with('.')), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("worker") || n.contains("exec")), "{names:?}");
    let file = dir.path().join("tlblab.1");
    let e =
        crate::common::one_error(crate::common::tlblab().args(["man", file.to_str().unwrap()]), 1);
    assert!(e.contains("is not a directory"), "{e}");
}
