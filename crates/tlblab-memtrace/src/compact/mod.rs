//! tlblab's compact binary trace format, version 1 (specified in `docs/trace-formats.md`).
//!
//! A 16-byte header, then fixed 16-byte little-endian records (two `u64` words), ending with an
//! END record that holds the record count and a checksum.

mod codec;
mod reader;
mod writer;

pub use reader::CompactReader;
pub use writer::CompactWriter;

/// The first 8 bytes of every compact trace.
pub const MAGIC: [u8; 8] = *b"tlblabMT";
/// The format version this crate reads and writes.
pub const VERSION: u16 = 1;
/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 16;
/// Size of one record in bytes.
pub const RECORD_SIZE: usize = 16;

/// The header of a version-1 trace.
pub(crate) fn header() -> [u8; HEADER_SIZE] {
    let mut header = [0; HEADER_SIZE];
    let (magic, rest) = header.split_at_mut(8);
    magic.copy_from_slice(&MAGIC);
    let (version, rest) = rest.split_at_mut(2);
    version.copy_from_slice(&VERSION.to_le_bytes());
    let (length, _reserved) = rest.split_at_mut(2);
    length.copy_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
    header
}

/// The checksum's initial value.
pub(crate) const CHECKSUM_INIT: u64 = 0xcbf2_9ce4_8422_2325;

/// Folds one record into the checksum.
#[inline(always)]
pub(crate) fn checksum_step(hash: u64, w0: u64, w1: u64) -> u64 {
    let hash = (hash ^ w0).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(27);
    (hash ^ w1).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(27)
}

#[cfg(test)]
mod tests;
