//! Machine presets: the hardware figures of one CPU model (TLB geometry, paging-structure
//! caches, latencies, instruction costs), each with its source.
//!
//! Two layers, as in the files: [`raw`] is the TOML shape (unknown keys rejected), and
//! [`MachineSpec`] is the checked, ready-to-use form. Built-in presets are TOML files from the
//! repository's `presets/` folder, embedded in the binary.

pub mod broadcast;
mod builtin;
pub mod mitigations;
pub mod nested;
pub mod raw;
mod spec;
pub mod topology;

pub use builtin::{builtin, builtin_names, BUILTIN_PRESETS};
pub use nested::NestedSpec;
pub use raw::{PscLevel, PscScope, TlbScope};
pub use spec::{MachineError, MachineSpec, StructureSpec};
