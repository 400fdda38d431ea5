//! Address-space layout randomisation, and why the scenarios do not need it off.
//!
//! will-it-scale users turn ASLR off by hand because where a benchmark's memory lands decides
//! which page tables it shares, and so the cost of its faults and flushes. tlblab's scenarios
//! never `exec`: their children are forked, and a fork inherits the layout its parent already
//! has, so `personality(ADDR_NO_RANDOMIZE)` would change nothing for them. Instead every
//! measured region is mapped with `MAP_FIXED_NOREPLACE` at a fixed address (see
//! `Prepared::address_base`), 1 GiB-aligned per task, so the page tables under the measured
//! memory are laid out the same in every run, whatever ASLR does to the heap, stack and
//! libraries.
//!
//! What ASLR still moves is the harness's own code and data. A harness that wants those fixed
//! as well can call [`disable_aslr_for_exec`] and re-execute itself, as `setarch -R` does.

use crate::error::{Context, LiveError};
use nix::sys::personality::{self, Persona};
use serde::{Deserialize, Serialize};

const RANDOMIZE: &str = "/proc/sys/kernel/randomize_va_space";

/// The state of ASLR for this process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AslrState {
    /// `/proc/sys/kernel/randomize_va_space`: 0 off, 1 stack/mmap/vDSO, 2 also the heap.
    pub randomize_va_space: u8,
    /// Whether this process runs with `ADDR_NO_RANDOMIZE` (as under `setarch -R`).
    pub no_randomize_personality: bool,
}

impl AslrState {
    /// Whether this process's layout is randomised.
    pub fn randomized(&self) -> bool {
        self.randomize_va_space != 0 && !self.no_randomize_personality
    }
}

/// Reads the system setting and this process's personality.
pub fn aslr_state() -> Result<AslrState, LiveError> {
    let text = std::fs::read_to_string(RANDOMIZE)
        .map_err(|source| LiveError::Io { path: RANDOMIZE, source })?;
    let randomize_va_space = text
        .trim()
        .parse()
        .map_err(|_| LiveError::Parse { path: RANDOMIZE, text: text.clone() })?;
    let persona = personality::get().call(|| "personality(0xffffffff)".into())?;
    Ok(AslrState {
        randomize_va_space,
        no_randomize_personality: persona.contains(Persona::ADDR_NO_RANDOMIZE),
    })
}

/// Sets `ADDR_NO_RANDOMIZE` in this process's personality. It takes effect at the next `execve`
/// of this process or of any child forked afterwards (the flag is inherited), not for the
/// running process.
pub fn disable_aslr_for_exec() -> Result<(), LiveError> {
    let persona = personality::get().call(|| "personality(0xffffffff)".into())?;
    personality::set(persona | Persona::ADDR_NO_RANDOMIZE)
        .call(|| "personality(ADDR_NO_RANDOMIZE)".into())?;
    Ok(())
}
