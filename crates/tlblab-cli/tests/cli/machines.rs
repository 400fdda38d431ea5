//! `sim machines`: the eight built-in presets, their sources, and `--toml` round trips.

use crate::common::{golden_machine, golden_trace, json_of, stdout_of, PRESETS};
use std::path::Path;

fn text_of(args: &[&std::ffi::OsStr]) -> String {
    String::from_utf8(stdout_of(args)).expect("UTF-8")
}

#[test]
fn machines_lists_every_built_in_preset() {
    let text = text_of(&["sim".as_ref(), "machines".as_ref()]);
    let names: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("name "))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, PRESETS, "{text}");
    assert!(text.contains("intel") && text.contains("amd"), "{text}");
}

#[test]
fn machines_show_zen2_marks_unverified_figures_and_sources() {
    let text = text_of(&["sim".as_ref(), "machines".as_ref(), "show".as_ref(), "zen2".as_ref()]);
    assert!(text.starts_with("zen2 — "), "{text}");
    assert!(text.contains("UNVERIFIED"), "{text}");
    assert!(text.contains("source"), "{text}");
    assert!(text.contains("WikiChip Zen 2"), "names a source: {text}");
    assert!(text.contains("built-in preset zen2 (presets/zen2.toml)"), "{text}");
    for structure in ["L1 dTLB", "L1 iTLB", "L2 dTLB 4K+2M", "L2 iTLB 4K+2M", "PDE", "PDPTE"] {
        assert!(text.contains(structure), "{structure}: {text}");
    }
}

#[test]
fn machines_show_toml_round_trips_for_every_preset() {
    let dir = tempfile::tempdir().unwrap();
    for name in PRESETS {
        let toml = stdout_of(["sim", "machines", "show", name, "--toml"]);
        let file = dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, &toml).unwrap();

        // `show` of the file is `show` of the name, but for where it comes from.
        let by_name =
            text_of(&["sim".as_ref(), "machines".as_ref(), "show".as_ref(), name.as_ref()]);
        let by_file =
            text_of(&["sim".as_ref(), "machines".as_ref(), "show".as_ref(), file.as_os_str()]);
        let origin = format!("from built-in preset {name} (presets/{name}.toml)");
        assert!(by_name.contains(&origin), "{by_name}");
        assert_eq!(by_file, by_name.replace(&origin, &format!("from {}", file.display())));

        // `--toml` of the file prints the file.
        let again = stdout_of([
            "sim".as_ref(),
            "machines".as_ref(),
            "show".as_ref(),
            file.as_os_str(),
            "--toml".as_ref(),
        ]);
        assert_eq!(again, toml);

        // And it simulates exactly as the built-in preset.
        let run = |machine: &Path| {
            let mut report = json_of([
                "sim".as_ref(),
                "trace".as_ref(),
                "--json".as_ref(),
                "--machine".as_ref(),
                machine.as_os_str(),
                golden_trace().as_os_str(),
            ]);
            report["machine"].as_object_mut().unwrap().remove("origin");
            report
        };
        assert_eq!(run(&file), run(Path::new(name)), "{name}");
    }
}

#[test]
fn machines_show_reads_a_preset_file() {
    let text = text_of(&[
        "sim".as_ref(),
        "machines".as_ref(),
        "show".as_ref(),
        golden_machine().as_os_str(),
    ]);
    assert!(text.starts_with("golden — tiny test machine"), "{text}");
    assert!(text.contains("0 of 15 figures are UNVERIFIED"), "{text}");
    assert!(text.contains(&golden_machine().display().to_string()), "{text}");
}

#[test]
fn machines_show_gives_each_kernel_figure_its_unit_clock_and_cycles() {
    let text = text_of(&["sim".as_ref(), "machines".as_ref(), "show".as_ref(), "skylake".as_ref()]);
    assert!(text.contains("kernel paths at 4,000 MHz"), "{text}");
    for header in ["as written", "measured at", "scales with"] {
        assert!(text.contains(header), "{header}: {text}");
    }
    // Migration was measured as time at 2.3 GHz and is latency-bound: 39.2 µs at 4 GHz.
    let migrate = text.lines().find(|l| l.starts_with("kernel.migrate ")).unwrap();
    for part in ["39193.9 ns", "2,300 MHz", "time", "156,776"] {
        assert!(migrate.contains(part), "{part}: {migrate}");
    }
    let syscall = text.lines().find(|l| l.starts_with("kernel.syscall ")).unwrap();
    assert!(syscall.contains("cycles") && syscall.contains(" 236 "), "{syscall}");

    let toml =
        String::from_utf8(stdout_of(["sim", "machines", "show", "skylake", "--toml"])).unwrap();
    let line = toml.lines().find(|l| l.starts_with("migrate = ")).unwrap();
    assert!(line.ends_with("  # resolved: 156776 cycles at 4000 MHz"), "{line}");
    // Every [kernel] figure the file writes says its cycles: 29 (change_pte the latest).
    assert_eq!(toml.matches("# resolved: ").count(), 29);
}
