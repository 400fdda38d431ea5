//! The built-in preset nearest to a CPU, by vendor and microarchitecture generation.
//!
//! Model numbers: Linux `arch/x86/include/asm/intel-family.h` (Intel family 6) and AMD's
//! processor programming references (families 17h, 19h, 1Ah). A generation without a preset of
//! its own maps to the preset of the closest core design, and says so.

use crate::cpuid::identity::{Signature, Vendor};

/// The preset chosen and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nearest {
    /// Built-in preset name (`skylake-server`).
    pub preset: &'static str,
    /// The microarchitecture the signature names (`Emerald Rapids (Raptor Cove core)`), or
    /// `unknown`.
    pub microarchitecture: &'static str,
    /// Whether the preset describes this very core design (else the nearest one).
    pub exact: bool,
}

impl Nearest {
    /// One line for the provenance: `Intel family 6 model 0xCF = Emerald Rapids (…): nearest
    /// preset sapphire-rapids (same core design)`.
    pub fn explain(&self, vendor: &Vendor, sig: Signature) -> String {
        let how = if self.exact { "same core design" } else { "nearest core design with a preset" };
        format!(
            "{} family {:#x} model {:#x} = {}: preset {} ({how})",
            vendor_name(vendor),
            sig.family,
            sig.model,
            self.microarchitecture,
            self.preset
        )
    }
}

fn vendor_name(vendor: &Vendor) -> &str {
    match vendor {
        Vendor::Intel => "Intel",
        Vendor::Amd => "AMD",
        Vendor::Hygon => "Hygon",
        Vendor::Other(s) => s,
    }
}

/// (models, microarchitecture, preset, exact) for Intel family 6.
const INTEL_FAMILY_6: &[(&[u32], &str, &str, bool)] = &[
    (&[0x2A, 0x2D], "Sandy Bridge", "ivybridge", false),
    (&[0x3A, 0x3E], "Ivy Bridge", "ivybridge", true),
    (&[0x3C, 0x3F, 0x45, 0x46], "Haswell", "skylake", false),
    (&[0x3D, 0x47, 0x4F, 0x56], "Broadwell", "skylake", false),
    (&[0x4E, 0x5E], "Skylake (client)", "skylake", true),
    (&[0x8E, 0x9E], "Kaby/Coffee/Whiskey Lake (Skylake core)", "skylake", true),
    (&[0xA5, 0xA6], "Comet Lake (Skylake core)", "skylake", true),
    (&[0x55], "Skylake-SP/Cascade Lake/Cooper Lake (Skylake server core)", "skylake-server", true),
    (&[0x6A, 0x6C], "Ice Lake-SP/D (Sunny Cove)", "icelake-server", true),
    (&[0x7D, 0x7E, 0x9D], "Ice Lake client (Sunny Cove)", "icelake-server", true),
    (&[0x8C, 0x8D], "Tiger Lake (Willow Cove)", "icelake-server", false),
    (&[0xA7], "Rocket Lake (Cypress Cove)", "icelake-server", false),
    (&[0x8F], "Sapphire Rapids (Golden Cove)", "sapphire-rapids", true),
    (&[0x97, 0x9A], "Alder Lake (Golden Cove P-cores)", "sapphire-rapids", true),
    (&[0xCF], "Emerald Rapids (Raptor Cove)", "sapphire-rapids", false),
    (&[0xB7, 0xBA, 0xBF], "Raptor Lake (Raptor Cove P-cores)", "sapphire-rapids", false),
    (&[0xAA, 0xAC], "Meteor Lake (Redwood Cove P-cores)", "sapphire-rapids", false),
    (&[0xAD, 0xAE], "Granite Rapids (Redwood Cove)", "sapphire-rapids", false),
];

/// The nearest built-in preset. `None` for a vendor the simulator does not model.
pub fn nearest(vendor: &Vendor, sig: Signature) -> Option<Nearest> {
    let n = |preset, microarchitecture, exact| Some(Nearest { preset, microarchitecture, exact });
    match vendor {
        Vendor::Intel if sig.family == 6 => INTEL_FAMILY_6
            .iter()
            .find(|(models, ..)| models.contains(&sig.model))
            .map(|&(_, uarch, preset, exact)| Nearest { preset, microarchitecture: uarch, exact })
            .or_else(|| {
                n("sapphire-rapids", "unknown (model not in the table: newest Intel preset)", false)
            }),
        Vendor::Intel => n("sapphire-rapids", "unknown (not family 6: newest Intel preset)", false),
        Vendor::Hygon => n("zen2", "Hygon Dhyana (Zen core)", false),
        Vendor::Amd => match (sig.family, sig.model) {
            (0x17, 0x00..=0x2F) => n("zen2", "Zen/Zen+", false),
            (0x17, _) => n("zen2", "Zen 2", true),
            (0x19, 0x00..=0x0F | 0x20..=0x2F | 0x40..=0x5F) => n("zen3", "Zen 3", true),
            (0x19, 0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF) => n("zen4", "Zen 4", true),
            (0x19, _) => n("zen3", "unknown family 19h model (Zen 3 or 4)", false),
            (0x1A, _) => n("zen4", "Zen 5", false),
            (f, _) if f > 0x1A => n("zen4", "unknown (newer than Zen 5: newest AMD preset)", false),
            _ => n("zen2", "unknown (older than Zen: oldest AMD preset)", false),
        },
        Vendor::Other(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(family: u32, model: u32) -> Signature {
        Signature { family, model, stepping: 0 }
    }

    #[test]
    fn this_projects_vm_is_emerald_rapids_near_sapphire_rapids() {
        let n = nearest(&Vendor::Intel, sig(6, 0xCF)).unwrap();
        assert_eq!((n.preset, n.exact), ("sapphire-rapids", false));
        assert!(n.explain(&Vendor::Intel, sig(6, 0xCF)).contains("model 0xcf = Emerald Rapids"));
    }

    #[test]
    fn servers_and_amd_generations() {
        assert_eq!(nearest(&Vendor::Intel, sig(6, 0x55)).unwrap().preset, "skylake-server");
        assert_eq!(nearest(&Vendor::Intel, sig(6, 0x6A)).unwrap().preset, "icelake-server");
        assert_eq!(nearest(&Vendor::Amd, sig(0x19, 0x01)).unwrap().preset, "zen3");
        assert_eq!(nearest(&Vendor::Amd, sig(0x19, 0x11)).unwrap().preset, "zen4");
        assert_eq!(nearest(&Vendor::Amd, sig(0x17, 0x31)).unwrap().preset, "zen2");
        assert_eq!(nearest(&Vendor::Amd, sig(0x1A, 0x02)).unwrap().preset, "zen4");
        assert!(nearest(&Vendor::Other("CentaurHauls".into()), sig(6, 0x0F)).is_none());
    }

    #[test]
    fn every_preset_named_exists() {
        let known: Vec<&str> = tlblab_sim::machine::builtin_names().collect();
        for (_, _, preset, _) in INTEL_FAMILY_6 {
            assert!(known.contains(preset), "{preset}");
        }
        for p in ["zen2", "zen3", "zen4", "sapphire-rapids"] {
            assert!(known.contains(&p), "{p}");
        }
    }
}
