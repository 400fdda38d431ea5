//! Reading options and the names of formats and compressions.

use std::fmt;
use std::str::FromStr;
use tlblab_types::{CpuId, PageSize, Pcid};

/// How to read a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// The CPU of every access of a lackey or ChampSim trace (the compact format has its own).
    pub cpu: CpuId,
    /// The PCID of every access of a lackey or ChampSim trace.
    pub pcid: Pcid,
    /// The page size that maps every address of a lackey or ChampSim trace. Accesses are
    /// non-global.
    pub page_size: PageSize,
    /// Merge runs of identical accesses of a lackey or ChampSim trace into one event (see
    /// [`Coalesce`](crate::Coalesce)). Compact traces are returned as stored.
    pub coalesce: bool,
}

impl Default for ReadOptions {
    /// CPU 0, PCID 0, 4 KiB pages, coalescing on.
    fn default() -> ReadOptions {
        ReadOptions {
            cpu: CpuId(0),
            pcid: Pcid::default(),
            page_size: PageSize::Size4K,
            coalesce: true,
        }
    }
}

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Valgrind lackey's text output (`valgrind --tool=lackey --trace-mem=yes`).
    Lackey,
    /// ChampSim's 64-byte binary `input_instr` records.
    ChampSim,
    /// tlblab's compact binary format.
    Compact,
}

impl Format {
    /// All formats.
    pub const ALL: [Format; 3] = [Format::Lackey, Format::ChampSim, Format::Compact];

    /// `lackey`, `champsim` or `compact`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Lackey => "lackey",
            Format::ChampSim => "champsim",
            Format::Compact => "compact",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no [`Format`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown trace format \"{0}\" (expected lackey, champsim or compact)")]
pub struct ParseFormatError(pub String);

impl FromStr for Format {
    type Err = ParseFormatError;

    /// Parses `lackey`, `champsim` or `compact` (case-insensitive).
    fn from_str(text: &str) -> Result<Format, ParseFormatError> {
        Format::ALL
            .into_iter()
            .find(|format| format.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| ParseFormatError(text.to_owned()))
    }
}

/// The compression of a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (one or more members).
    Gzip,
    /// xz (one or more streams).
    Xz,
}

impl Compression {
    /// `none`, `gzip` or `xz`.
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for format in Format::ALL {
            assert_eq!(format.name().parse::<Format>(), Ok(format));
            assert_eq!(format.to_string(), format.name());
        }
        assert_eq!("ChampSim".parse::<Format>(), Ok(Format::ChampSim));
        assert!("pin".parse::<Format>().is_err_and(|error| error.to_string().contains("\"pin\"")));
    }
}
