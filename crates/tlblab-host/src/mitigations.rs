//! The host preset's `[mitigations]`: which mitigations this kernel runs
//! (`/sys/devices/system/cpu/vulnerabilities`), what one event of each costs (the user-space
//! sequences of `tlblab_pathcost::sequences`), and how many events each measured `[kernel]`
//! figure holds (the estimates of [`EVENTS`]). See docs/kernel-model.md, "Mitigations", and
//! docs/calibration.md, "Mitigation sequences".

use crate::facts::HostFacts;
use crate::kernel_costs::{figure_of, Derivation, Derived};
use crate::provenance::{Origin, Provenance};
use tlblab_pathcost::stats::round1;
use tlblab_pathcost::{sequences, Cached};
use tlblab_sim::machine::mitigations::{IbpbMode, PathEvents, RawMitigations};
use tlblab_sim::machine::raw::{KernelFigure, RawKernel, Scales};

/// Where [`EVENTS`] comes from.
pub const EVENTS_SOURCE: &str = "estimated (unverified) from the call graph of each path in Linux \
    6.18 (no PMU here to count retired returns): a return per non-inlined function, an indirect \
    branch per function-pointer call (sched_class methods, f_op, wait-queue and csd callbacks; \
    x64_sys_call() is a switch since 6.9); docs/kernel-model.md, \"Mitigations\"";

const fn ev(rets: u32, indirect: u32, entries: u32, switches: u32) -> PathEvents {
    PathEvents { rets, indirect, entries, switches }
}

/// Events per occurrence of each `[kernel]` figure the host measures (an estimate: see
/// [`EVENTS_SOURCE`]). `entries` are the paths measured from user mode and back.
pub const EVENTS: [(&str, PathEvents); 16] = [
    // entry_SYSCALL_64 → do_syscall_64 → x64_sys_call → __x64_sys_getppid →
    // __task_pid_nr_ns; the exit work is inline on the fast path.
    ("syscall", ev(4, 0, 1, 0)),
    // error_entry, exc_page_fault → do_user_addr_fault → lock_vma_under_rcu (maple walk) →
    // handle_mm_fault → do_anonymous_page (zero page: no allocation) and back.
    ("page_fault_zero", ev(20, 0, 1, 0)),
    // The same with the folio allocation, zeroing, memcg charge, rmap and LRU add.
    ("page_fault_anon", ev(35, 0, 1, 0)),
    // The host copies page_fault_anon's measurement.
    ("page_fault_cow", ev(35, 0, 1, 0)),
    // madvise_behavior(), the VMA walk and zap_page_range_single() setup, mmap_lock.
    ("madvise", ev(15, 0, 0, 0)),
    // zap_present_ptes() per page: folio_remove_rmap_ptes, the batch add.
    ("zap_pte", ev(3, 0, 0, 0)),
    // lru_add_drain(), tlb_finish_mmu(): free_pages_and_swap_cache, memcg uncharge.
    ("zap_batch", ev(20, 0, 0, 0)),
    // do_mprotect_pkey(): the VMA lookup, mprotect_fixup() → vma_modify_flags(),
    // change_protection() down to the PTE level, mmap_lock.
    ("mprotect", ev(20, 0, 0, 0)),
    // change_pte_range() per PTE: ptep_modify_prot_start/commit, can_change_pte_writable().
    ("change_pte", ev(3, 0, 0, 0)),
    // do_mmap(): get_unmapped_area, mmap_region, vma_merge_new_range, VMA allocation.
    ("mmap", ev(25, 1, 0, 0)),
    // do_vmi_munmap(): the maple-tree store, unmap_region, VMA free.
    ("munmap", ev(25, 0, 0, 0)),
    // __split_vma(): vm_area_dup, anon_vma_clone, the tree store.
    ("split_vma", ev(15, 0, 0, 0)),
    // __schedule(): dequeue (sched_class), put_prev/set_next (sched_class), __switch_to,
    // finish_task_switch; the eventfd read that blocks (f_op->read_iter).
    ("context_switch", ev(25, 4, 0, 1)),
    // The eventfd write (f_op->write_iter), __wake_up_common (the entry's func),
    // try_to_wake_up → enqueue_task and wakeup_preempt (sched_class).
    ("wakeup", ev(20, 4, 0, 0)),
    // sched_setaffinity() → __set_cpus_allowed_ptr → affine_move_task, the stopper.
    ("migrate", ev(40, 4, 0, 0)),
    // An interrupt from user mode: error_entry-style entry, __sysvec_call_function →
    // the csd queue → csd->func (indirect), irqentry_exit.
    ("ipi_handler", ev(10, 1, 1, 0)),
];

/// What the kernel runs, read from the vulnerabilities files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Running {
    /// `spectre_v2: Mitigation: Retpolines`.
    pub retpoline: bool,
    /// `spec_rstack_overflow: … Safe RET …` (return thunk and `srso_untrain_ret`).
    pub safe_ret: bool,
    /// `spectre_v2: … RSB filling`.
    pub rsb_fill: bool,
    /// `Clear CPU buffers` in `mds`, `tsx_async_abort`, `mmio_stale_data` or
    /// `reg_file_data_sampling`.
    pub verw: bool,
    /// `spectre_v2: … IBPB: conditional` / `IBPB: always-on`.
    pub ibpb: IbpbMode,
}

/// Reads [`Running`] from the vulnerabilities files (name → state line).
pub fn running(v: &std::collections::BTreeMap<String, String>) -> Running {
    let get = |k: &str| v.get(k).map_or("", String::as_str);
    let v2 = get("spectre_v2");
    Running {
        retpoline: v2.starts_with("Mitigation: Retpolines"),
        safe_ret: get("spec_rstack_overflow").contains("Safe RET"),
        rsb_fill: v2.contains("RSB filling"),
        verw: ["mds", "tsx_async_abort", "mmio_stale_data", "reg_file_data_sampling"]
            .iter()
            .any(|k| get(k).contains("Clear CPU buffers")),
        ibpb: if v2.contains("IBPB: always-on") {
            IbpbMode::Always
        } else if v2.contains("IBPB: conditional") {
            IbpbMode::Conditional
        } else {
            IbpbMode::Off
        },
    }
}

/// The extra cost of sequence `name` over its baseline, as a figure at `mhz`.
fn sequence_cost(
    cached: &Cached,
    name: &str,
    mhz: u64,
    cache: &str,
) -> Result<KernelFigure, String> {
    let base = sequences::baseline(name).expect("a sequence with a baseline");
    let m = cached.costs.get(name).map_err(|e| format!("{name} not measured: {e}"))?;
    let b = cached.costs.get(base).map_err(|e| format!("{base} not measured: {e}"))?;
    let ns = m.median_ns - b.median_ns;
    if !(ns.is_finite() && ns > 0.0) {
        return Err(format!("{name} − {base} = {ns:.1} ns is not positive (noise)"));
    }
    let d = Derived {
        ns: round1(ns),
        scales: Scales::Cycles,
        how: format!("{name} − {base}: {} − {}", m.summary(), b.summary()),
        assumed_split: false,
    };
    Ok(figure_of(&d, mhz, cache))
}

/// The `[mitigations]` section of the host preset, or `None` when the vulnerabilities files
/// or the path measurements are missing (the figures are then taken as they are).
pub(crate) fn section(
    facts: &HostFacts,
    kernel: &RawKernel,
    derivation: Option<&Derivation>,
    prov: &mut Vec<Provenance>,
) -> Option<RawMitigations> {
    let what = "mitigations";
    let Some(vulns) = facts.vulnerabilities.available() else {
        let why = facts.vulnerabilities.reason().unwrap_or("not read");
        prov.push(Provenance::new(
            what,
            "none",
            Origin::Informative,
            format!(
                "/sys/devices/system/cpu/vulnerabilities not read ({why}): no [mitigations], the \
             measured figures keep whatever mitigations they hold"
            ),
        ));
        return None;
    };
    let (Some(cached), Some(derivation)) = (facts.path_costs.available(), derivation) else {
        prov.push(Provenance::new(
            what,
            "none",
            Origin::Informative,
            "no measured kernel paths: no [mitigations] (the copied figures are taken as they are)",
        ));
        return None;
    };
    let run = running(vulns);
    let mhz = kernel.clock.mhz;
    let cache = crate::kernel_costs::cache_text(cached);
    let mut m = RawMitigations {
        source: format!(
            "/sys/devices/system/cpu/vulnerabilities: spectre_v2 {:?}, spec_rstack_overflow {:?}",
            vulns.get("spectre_v2").map_or("", String::as_str),
            vulns.get("spec_rstack_overflow").map_or("", String::as_str)
        ),
        retpoline: None,
        safe_ret: None,
        untrain_ret: None,
        rsb_fill: None,
        verw: None,
        ibpb: None,
        ibpb_mode: IbpbMode::Off,
        ibpb_opted_in: false,
        paths: Default::default(),
        paths_source: EVENTS_SOURCE.to_owned(),
    };
    let slots: [(&str, bool, &str, &mut Option<KernelFigure>); 5] = [
        ("retpoline", run.retpoline, sequences::RETPOLINE, &mut m.retpoline),
        ("safe_ret", run.safe_ret, sequences::SAFE_RET, &mut m.safe_ret),
        ("untrain_ret", run.safe_ret, sequences::UNTRAIN_RET, &mut m.untrain_ret),
        ("rsb_fill", run.rsb_fill, sequences::RSB_FILL, &mut m.rsb_fill),
        ("verw", run.verw, sequences::VERW, &mut m.verw),
    ];
    for (name, on, seq, slot) in slots {
        let figure = format!("mitigations.{name}");
        if !on {
            prov.push(Provenance::new(
                figure,
                "not run",
                Origin::Read,
                "the vulnerabilities files",
            ));
            continue;
        }
        match sequence_cost(cached, seq, mhz, &cache) {
            Ok(f) => {
                prov.push(Provenance::new(
                    figure,
                    f.written.describe(),
                    Origin::Measured,
                    &f.source,
                ));
                *slot = Some(f);
            }
            Err(why) => prov.push(Provenance::new(
                figure,
                "run, cost unknown",
                Origin::Informative,
                format!("its cost stays inside the measured figures: {why}"),
            )),
        }
    }
    if run.ibpb != IbpbMode::Off {
        prov.push(Provenance::new(
            "mitigations.ibpb",
            "run, not modelled",
            Origin::Informative,
            "IBPB is a WRMSR that user space cannot run, and no cited figure is at hand: not \
             charged (ibpb_mode stays off)",
        ));
    }
    let measured = |name: &str| derivation.kernel.iter().any(|(n, d)| *n == name && d.is_ok());
    for (path, events) in EVENTS {
        let Some((_, figure)) = kernel.figures().into_iter().find(|(n, _)| *n == path) else {
            continue;
        };
        if !measured(path) {
            continue;
        }
        let cycles = figure.written.resolve(mhz).unwrap_or(figure.cycles);
        let mut resolved = m.clone();
        for (_, f) in resolved.figures_mut() {
            f.cycles = f.written.resolve(mhz).unwrap_or(f.cycles);
        }
        let held = resolved.path_cycles(&events);
        if held > cycles {
            prov.push(Provenance::new(
                format!("mitigations.paths.{path}"),
                "left out",
                Origin::Informative,
                format!(
                    "its estimated mitigation events ({held} cycles) exceed the measured figure \
                     ({cycles} cycles): the estimate is wrong for this machine"
                ),
            ));
            continue;
        }
        m.paths.insert(path.to_owned(), events);
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn this_project_vm_runs_retpolines_safe_ret_and_the_rsb_fill() {
        let v = files(&[
            ("spectre_v2", "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected"),
            ("spec_rstack_overflow", "Vulnerable: Safe RET, no microcode"),
            ("mds", "Not affected"),
        ]);
        let r = running(&v);
        assert_eq!(
            r,
            Running {
                retpoline: true,
                safe_ret: true,
                rsb_fill: true,
                verw: false,
                ibpb: IbpbMode::Off
            }
        );
    }

    #[test]
    fn an_intel_kernel_with_ibrs_ibpb_and_buffer_clearing() {
        let v = files(&[
            ("spectre_v2", "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S"),
            ("mds", "Mitigation: Clear CPU buffers; SMT vulnerable"),
            ("spec_rstack_overflow", "Not affected"),
        ]);
        let r = running(&v);
        assert!(!r.retpoline && !r.safe_ret && r.rsb_fill && r.verw);
        assert_eq!(r.ibpb, IbpbMode::Conditional);
        let v = files(&[("spectre_v2", "Mitigation: Retpolines; IBPB: always-on; STIBP: forced")]);
        assert_eq!(running(&v).ibpb, IbpbMode::Always);
    }

    #[test]
    fn every_estimated_path_is_a_kernel_figure() {
        let k = tlblab_sim::machine::builtin("zen4").unwrap();
        let names: Vec<&str> =
            k.kernel_costs().unwrap().figures().iter().map(|(n, _)| *n).collect();
        for (path, _) in EVENTS {
            assert!(names.contains(&path), "{path}");
        }
    }
}
