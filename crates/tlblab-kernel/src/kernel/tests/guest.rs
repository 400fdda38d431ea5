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

/// On `spec`, a thread blocks reading an eventfd on CPU 1 (which goes idle) until its process
/// writes it from CPU 0; returns the woken thread's start after the write (its first op minus
/// the writer's) and the poll wakes.
fn wake_idle_cpu(spec: &MachineSpec, poll_wake: bool) -> (u64, u64) {
    let m =
        if poll_wake { Mechanisms::all() } else { Mechanisms::all().without(Mechanism::PollWake) };
    let config = KernelConfig::new(2, 7).with_mechanisms(m);
    let mut k =
        Kernel::new(spec, &Policy::named("linux-4.14").unwrap(), config, TraceLog::default())
            .unwrap();
    let fd = k.eventfd();
    let main = k.spawn_process(
        script(vec![Step::Compute(200_000), Step::Op, Step::Write(fd), Step::Compute(100_000)]),
        C0,
        true,
    );
    k.spawn_thread(main, script(vec![Step::Read(fd), Step::Op]), C1, true);
    k.run();
    let r = k.report();
    (r.tasks[1].first_op.0 - r.tasks[0].first_op.0, k.counters.poll_wakes)
}

/// idle=poll (skylake-kvm): the idle task polls with TIF_POLLING_NRFLAG set, so the waker's
/// resched_curr() sets TIF_NEED_RESCHED and sends no IPI (set_nr_and_not_polling()): no ICR
/// write to exit on, no interrupt to inject. Without the mechanism the wake-up is a reschedule
/// IPI, which costs at least those two exits more.
#[test]
fn a_wake_up_of_a_polling_idle_vcpu_sends_no_ipi() {
    let spec = guest_spec(|g| g.to_string());
    let (polled, wakes) = wake_idle_cpu(&spec, true);
    let (interrupted, none) = wake_idle_cpu(&spec, false);
    // The spawns' wake-ups of idle CPUs are poll wakes too.
    assert_eq!(none, 0);
    assert!(wakes >= 1, "{wakes}");
    let vm_exit = 1_250; // presets/skylake-kvm.toml
    assert!(interrupted >= polled + 2 * vm_exit, "{interrupted} vs {polled}");
}

/// A vCPU idle in HLT (a guest without idle=poll: skylake-kvm with a halting state) has
/// cleared TIF_POLLING_NRFLAG: its wake-up is a reschedule IPI whatever the mechanism.
#[test]
fn a_wake_up_of_a_halted_vcpu_is_an_ipi() {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1;
    let halting = "states = [{ name = \"HLT\", exit_latency_ns = 0, target_residency_ns = 0 }]";
    let spec = MachineSpec::from_toml(&text.replacen("states = []", halting, 1), "test").unwrap();
    let (with, wakes) = wake_idle_cpu(&spec, true);
    let (without, _) = wake_idle_cpu(&spec, false);
    assert_eq!(wakes, 0);
    assert_eq!(with, without);
}

/// skylake-kvm with one HLT state whose target residency (1 s) keeps menu polling, and with
/// `haltpoll` the haltpoll governor's parameters.
fn haltpoll_spec(haltpoll: &str) -> MachineSpec {
    haltpoll_spec_with(haltpoll, |t| t.to_string())
}

/// [`haltpoll_spec`] of skylake-kvm's text with `edit` applied.
fn haltpoll_spec_with(haltpoll: &str, edit: impl Fn(&str) -> String) -> MachineSpec {
    let text = edit(BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1);
    let halting = format!(
        "states = [{{ name = \"HLT\", exit_latency_ns = 2000, target_residency_ns = 1000000000 \
         }}]\n{haltpoll}"
    );
    MachineSpec::from_toml(&text.replacen("states = []", &halting, 1), "test").unwrap()
}

/// A guest with no cpuidle driver (`current_driver` = `none`, as this project's VM): an idle
/// vCPU halts at once through `default_idle_call()`, where menu, predicting a short idle period
/// from the same table, would have polled; its wake-up is a reschedule IPI with the halt's exit
/// latency. The report counts HLT entries, no POLL.
#[test]
fn with_no_cpuidle_driver_every_idle_vcpu_halts_at_once() {
    let (halted, wakes) = wake_idle_cpu(&haltpoll_spec("cpuidle = false"), true);
    assert_eq!(wakes, 0);
    let (menu, menu_wakes) = wake_idle_cpu(&haltpoll_spec(""), true);
    assert!(menu_wakes >= 1, "{menu_wakes}");
    // The waker's exit (1,250 ns at skylake-kvm's clock) and the HLT exit latency; no injection
    // exit (a_halted_vcpu_gets_its_interrupt_with_no_injection_exit).
    assert!(halted >= menu + 1_250 + 2_000, "{halted} vs {menu}");
    // Without the state table (mechanism idle-states off) the flag has no table to act on.
    let config =
        KernelConfig::new(2, 7).with_mechanisms(Mechanisms::all().without(Mechanism::IdleStates));
    let policy = Policy::named("linux-6.18").unwrap();
    let spec = haltpoll_spec("cpuidle = false");
    assert!(!Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap().no_cpuidle);
    let on = KernelConfig::new(2, 7);
    assert!(Kernel::new(&spec, &policy, on, TraceLog::default()).unwrap().no_cpuidle);
}

/// The haltpoll governor with `guest_halt_poll_ns = 0` (this project's VM boots so) never
/// polls: every idle vCPU halts, so its wake-up is a reschedule IPI with the halt's exit
/// latency, where menu, predicting a short idle period, would have polled.
#[test]
fn haltpoll_with_no_poll_window_halts_every_idle_vcpu() {
    let governor = "haltpoll = { guest_halt_poll_ns = 0, guest_halt_poll_grow = 2, \
                    guest_halt_poll_grow_start = 50000, guest_halt_poll_shrink = 2, \
                    guest_halt_poll_allow_shrink = true, source = \"test\" }";
    let spec = haltpoll_spec(governor);
    let (halted, wakes) = wake_idle_cpu(&spec, true);
    assert_eq!(wakes, 0);
    let (menu, menu_wakes) = wake_idle_cpu(&haltpoll_spec(""), true);
    assert!(menu_wakes >= 1, "{menu_wakes}");
    // The waker's exit (1,250 ns at skylake-kvm's clock) and the HLT exit latency; no injection
    // exit (a_halted_vcpu_gets_its_interrupt_with_no_injection_exit).
    assert!(halted >= menu + 1_250 + 2_000, "{halted} vs {menu}");
    // Switching the mechanism off gives menu back.
    let config = |m: Mechanisms| KernelConfig::new(2, 7).with_mechanisms(m);
    let policy = Policy::named("linux-6.18").unwrap();
    let off = Kernel::new(
        &spec,
        &policy,
        config(Mechanisms::all().without(Mechanism::Haltpoll)),
        TraceLog::default(),
    )
    .unwrap();
    assert!(off.haltpoll.is_none());
    let on = Kernel::new(&spec, &policy, config(Mechanisms::all()), TraceLog::default()).unwrap();
    assert!(on.haltpoll.is_some());
}

/// In a guest the waker's ICR write exits too: a wake-up that sends a reschedule IPI (to a
/// halted vCPU) costs the waker `wakeup`, `ipi_send` and an exit; one of a polling vCPU
/// (idle=poll) sends none and costs `wakeup` alone.
#[test]
fn the_waker_pays_the_exit_of_the_reschedule_ipi_it_sends() {
    let woken = |spec: &MachineSpec| {
        let mut k = booted(spec, &Policy::named("linux-6.18").unwrap(), 2);
        let main = k.spawn_process(script(vec![Step::Compute(1 << 40)]), C0, true);
        k.run_until(Cycles(10_000_000));
        let cycles = woken_from_c0(&mut k, main, C1);
        (cycles, k.costs.wakeup.cycles, k.costs.ipi_send.cycles + k.guest_send_cycles(0))
    };
    let (halted, wakeup, send) = woken(&haltpoll_spec("cpuidle = false"));
    assert!(send > 1_250, "ipi_send and the exit");
    assert_eq!(halted, wakeup + send);
    let (polled, wakeup, _) = woken(&guest_spec(|g| g.to_string()));
    assert_eq!(polled, wakeup);
}

/// A halted vCPU is out of guest mode: KVM wakes its thread and injects the interrupt at its
/// entry, so its wake-up has no injection exit, and posted interrupts change nothing for it;
/// a running vCPU (idle=poll, with poll-wake off so that the wake-up is an IPI) exits to have
/// it injected unless interrupts are posted.
#[test]
fn a_halted_vcpu_gets_its_interrupt_with_no_injection_exit() {
    let posted = |text: &str| {
        text.replace("posted_interrupts = { value = false", "posted_interrupts = { value = true")
    };
    let halting = haltpoll_spec("cpuidle = false");
    let halting_posted = haltpoll_spec_with("cpuidle = false", posted);
    assert_eq!(wake_idle_cpu(&halting, true).0, wake_idle_cpu(&halting_posted, true).0);
    let (exits, _) = wake_idle_cpu(&guest_spec(|g| g.to_string()), false);
    let (no_exit, _) = wake_idle_cpu(&guest_spec(posted), false);
    assert_eq!(exits, no_exit + 1_250, "the injection exit");
}
