//! The kernel's list format for CPU and NUMA-node sets (`0-3,8-11`), as printed in
//! `/sys/devices/system/cpu/online` and `/sys/devices/system/node/online`.
//!
//! One parser serves every crate that reads such a file (the environment capture, the tracefs
//! reader and the live scenarios), so they agree on what a valid list is.

use std::fmt;

/// Why a CPU list was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuListError {
    /// The text that was parsed.
    pub input: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad CPU list {:?}: {}", self.input, self.message)
    }
}

impl std::error::Error for CpuListError {}

/// Parses a non-empty list such as `0`, `0-3,8-11` into sorted, de-duplicated ids.
///
/// Surrounding whitespace (the trailing newline of a sysfs file) is ignored. The kernel's
/// input-only stride syntax (`0-7:2/4`) is refused: sysfs never prints it.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, CpuListError> {
    let err = |message: String| CpuListError { input: text.to_owned(), message };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(err("empty list".to_owned()));
    }
    let mut ids = Vec::new();
    for part in trimmed.split(',') {
        let number = |s: &str| {
            s.trim().parse::<u32>().map_err(|_| err(format!("{s:?} is not a non-negative integer")))
        };
        match part.split_once('-') {
            None => ids.push(number(part)?),
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(err(format!("range {part:?} runs backwards")));
                }
                ids.extend(lo..=hi);
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_sysfs_prints() {
        assert_eq!(parse_cpu_list("0\n").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_list("0-2,5,7-8").unwrap(), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(parse_cpu_list("2,0-1").unwrap(), vec![0, 1, 2], "sorted");
    }

    #[test]
    fn refuses_malformed_lists_and_says_why() {
        for bad in ["", "\n", "3-1", "a", "0-", "0,,1", "0-7:2/4", "-1"] {
            let e = parse_cpu_list(bad).unwrap_err();
            assert_eq!(e.input, bad);
            assert!(e.to_string().starts_with("bad CPU list"), "{e}");
        }
        assert!(parse_cpu_list("3-1").unwrap_err().message.contains("backwards"));
    }
}
