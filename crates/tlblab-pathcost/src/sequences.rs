//! The instruction sequences of the kernel's speculation mitigations, run from user space, each
//! against the plain sequence it replaces (docs/calibration.md, "Mitigation sequences"). The
//! sequences are written here from their descriptions (Linux 6.18:
//! `arch/x86/lib/retpoline.S`: the `RETPOLINE` thunk, `srso_untrain_ret` / `srso_safe_ret` /
//! `srso_return_thunk`; `arch/x86/include/asm/nospec-branch.h`: `__FILL_RETURN_BUFFER` with
//! `RSB_CLEAR_LOOPS` = 32; `CLEAR_CPU_BUFFERS`: VERW of a data selector), not copied.
//!
//! | name | one operation | baseline |
//! |---|---|---|
//! | `seq_plain_call` | `call` a function that is only `ret` | — |
//! | `seq_indirect_call` | `call *%rax` to that function | — |
//! | `seq_retpoline` | `call` a retpoline thunk (`call 1f; 2: pause; lfence; jmp 2b; 1: mov %rax,(%rsp); ret`) to it | `seq_indirect_call` |
//! | `seq_safe_ret` | `call` a function whose `ret` is `jmp` to a return thunk (`call safe_ret; ud2`, where `safe_ret` is `lea 8(%rsp),%rsp; ret`) | `seq_plain_call` |
//! | `seq_untrain_ret` | `call` the untraining sequence (a 10-byte `movabs`, `lfence`, `jmp` to the return thunk) | `seq_plain_call` |
//! | `seq_rsb_fill` | `call` a function that fills the RSB (16 × two `call`s over an `int3`, `add $16,%rsp`, then `lfence`) and returns | `seq_plain_call` |
//! | `seq_verw` | `call` a function that runs `verw` of the user data selector | `seq_plain_call` |
//!
//! NOTE: VERW clears the CPU buffers only on a CPU with `MD_CLEAR`; elsewhere this is the bare
//! instruction's cost, which is what such a kernel does not run anyway.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::{asm, global_asm};

    global_asm!(
        ".text",
        ".p2align 6",
        "tlblab_seq_plain:",
        "ret",
        ".p2align 6",
        "tlblab_seq_retpoline_rax:",
        "call 71f",
        "72: pause",
        "lfence",
        "jmp 72b",
        "71: mov %rax, (%rsp)",
        "ret",
        ".p2align 6",
        "tlblab_seq_safe_ret:",
        "lea 8(%rsp), %rsp",
        "ret",
        "int3",
        ".p2align 6",
        "tlblab_seq_return_thunk:",
        "call tlblab_seq_safe_ret",
        "ud2",
        ".p2align 6",
        "tlblab_seq_thunked:",
        "jmp tlblab_seq_return_thunk",
        ".p2align 6",
        "tlblab_seq_untrain:",
        "movabs $0, %rax",
        "lfence",
        "jmp tlblab_seq_return_thunk",
        ".p2align 6",
        "tlblab_seq_rsb_fill:",
        "mov $16, %ecx",
        "73: call 74f",
        "int3",
        "74: call 75f",
        "int3",
        "75: add $16, %rsp",
        "dec %ecx",
        "jnz 73b",
        "lfence",
        "ret",
        ".p2align 6",
        "tlblab_seq_verw:",
        "sub $8, %rsp",
        "movw %ds, (%rsp)",
        "verw (%rsp)",
        "add $8, %rsp",
        "ret",
        options(att_syntax)
    );

    extern "C" {
        fn tlblab_seq_plain();
    }

    macro_rules! call_loop {
        ($ops:expr, $sym:ident) => {
            for _ in 0..$ops {
                // SAFETY: the callee is a leaf of this file that keeps the stack balanced and
                // clobbers at most rax and rcx (declared, with the C ABI's).
                unsafe {
                    asm!(concat!("call ", stringify!($sym)), out("rax") _, out("rcx") _,
                         clobber_abi("C"), options(att_syntax));
                }
            }
        };
    }

    /// Runs `ops` operations of the sequence `name`; false for an unknown name.
    pub(super) fn run(name: &str, ops: u64) -> bool {
        match name {
            super::PLAIN_CALL => call_loop!(ops, tlblab_seq_plain),
            super::INDIRECT_CALL => {
                for _ in 0..ops {
                    // SAFETY: as in `call_loop!`; the target is `tlblab_seq_plain`.
                    unsafe {
                        asm!("call *%rax", inout("rax") tlblab_seq_plain as *const () as usize => _,
                             out("rcx") _, clobber_abi("C"), options(att_syntax));
                    }
                }
            }
            super::RETPOLINE => {
                for _ in 0..ops {
                    // SAFETY: as in `call_loop!`; the thunk jumps to `%rax`, `tlblab_seq_plain`.
                    unsafe {
                        asm!("call tlblab_seq_retpoline_rax",
                             inout("rax") tlblab_seq_plain as *const () as usize => _, out("rcx") _,
                             clobber_abi("C"), options(att_syntax));
                    }
                }
            }
            super::SAFE_RET => call_loop!(ops, tlblab_seq_thunked),
            super::UNTRAIN_RET => call_loop!(ops, tlblab_seq_untrain),
            super::RSB_FILL => call_loop!(ops, tlblab_seq_rsb_fill),
            super::VERW => call_loop!(ops, tlblab_seq_verw),
            _ => return false,
        }
        true
    }
}

/// `call` of a `ret`.
pub const PLAIN_CALL: &str = "seq_plain_call";
/// `call *%rax` of a `ret`.
pub const INDIRECT_CALL: &str = "seq_indirect_call";
/// A call through a retpoline thunk.
pub const RETPOLINE: &str = "seq_retpoline";
/// A call whose return goes through the SRSO return thunk.
pub const SAFE_RET: &str = "seq_safe_ret";
/// A call of the SRSO untraining sequence.
pub const UNTRAIN_RET: &str = "seq_untrain_ret";
/// A call of a 32-entry RSB fill.
pub const RSB_FILL: &str = "seq_rsb_fill";
/// A call of a VERW.
pub const VERW: &str = "seq_verw";
/// Every sequence, in measuring order.
pub const ALL: [&str; 7] =
    [PLAIN_CALL, INDIRECT_CALL, RETPOLINE, SAFE_RET, UNTRAIN_RET, RSB_FILL, VERW];

/// The baseline a sequence's extra cost is taken against (`None` for the baselines).
pub fn baseline(name: &str) -> Option<&'static str> {
    match name {
        RETPOLINE => Some(INDIRECT_CALL),
        SAFE_RET | UNTRAIN_RET | RSB_FILL | VERW => Some(PLAIN_CALL),
        _ => None,
    }
}

/// Runs `ops` operations of sequence `name`; an error off x86-64 or for an unknown name.
pub fn run(name: &str, ops: u64) -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        if imp::run(name, ops) {
            Ok(())
        } else {
            Err(format!("{name} is not a mitigation sequence"))
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ops;
        Err(format!("{name}: the sequences are x86-64 code"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sequence_runs_and_returns_to_its_caller() {
        for name in ALL {
            run(name, 1000).unwrap();
        }
        assert!(run("nope", 1).is_err());
    }
}
