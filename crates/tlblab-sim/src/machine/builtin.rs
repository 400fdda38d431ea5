//! The presets shipped in `presets/`, embedded at build time.

use super::{MachineError, MachineSpec};

/// `(name, TOML text)` of every built-in preset, in display order.
pub const BUILTIN_PRESETS: &[(&str, &str)] = &[
    ("skylake", include_str!("../../../../presets/skylake.toml")),
    ("skylake-kvm", include_str!("../../../../presets/skylake-kvm.toml")),
    ("skylake-server", include_str!("../../../../presets/skylake-server.toml")),
    ("skylake-sp-2s", include_str!("../../../../presets/skylake-sp-2s.toml")),
    ("ivybridge", include_str!("../../../../presets/ivybridge.toml")),
    ("icelake-server", include_str!("../../../../presets/icelake-server.toml")),
    ("icelake-server-kvm", include_str!("../../../../presets/icelake-server-kvm.toml")),
    ("sapphire-rapids", include_str!("../../../../presets/sapphire-rapids.toml")),
    ("zen2", include_str!("../../../../presets/zen2.toml")),
    ("zen3", include_str!("../../../../presets/zen3.toml")),
    ("zen4", include_str!("../../../../presets/zen4.toml")),
    ("milan", include_str!("../../../../presets/milan.toml")),
];

/// Names of the built-in presets.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_PRESETS.iter().map(|(name, _)| *name)
}

/// The built-in preset called `name`.
pub fn builtin(name: &str) -> Result<MachineSpec, MachineError> {
    let (_, text) = BUILTIN_PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        MachineError::UnknownPreset {
            name: name.to_string(),
            known: builtin_names().collect::<Vec<_>>().join(", "),
        }
    })?;
    MachineSpec::from_toml(text, &format!("built-in preset {name} (presets/{name}.toml)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_preset_parses_validates_and_is_named_after_its_file() {
        for (name, _) in BUILTIN_PRESETS {
            let spec = builtin(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.name(), *name);
        }
    }

    /// cpuidle's table rules: states go shallowest first, and a bad table names its state.
    #[test]
    fn an_idle_table_out_of_order_is_refused_with_the_state_named() {
        let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
        let swapped = text.replace(
            "{ name = \"C1E\", exit_latency_ns = 10000,",
            "{ name = \"C1E\", exit_latency_ns = 1000,",
        );
        assert_ne!(swapped, text);
        let err = MachineSpec::from_toml(&swapped, "test").unwrap_err().to_string();
        assert!(err.contains("C1E") && err.contains("shallowest first"), "{err}");
        let huge = text.replace("exit_latency_ns = 890000,", "exit_latency_ns = 2000000000,");
        let err = MachineSpec::from_toml(&huge, "test").unwrap_err().to_string();
        assert!(err.contains("C10") && err.contains("over 1 s"), "{err}");
    }

    /// Figures past any machine (a latency or instruction cost near u64::MAX, mitigation event
    /// counts whose cost overflows) are refused with the key, not carried into the clock.
    #[test]
    fn huge_figures_are_refused_with_their_key() {
        let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
        for (from, to, key) in [
            (
                "walk_pt = { cycles = ",
                "walk_pt = { cycles = 9223372036854775807",
                "[latency] walk_pt",
            ),
            ("invlpg = { cycles = ", "invlpg = { cycles = 10000000001", "[cost] invlpg"),
        ] {
            let at = text.find(from).unwrap_or_else(|| panic!("{from}"));
            let end = at + text[at..].find(',').unwrap();
            let edited = format!("{}{to}{}", &text[..at], &text[end..]);
            let err = MachineSpec::from_toml(&edited, "test").unwrap_err().to_string();
            assert!(err.contains(key) && err.contains("above the limit"), "{err}");
        }
        let mitigations = "\n[mitigations]\nsource = \"t\"\n\
            safe_ret = { cycles = 1000000000, source = \"t\" }\n\
            [mitigations.paths.syscall]\nrets = 4294967295\nindirect = 4294967295\n";
        let err = MachineSpec::from_toml(&format!("{text}{mitigations}"), "test").unwrap_err();
        assert!(err.to_string().contains("`[mitigations.paths] syscall`"), "{err}");
        // Cycles within the limit but past 1 s at the preset's clock (a 1 MHz clock here).
        let slow = text.replacen("clock = { mhz = 4000,", "clock = { mhz = 1,", 1).replacen(
            "exec = { cycles = 500000,",
            "exec = { cycles = 2000000,",
            1,
        );
        assert_eq!(slow.len(), text.len() - 3 + 1);
        let err = MachineSpec::from_toml(&slow, "test").unwrap_err().to_string();
        assert!(err.contains("is more than 1 s at the 1 MHz clock"), "{err}");
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let err = builtin("pentium").unwrap_err().to_string();
        assert!(err.contains("pentium") && err.contains("skylake"), "{err}");
    }
}
