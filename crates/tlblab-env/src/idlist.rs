//! The kernel's list format for CPU and node sets ("0-3,8-11"), as in
//! `/sys/devices/system/cpu/online` and `/sys/devices/system/node/online`.

use crate::Error;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A sorted set of CPU or node ids. Serialized in the kernel's list format ("0-3,5").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdList(Vec<u32>);

impl IdList {
    /// The ids in increasing order.
    pub fn ids(&self) -> &[u32] {
        &self.0
    }

    /// How many ids.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u32>> for IdList {
    fn from(mut ids: Vec<u32>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        IdList(ids)
    }
}

/// Parses a non-empty list such as "0", "0-3,8-11" with [`tlblab_types::parse_cpu_list`]
/// (the one parser every tlblab crate uses for this format).
pub fn parse_id_list(text: &str) -> Result<IdList, Error> {
    tlblab_types::parse_cpu_list(text)
        .map(IdList)
        .map_err(|e| Error::IdList { input: e.input, message: e.message })
}

impl FromStr for IdList {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        parse_id_list(s)
    }
}

impl fmt::Display for IdList {
    /// The kernel's compressed form: consecutive ids as "a-b", others comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if start != self.0[0] {
                f.write_str(",")?;
            }
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

impl Serialize for IdList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IdList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_id_list(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_cpu() {
        assert_eq!(parse_id_list("0\n").unwrap().ids(), &[0]);
    }

    #[test]
    fn two_ranges() {
        let l = parse_id_list("0-3,8-11").unwrap();
        assert_eq!(l.ids(), &[0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(l.to_string(), "0-3,8-11");
    }

    #[test]
    fn mixed_singles_and_ranges_compress_back() {
        let l = parse_id_list("0,2-3,5").unwrap();
        assert_eq!(l.ids(), &[0, 2, 3, 5]);
        assert_eq!(l.to_string(), "0,2-3,5");
        // Adjacent pieces merge in the canonical form.
        assert_eq!(parse_id_list("0,1,2").unwrap().to_string(), "0-2");
    }

    #[test]
    fn empty_is_an_error() {
        for bad in ["", "\n", "  "] {
            let e = parse_id_list(bad).unwrap_err();
            assert!(e.to_string().contains("empty list"), "{e}");
        }
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in ["3-1", "a", "0-", "0,,1", "0-7:2/4", "-1"] {
            assert!(parse_id_list(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn serializes_as_the_kernel_string() {
        let l = parse_id_list("0-1").unwrap();
        assert_eq!(serde_json::to_string(&l).unwrap(), "\"0-1\"");
        let back: IdList = serde_json::from_str("\"0-1\"").unwrap();
        assert_eq!(back, l);
        assert!(serde_json::from_str::<IdList>("\"\"").is_err());
    }
}
