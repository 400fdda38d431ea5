//! The identity lines of `/proc/cpuinfo` that tlblab-env's parser does not keep.

use tlblab_env::{parse_cpuinfo, CpuInfo};

/// The first processor block's identity, plus tlblab-env's parse (flags, model name, count).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuinfoFacts {
    /// `vendor_id`.
    pub vendor_id: Option<String>,
    /// `cpu family`.
    pub family: Option<u32>,
    /// `model`.
    pub model: Option<u32>,
    /// `stepping`.
    pub stepping: Option<u32>,
    /// `cpu MHz` (the current frequency as the kernel last saw it; under KVM usually the TSC's).
    pub mhz: Option<f64>,
    /// Flags, model name and processor count.
    pub common: CpuInfo,
}

impl CpuinfoFacts {
    /// Whether the `flags` line has `flag` (`None` without a flags line).
    pub fn flag(&self, flag: &str) -> Option<bool> {
        self.common.flags.as_ref().map(|f| f.contains(flag))
    }
}

/// Parses `/proc/cpuinfo`; only the first processor block's identity lines are read.
pub fn parse(text: &str) -> CpuinfoFacts {
    let mut out = CpuinfoFacts { common: parse_cpuinfo(text), ..CpuinfoFacts::default() };
    for line in text.lines() {
        if line.trim().is_empty() {
            break; // end of the first block
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match key.trim() {
            "vendor_id" => out.vendor_id = Some(value.to_owned()),
            "cpu family" => out.family = value.parse().ok(),
            "model" => out.model = value.parse().ok(),
            "stepping" => out.stepping = value.parse().ok(),
            "cpu MHz" => out.mhz = value.parse().ok(),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_of_the_first_block() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n\
                    model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 2\ncpu MHz\t\t: 2299.998\n\
                    flags\t\t: fpu pge pcid\n\nprocessor\t: 1\nvendor_id\t: Other\nmodel\t\t: 1\n";
        let f = parse(text);
        assert_eq!(f.vendor_id.as_deref(), Some("GenuineIntel"));
        assert_eq!((f.family, f.model, f.stepping), (Some(6), Some(207), Some(2)));
        assert_eq!(f.mhz, Some(2299.998));
        assert_eq!(f.common.processors, 2);
        assert_eq!((f.flag("pcid"), f.flag("la57")), (Some(true), Some(false)));
    }
}
