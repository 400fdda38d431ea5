mod common;
use common::*;
use tlblab_kernel::Policy;
use tlblab_replay::*;

fn skylake() -> tlblab_sim::machine::MachineSpec {
    tlblab_sim::machine::builtin("skylake").unwrap()
}

#[test]
fn debug_print() {
    let rec = two_threads(100, 1, true, true);
    let pols = [Policy::named("linux-6.18").unwrap()];
    let r = replay(&header(2), rec, &skylake(), &pols, &ReplayOptions::default()).unwrap();
    println!("{}", render_replay(&r));
}
