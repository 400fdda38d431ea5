//! The x86 translation hardware of one CPU: TLBs, paging-structure caches, page walks and the
//! invalidating instructions.

mod cpu;
mod set_assoc;

pub use cpu::{new_stats, Cpu, Cr4, Fault};
pub use set_assoc::Replacement;

#[cfg(test)]
mod tests;
