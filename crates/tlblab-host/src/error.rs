//! Why a host preset could not be built.

use thiserror::Error;
use tlblab_sim::machine::MachineError;

/// A host preset that could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HostError {
    /// Neither CPUID nor `/proc/cpuinfo` names an x86 vendor.
    #[error("not an x86 machine, or its CPU cannot be identified (CPUID: {cpuid}; /proc/cpuinfo: {cpuinfo})")]
    NotX86 {
        /// Why CPUID gave no vendor.
        cpuid: String,
        /// Why `/proc/cpuinfo` gave none.
        cpuinfo: String,
    },
    /// An x86 vendor the simulator has no preset for.
    #[error("CPU vendor {vendor:?}: the simulator models Intel and AMD only")]
    UnsupportedVendor {
        /// The vendor signature (`CentaurHauls`).
        vendor: String,
    },
    /// A built-in preset could not be loaded (a build problem of tlblab itself).
    #[error("built-in preset {name}")]
    Builtin {
        /// Its name.
        name: String,
        /// The loader's error.
        source: MachineError,
    },
    /// The TLB list cannot satisfy the model.
    #[error("host preset TLBs: {0}")]
    Tlb(String),
    /// The machine has an instruction for whose cost no built-in preset has a figure.
    #[error("no built-in preset has a cost for {op}, which this machine has")]
    MissingCost {
        /// The cost field (`invlpgb`).
        op: String,
    },
    /// The preset could not be written as TOML.
    #[error("host preset: cannot write it as TOML: {0}")]
    Serialize(String),
    /// The preset was built but fails the simulator's validation: a bug in tlblab-host. The TOML
    /// text is kept to show it.
    // The cause is shown before the text (not as a source, which would print it again after).
    #[error("host preset fails the simulator's validation: {error}\n--- preset ---\n{toml}")]
    Invalid {
        /// The validation error.
        error: MachineError,
        /// The text that failed.
        toml: String,
    },
}
