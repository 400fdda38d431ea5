//! The machine as a KVM guest (issue 17, mechanism 1): an IPI sent through the emulated x2APIC
//! exits on the sender, and without posted interrupts the running target exits to have it
//! injected; PV send-IPI makes one exit of a whole batch.

use super::*;
use tlblab_sim::machine::BUILTIN_PRESETS;

/// skylake-kvm's text with `edit` applied to its `[guest]` section.
fn guest_spec(edit: impl Fn(&str) -> String) -> MachineSpec {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1;
    let i = text.find("\n[guest]").unwrap();
    let edited = format!("{}{}", &text[..i], edit(&text[i..]));
    MachineSpec::from_toml(&edited, "test").unwrap()
}

/// The initiator's system cycles for `rounds` one-page DONTNEEDs that each shoot down a
/// sibling spinning on CPU 1, on `spec`.
fn shootdown_sys(spec: &MachineSpec, rounds: usize) -> u64 {
    let k = booted(spec, &Policy::named("linux-6.18").unwrap(), 2);
    let r = madvise_rounds(k, true, rounds);
    assert_eq!(r.irq_tlb[1], rounds as u64);
    r.tasks[0].sys_cycles
}

#[test]
fn a_guest_ipi_costs_an_exit_to_send_and_one_to_inject() {
    let rounds = 10;
    let emulated = shootdown_sys(&guest_spec(|g| g.to_string()), rounds);
    let posted = shootdown_sys(
        &guest_spec(|g| {
            g.replace("posted_interrupts = { value = false", "posted_interrupts = { value = true")
        }),
        rounds,
    );
    let bare = shootdown_sys(&guest_spec(|_| String::new()), rounds);
    let vm_exit = 1_250; // presets/skylake-kvm.toml
                         // The initiator waits for the target, so the target's injection exit is its time too.
    assert_eq!(emulated - posted, rounds as u64 * vm_exit, "{emulated} vs {posted}");
    assert_eq!(posted - bare, rounds as u64 * vm_exit, "{posted} vs {bare}");
}

/// PV send-IPI: one hypercall (one exit) for the whole mask, however many targets.
#[test]
fn pv_send_ipi_makes_one_exit_of_a_batch() {
    let spec = guest_spec(|g| g.to_string());
    let pv =
        guest_spec(|g| g.replace("pv_send_ipi = { value = false", "pv_send_ipi = { value = true"));
    let policy = Policy::named("linux-6.18").unwrap();
    let send = |spec: &MachineSpec| {
        let k = booted(spec, &policy, 4);
        k.guest_send_cycles(0) + k.guest_send_cycles(1) + k.guest_send_cycles(2)
    };
    assert_eq!(send(&spec), 3 * 1_250);
    assert_eq!(send(&pv), 1_250);
}
