//! The x86 translation hardware of one CPU: TLBs, paging-structure caches, page walks and the
//! invalidating instructions.

mod cpu;
mod lanes;
mod nested;
mod set16;
mod set_assoc;
mod structure;

pub use cpu::{new_stats, Cpu, Cr4, Fault};
pub use structure::Replacement;

#[cfg(test)]
mod tests;
