//! `[kernel]` figures in their units (`cycles`, or `ns` at a clock with a scaling rule), resolved
//! once at load to cycles at the preset's clock; bad figures are errors naming the preset and key;
//! `[guest]` is parsed and checked.

use tlblab_sim::machine::raw::{GuestIdle, Scales, WrittenCost, MAX_PATH_CYCLES};
use tlblab_sim::machine::{MachineError, MachineSpec, BUILTIN_PRESETS};

fn skylake_text() -> &'static str {
    BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1
}

/// Skylake (4000 MHz) with its `key = …` line of `[kernel]` replaced by `line`.
fn with_kernel_line(key: &str, line: &str) -> String {
    let text = skylake_text();
    let kernel = text.find("\n[kernel]\n").unwrap();
    let (head, tail) = text.split_at(kernel);
    let prefix = format!("\n{key} = ");
    let start = tail.find(&prefix).unwrap_or_else(|| panic!("no {key}")) + 1;
    let end = start + tail[start..].find('\n').unwrap();
    format!("{head}{}{line}{}", &tail[..start], &tail[end..])
}

fn load(text: &str) -> Result<MachineSpec, MachineError> {
    MachineSpec::from_toml(text, "test.toml")
}

fn error(text: &str) -> String {
    load(text).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn a_core_bound_figure_keeps_its_cycles_and_a_latency_bound_one_its_time() {
    // Measured at 2300 MHz as 100 ns: 230 cycles there. On a 4000 MHz preset a core-bound path
    // still takes 230 cycles; a latency-bound one still takes 100 ns = 400 cycles.
    let cycles = r#"syscall = { ns = 100, at_mhz = 2300, scales = "cycles", source = "t" }"#;
    let time = r#"syscall = { ns = 100, at_mhz = 2300, scales = "time", source = "t" }"#;
    let spec = load(&with_kernel_line("syscall", cycles)).unwrap();
    let k = spec.kernel_costs().unwrap();
    assert_eq!(k.clock.mhz, 4000);
    assert_eq!(k.syscall.cycles, 230);
    assert_eq!(spec.raw().kernel.as_ref().unwrap().syscall.cycles, 230);
    assert_eq!(
        load(&with_kernel_line("syscall", time)).unwrap().kernel_costs().unwrap().syscall.cycles,
        400
    );
    // A figure native to the core is taken as written.
    let native = r#"syscall = { cycles = 321, source = "t" }"#;
    assert_eq!(
        load(&with_kernel_line("syscall", native)).unwrap().kernel_costs().unwrap().syscall.cycles,
        321
    );
}

#[test]
fn the_resolution_rule_rounds_half_away_from_zero_and_ignores_the_clock_for_cycles() {
    let w = |ns: f64, at: u64, s: Scales| WrittenCost {
        cycles: None,
        ns: Some(ns),
        at_mhz: Some(at),
        scales: Some(s),
    };
    assert_eq!(w(102.5, 2300, Scales::Cycles).resolve(4000), Ok(236)); // 235.75
    assert_eq!(w(102.5, 2300, Scales::Cycles).resolve(1), Ok(236));
    assert_eq!(w(0.25, 2000, Scales::Time).resolve(2000), Ok(1)); // 0.5 rounds up
    assert_eq!(w(39_193.9, 2300, Scales::Time).resolve(4000), Ok(156_776));
    assert_eq!(w(0.0, 2300, Scales::Time).resolve(4000), Ok(0));
}

#[test]
fn every_builtin_preset_resolves_the_same_way_twice() {
    for (name, text) in BUILTIN_PRESETS {
        let a = load(text).unwrap();
        let b = load(text).unwrap();
        let cycles = |s: &MachineSpec| {
            s.kernel_costs().unwrap().figures().map(|(n, f)| (n, f.cycles)).to_vec()
        };
        assert_eq!(cycles(&a), cycles(&b), "{name}");
        // zap_batch and split_vma are 0 where the preset's whole-path figures hold them,
        // ipi_return where ipi_handler holds it, the remote reads where they were not
        // measured apart, invlpg_refill where INVLPG keeps the kernel's translations and
        // page_fault_anon_hot where a fault's cost was not measured by its frame's reuse
        // (every built-in preset).
        let held_elsewhere = [
            "zap_batch",
            "split_vma",
            "ipi_return",
            "pipe_remote",
            "socket_remote",
            "pipe_queued",
            "socket_queued",
            "invlpg_refill",
            "page_fault_anon_hot",
        ];
        let positive = |(n, c): &(&str, u64)| *c > 0 || held_elsewhere.contains(n);
        assert!(cycles(&a).iter().all(positive), "{name}: {:?}", cycles(&a));
        // The TOML written back from the preset loads to the same figures.
        let again = toml::to_string(a.raw()).unwrap();
        assert_eq!(cycles(&load(&again).unwrap()), cycles(&a), "{name}");
    }
}

#[test]
fn bad_figures_are_errors_naming_the_preset_and_key() {
    let cases = [
        (r#"syscall = { ns = 100, at_mhz = 0, scales = "time", source = "t" }"#, "`at_mhz = 0`"),
        (
            r#"syscall = { cycles = 5, ns = 100, at_mhz = 2300, scales = "time", source = "t" }"#,
            "both",
        ),
        (r#"syscall = { source = "t" }"#, "neither"),
        (r#"syscall = { ns = nan, at_mhz = 2300, scales = "time", source = "t" }"#, "finite"),
        (r#"syscall = { ns = inf, at_mhz = 2300, scales = "time", source = "t" }"#, "finite"),
        (
            r#"syscall = { ns = -1.5, at_mhz = 2300, scales = "time", source = "t" }"#,
            "non-negative",
        ),
        (r#"syscall = { ns = 1e300, at_mhz = 2300, scales = "cycles", source = "t" }"#, "limit"),
        (r#"syscall = { cycles = 9223372036854775807, source = "t" }"#, "limit"),
        (r#"syscall = { ns = 100, scales = "time", source = "t" }"#, "needs `at_mhz`"),
        (r#"syscall = { ns = 100, at_mhz = 2300, source = "t" }"#, "needs `scales"),
        (r#"syscall = { cycles = 5, scales = "time", source = "t" }"#, "go with `ns`"),
    ];
    for (line, want) in cases {
        let e = error(&with_kernel_line("syscall", line));
        assert!(e.starts_with("machine preset test.toml: "), "{line}: {e}");
        assert!(e.contains("`[kernel] syscall`") && e.contains(want), "{line}: {e}");
    }
    // Shape errors are parse errors, also naming the preset.
    for line in [
        r#"syscall = { ns = 1, at_mhz = 2300, scales = "both", source = "t" }"#,
        r#"syscall = { nanoseconds = 1, source = "t" }"#,
        r#"syscall = { cycles = -1, source = "t" }"#,
        r#"syscall = { cycles = 18446744073709551615, source = "t" }"#,
    ] {
        let e = error(&with_kernel_line("syscall", line));
        assert!(e.starts_with("machine preset test.toml: "), "{line}: {e}");
    }
    let e = error(&with_kernel_line("clock", r#"clock = { mhz = 0, source = "t" }"#));
    assert!(e.contains("`[kernel] clock`") && e.contains("`mhz = 0`"), "{e}");
    const { assert!(MAX_PATH_CYCLES >= 500_000) };
}

#[test]
fn guest_section_is_optional_checked_and_resolved_at_the_kernel_clock() {
    assert!(load(skylake_text()).unwrap().guest().is_none());
    let guest = r#"
[guest]
hypervisor = { value = "kvm", source = "CPUID 0x40000000" }
vm_exit = { ns = 1000, at_mhz = 2300, scales = "time", source = "t" }
ipi_round_trip = { ns = 2000, at_mhz = 2300, scales = "time", source = "t" }
pv_tlb_flush = { value = true, source = "CPUID 0x40000001 EAX bit 9" }
pv_send_ipi = { value = false, source = "bit 11" }
idle = { value = "haltpoll", source = "cpuidle current_driver" }
steal_time = { value = true, source = "bit 5" }
"#;
    let spec = load(&format!("{}{guest}", skylake_text())).unwrap();
    let g = spec.guest().unwrap();
    assert_eq!(g.hypervisor.as_ref().unwrap().value, "kvm");
    assert_eq!(g.vm_exit.as_ref().unwrap().cycles, 4000);
    assert_eq!(g.ipi_round_trip.as_ref().unwrap().cycles, 8000);
    assert_eq!(g.idle.as_ref().unwrap().value, GuestIdle::Haltpoll);
    assert!(g.posted_interrupts.is_none());
    let e = error(&format!(
        "{}{}\nposted = {{ value = true, source = \"t\" }}\n",
        skylake_text(),
        guest
    ));
    assert!(e.contains("posted"), "{e}");
    let e = error(&format!(
        "{}\n[guest]\nvm_exit = {{ ns = -3, at_mhz = 2300, scales = \"time\", source = \"t\" }}\n",
        skylake_text()
    ));
    assert!(e.contains("`[guest] vm_exit`"), "{e}");
    let e = error(&format!(
        "{}\n[guest]\nidle = {{ value = \"mwait\", source = \"t\" }}\n",
        skylake_text()
    ));
    assert!(e.contains("mwait") || e.contains("idle"), "{e}");
}

/// `overcommit` is from 1 to 64, and above 1 needs a non-zero `host_slice` and a `host_hz`.
#[test]
fn guest_overcommit_is_checked() {
    let guest = |lines: &str| format!("{}\n[guest]\n{lines}", skylake_text());
    let slice = r#"host_slice = { ns = 3000000, at_mhz = 2300, scales = "time", source = "t" }"#;
    let hz = r#"host_hz = { value = 1000, source = "t" }"#;
    let oc = |r: &str| format!("overcommit = {{ value = {r}, source = \"t\" }}\n");
    let spec = load(&guest(&format!("{}{slice}\n{hz}\n", oc("1.5")))).unwrap();
    let g = spec.guest().unwrap();
    assert_eq!(g.overcommit.as_ref().unwrap().value.0, 1.5);
    // 3 ms at skylake's 4 GHz.
    assert_eq!(g.host_slice.as_ref().unwrap().cycles, 12_000_000);
    // Dedicated needs neither.
    assert!(load(&guest(&oc("1.0"))).is_ok());
    for (r, want) in
        [("0.5", "from 1 (dedicated)"), ("65.0", "to 64"), ("nan", "from 1"), ("inf", "from 1")]
    {
        let e = error(&guest(&format!("{}{slice}\n{hz}\n", oc(r))));
        assert!(e.contains("`[guest] overcommit") && e.contains(want), "{r}: {e}");
    }
    let e = error(&guest(&format!("{}{hz}\n", oc("2.0"))));
    assert!(e.contains("needs a non-zero `host_slice`"), "{e}");
    let e = error(&guest(&format!("{}{slice}\n", oc("2.0"))));
    assert!(e.contains("needs `host_hz`"), "{e}");
    let e = error(&guest(&format!(
        "{}{slice}\nhost_hz = {{ value = 5, source = \"t\" }}\n",
        oc("2.0")
    )));
    assert!(e.contains("`[guest] host_hz = 5`"), "{e}");
    let e = error(&guest(&oc("\"two\"")));
    assert!(e.contains("overcommit"), "{e}");
}

#[test]
fn the_shared_repro_files_are_errors_not_panics() {
    // ../shared/repro/machine-*.toml: a zero clock, a migrate cost of u64::MAX, a syscall of
    // i64::MAX cycles.
    let clock0 = with_kernel_line("clock", r#"clock = { mhz = 0, source = "t" }"#);
    assert!(error(&clock0).contains("clock"));
    let migrate =
        with_kernel_line("migrate", r#"migrate = { cycles = 18446744073709551615, source = "t" }"#);
    assert!(error(&migrate).starts_with("machine preset test.toml: "));
    let syscall =
        with_kernel_line("syscall", r#"syscall = { cycles = 9223372036854775807, source = "t" }"#);
    assert!(error(&syscall).contains("`[kernel] syscall`"));
}

/// A study's guest setting (S9) replaces the preset's posted-interrupt and overcommit facts,
/// saying where they come from, and is checked as the file would be.
#[test]
fn a_guest_setting_replaces_posted_interrupts_and_overcommit() {
    let spec = tlblab_sim::machine::builtin("icelake-server-kvm").unwrap();
    let set = spec.clone().with_guest_setting(false, 1.5, "the study's setting").unwrap();
    let g = set.guest().unwrap();
    assert!(!g.posted_interrupts.as_ref().unwrap().value);
    assert_eq!(g.overcommit.as_ref().unwrap().value.0, 1.5);
    assert_eq!(g.overcommit.as_ref().unwrap().source, "the study's setting");
    // Out of range, as in a file.
    let e = spec.clone().with_guest_setting(true, 65.0, "x").unwrap_err().to_string();
    assert!(e.contains("overcommit = 65") && e.contains("from 1 (dedicated) to 64"), "{e}");
    // A bare-metal preset has no guest to set.
    let e = tlblab_sim::machine::builtin("icelake-server")
        .unwrap()
        .with_guest_setting(true, 2.0, "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a preset with a [guest] section"), "{e}");
}
