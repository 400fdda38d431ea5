//! The local flush on this machine, from measured kernel paths (tlblab-pathcost): what a full
//! flush adds to a call, what one more page of a ranged flush costs, what a one-page flush
//! leaves of other pages' translations, and what the kernel pays after it.
//!
//! | figure | rule |
//! |---|---|
//! | `kernel.flush_tlb_mm_range`, `kernel.flush_tlb_func`, `cost.mov_cr3` | `(mprotect_64 − 64 × change_pte) − mprotect_empty`, `change_pte` = `(mprotect_256 − mprotect_64) / 192`: what a full local flush adds to an mprotect that flushes nothing (the PTE table's lock, the mmu_gather, `flush_tlb_mm_range()`, `flush_tlb_func()`, the CR3 write, the loop's own few refills after it), split in the nearest preset's proportion (unverified) |
//! | `cost.invlpg` | `(dontneed_16 − dontneed_1) / 15 − zap_pte`, `zap_pte` = `(dontneed_256 − dontneed_64) / 192`: both small zaps flush page by page (below the ceiling of 33), so their difference is 15 zaps and 15 `flush_tlb_one_user()`s, each an INVLPG and its loop step |
//! | `features.invlpg_tlb_scope` | `all` when a one-page flush costs 64 other pages' reads at least half of what a full flush costs them, `(reread_after_invlpg − reread_after_none) / (reread_after_flush − reread_after_none)` ≥ ½; else `address` |
//! | `kernel.invlpg_refill` (with `all` only) | `mprotect_2_near − mprotect_2_far − 2 × INVLPG + mov_cr3`: the same two PTE changes flushed by two INVLPGs or by a CR3 write; what is left beyond the instructions is the kernel's refill of its own (global) translations, which the INVLPGs dropped and the CR3 write keeps; INVLPG and `mov_cr3` as derived above, at the host clock |
//!
//! A figure whose inputs are missing or lost in noise keeps the preset's, with the reason.

use crate::kernel_costs::{input, per_page_ns, positive, Derivation, Derived};
use crate::provenance::{Origin, Provenance};
use tlblab_pathcost::measure::{ZAP_RANGE, ZAP_SMALL};
use tlblab_pathcost::stats::round1;
use tlblab_pathcost::{names, Cached, PathCosts};
use tlblab_sim::machine::raw::{
    CyclesFigure, KernelFigure, RawCosts, RawFeatures, RawKernel, Scales,
};
use tlblab_sim::machine::TlbScope;

/// At and above this share of a full flush's cost to other pages' reads, a one-page flush is
/// taken to drop every translation: the reads walk, as after a full flush, rather than hit.
pub const ALL_REACH: f64 = 0.5;

/// Below this difference per page between reads after a full flush and after none, the
/// `reread_after_*` loops cannot tell a walk from a hit (the TLBs' reach is not seen).
pub const MIN_WALK_NS: f64 = 0.5;

/// `ns` by `rule`, what it means and its inputs; an error when noise made it not positive.
fn derived_ns(
    rule: &str,
    ns: f64,
    meaning: &str,
    inputs: &[String],
) -> Result<(f64, String), String> {
    let ns = positive(rule, ns)?;
    Ok((ns, format!("{rule} = {ns:.1} ns: {meaning}; {}", inputs.join("; "))))
}

/// What a full local flush adds to an mprotect that flushes nothing, in ns, and how it was
/// obtained.
pub fn full_flush_ns(costs: &PathCosts) -> Result<(f64, String), String> {
    let (small, small_how) = input(costs, names::MPROTECT_SMALL)?;
    let (change_pte, change_how) =
        per_page_ns(costs, names::MPROTECT_SMALL, names::MPROTECT_LARGE)?;
    let (empty, empty_how) = input(costs, names::MPROTECT_EMPTY)?;
    let ns = small - ZAP_SMALL as f64 * change_pte - empty;
    let rule = format!(
        "({} − {ZAP_SMALL} × change_pte) − {}",
        names::MPROTECT_SMALL,
        names::MPROTECT_EMPTY
    );
    let meaning = "what a full local flush adds to an mprotect that flushes nothing";
    let change = format!("change_pte {change_pte:.1} ns = {change_how}");
    derived_ns(&rule, ns, meaning, &[small_how, change, empty_how])
}

/// Replaces the copied pieces of a local full flush, `flush_tlb_mm_range` and `flush_tlb_func`
/// of `kernel` and `mov_cr3` of `cost`, with the measured whole split in their proportion at
/// `kernel`'s clock; without it the copies stay, and say why.
pub(crate) fn apply_full_flush(
    cached: &Cached,
    kernel: &mut RawKernel,
    cost: &mut RawCosts,
    prov: &mut Vec<Provenance>,
) {
    let mhz = kernel.clock.mhz.max(1);
    let at_host = |f: &KernelFigure| f.written.resolve(mhz).unwrap_or(f.cycles);
    let weights = [
        ("flush_tlb_mm_range", at_host(&kernel.flush_tlb_mm_range)),
        ("flush_tlb_func", at_host(&kernel.flush_tlb_func)),
        ("mov_cr3", cost.mov_cr3.cycles),
    ];
    let whole = full_flush_ns(&cached.costs).map(|(ns, how)| Derived {
        ns,
        scales: Scales::Cycles,
        how,
        assumed_split: true,
    });
    let mut parts = Vec::new();
    crate::kernel_costs::split(&mut parts, &whole, &weights);
    let cr3 = parts.pop().expect("the CR3 write is the last part").1;
    let kernel_parts = Derivation { kernel: parts, ..Derivation::default() };
    crate::kernel_costs::apply(kernel, &kernel_parts, cached, prov);
    let cache = crate::kernel_costs::cache_text(cached);
    let cr3 = cr3.map(|d| (d.ns, d.how));
    set_cycles("cost.mov_cr3", &mut cost.mov_cr3, cr3, (mhz, &cache), true, prov);
}

/// Sets `slot` (provenance `figure`) to `measured` (ns, how) in cycles at `mhz`, marked
/// `unverified` or not; a figure not measured keeps its copy and says why.
fn set_cycles(
    figure: &str,
    slot: &mut CyclesFigure,
    measured: Result<(f64, String), String>,
    (mhz, cache): (u64, &str),
    unverified: bool,
    prov: &mut Vec<Provenance>,
) {
    let entry = prov.iter().position(|p| p.figure == figure);
    let new = match measured {
        Ok((ns, how)) => {
            let cycles = (ns * mhz as f64 / 1000.0).round().max(1.0) as u64;
            let source = format!("measured on this machine: {how}; at {mhz} MHz; {cache}");
            *slot = CyclesFigure { cycles, source: source.clone(), unverified };
            Provenance::new(figure, format!("{cycles} cycles"), Origin::Measured, source)
        }
        Err(why) => {
            slot.source = format!("{}; not measured here: {why}", slot.source);
            let value = format!("{} cycles", slot.cycles);
            Provenance::new(figure, value, Origin::Fallback, &slot.source)
        }
    };
    match entry {
        Some(i) => prov[i] = new,
        None => prov.push(new),
    }
}

/// One more page of a ranged flush, in ns, and how it was obtained.
pub fn cost_ns(costs: &PathCosts) -> Result<(f64, String), String> {
    let (one, one_how) = input(costs, names::DONTNEED_ONE)?;
    let (range, range_how) = input(costs, names::DONTNEED_RANGE)?;
    let (zap_pte, zap_how) = per_page_ns(costs, names::DONTNEED_SMALL, names::DONTNEED_LARGE)?;
    let more = (ZAP_RANGE - 1) as f64;
    let ns = (range - one) / more - zap_pte;
    let rule = format!("({} − {}) / {more} − zap_pte", names::DONTNEED_RANGE, names::DONTNEED_ONE);
    let meaning =
        "one more page of a ranged flush (an INVLPG and its step of flush_tlb_func()'s loop)";
    let zap = format!("zap_pte {zap_pte:.1} ns = {zap_how}");
    derived_ns(&rule, ns, meaning, &[range_how, one_how, zap])
}

/// Whether a one-page flush keeps other pages' translations, and the evidence.
pub fn scope(costs: &PathCosts) -> Result<(TlbScope, String), String> {
    let (none, none_how) = input(costs, names::REREAD_AFTER_NONE)?;
    let (invlpg, invlpg_how) = input(costs, names::REREAD_AFTER_INVLPG)?;
    let (full, full_how) = input(costs, names::REREAD_AFTER_FLUSH)?;
    let walk = full - none;
    if !(walk.is_finite() && walk >= MIN_WALK_NS) {
        return Err(format!(
            "reads after a full flush cost {walk:.2} ns a page more than after none, below \
             {MIN_WALK_NS} ns: the loops cannot tell a walk from a hit"
        ));
    }
    let reach = (invlpg - none) / walk;
    let scope = if reach >= ALL_REACH { TlbScope::All } else { TlbScope::Address };
    let verdict = match scope {
        TlbScope::All => {
            "a one-page flush (INVLPG) dropped the other pages' translations as a \
                          full flush does"
        }
        TlbScope::Address => "a one-page flush (INVLPG) kept the other pages' translations",
    };
    Ok((
        scope,
        format!(
            "measured on this machine: {verdict}: reads of 64 other present pages cost \
             {:.2} ns a page more after it than after no flush, {reach:.2} of the {walk:.2} ns \
             more a full flush costs them (all at {ALL_REACH} or more); {invlpg_how}; \
             {full_how}; {none_how}",
            invlpg - none
        ),
    ))
}

/// Where INVLPG drops every translation (`scope`), the kernel's refill of its own after a
/// ranged flush, from the same two PTE changes flushed by two INVLPGs (`mprotect_2_near`) and
/// fully (`mprotect_2_far`), less the instructions the model charges each: two INVLPGs of
/// `invlpg_ns`, one CR3 write of `mov_cr3_ns`. `None` where INVLPG keeps them.
pub fn refill(
    costs: &PathCosts,
    scope: TlbScope,
    invlpg_ns: f64,
    mov_cr3_ns: f64,
) -> Option<Result<Derived, String>> {
    if scope != TlbScope::All {
        return None;
    }
    Some((|| {
        let (near, near_how) = input(costs, names::MPROTECT_PAIR_NEAR)?;
        let (far, far_how) = input(costs, names::MPROTECT_PAIR_FAR)?;
        let rule = format!(
            "{} − {} − 2 × INVLPG + mov_cr3",
            names::MPROTECT_PAIR_NEAR,
            names::MPROTECT_PAIR_FAR
        );
        let meaning = "the same two PTE changes flushed by two INVLPGs and by a CR3 write, less \
                       the instructions: what the kernel's next path pays to refill its own \
                       translations, which INVLPG dropped here";
        let instructions = format!("INVLPG {invlpg_ns:.1} ns; mov_cr3 {mov_cr3_ns:.1} ns");
        let ns = near - far - 2.0 * invlpg_ns + mov_cr3_ns;
        let (ns, how) = derived_ns(&rule, ns, meaning, &[near_how, far_how, instructions])?;
        Ok(Derived { ns: round1(ns), scales: Scales::Time, how, assumed_split: false })
    })())
}

/// Replaces `invlpg` (the preset's copy) with the cost measured here at `mhz`, and sets
/// `features`' INVLPG scope from the measured reach; each provenance entry says how, or why
/// the copy stays.
pub(crate) fn apply(
    costs: &PathCosts,
    cache: &str,
    mhz: u64,
    invlpg: &mut CyclesFigure,
    features: &mut RawFeatures,
    prov: &mut Vec<Provenance>,
) {
    set_cycles("cost.invlpg", invlpg, cost_ns(costs), (mhz, cache), false, prov);
    let (scope, source, origin) = match scope(costs) {
        Ok((scope, how)) => (scope, format!("{how}; {cache}"), Origin::Measured),
        Err(why) => (
            TlbScope::Address,
            format!("the SDM's rule (Intel SDM vol. 3 §4.10.4.1), not measured here: {why}"),
            Origin::Fallback,
        ),
    };
    let value = match scope {
        TlbScope::All => "all",
        TlbScope::Address => "address",
    };
    prov.push(Provenance::new("features.invlpg_tlb_scope", value, origin, &source));
    features.invlpg_tlb_scope = scope;
    features.invlpg_tlb_scope_source = match scope {
        TlbScope::All => source,
        TlbScope::Address => String::new(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use tlblab_pathcost::{CacheKey, Measurement, Outcome};

    fn costs(pairs: &[(&str, f64)]) -> PathCosts {
        let m = |ns: f64| Outcome::Measured(Measurement::of(&[ns], 1, 1).expect("a run"));
        let results: BTreeMap<String, Outcome> =
            pairs.iter().map(|(n, ns)| (n.to_string(), m(*ns))).collect();
        PathCosts {
            key: CacheKey::from_parts("", "test"),
            cpus: vec![0, 1],
            seconds: 1.0,
            results,
            steal: Err("not sampled".into()),
        }
    }

    /// `costs` as read from a cache file.
    fn cached(costs: PathCosts) -> Cached {
        Cached { costs, file: None, from_cache: true, notes: vec![] }
    }

    /// This project's guest's DONTNEED loops (2026-12-01).
    const GUEST_ZAPS: [(&str, f64); 4] = [
        (names::DONTNEED_ONE, 745.8),
        (names::DONTNEED_RANGE, 3621.5),
        (names::DONTNEED_SMALL, 4795.2),
        (names::DONTNEED_LARGE, 16780.1),
    ];

    /// The worked example of this project's guest (2026-12-01): 16 pages of DONTNEED cost
    /// 3,621.5 ns, one page 745.8, and 64 and 256 pages 4,795.2 and 16,780.1: a zap is
    /// 62.4 ns, and each of the 15 more pages costs 191.7 ns, so an INVLPG and its loop step
    /// are 129.3 ns.
    #[test]
    fn one_more_page_of_a_ranged_flush_less_its_zap_is_the_invlpg() {
        let c = costs(&GUEST_ZAPS);
        let (ns, how) = cost_ns(&c).expect("derived");
        assert!((ns - 129.3).abs() < 0.1, "{ns}");
        assert!(how.contains("dontneed_16") && how.contains("zap_pte"), "{how}");
        // 16 pages no dearer per page than the zaps: noise, not an INVLPG.
        let noise = costs(&[
            (names::DONTNEED_ONE, 745.8),
            (names::DONTNEED_RANGE, 745.8 + 15.0 * 60.0),
            (names::DONTNEED_SMALL, 4795.2),
            (names::DONTNEED_LARGE, 16780.1),
        ]);
        assert!(cost_ns(&noise).unwrap_err().contains("not positive"));
        assert!(cost_ns(&costs(&[])).unwrap_err().contains("dontneed_1 not measured"));
    }

    /// Reads after one INVLPG as dear as after a full flush (this project's guest: 3.73, 3.84
    /// and 1.11 ns after none) mean INVLPG drops everything; as cheap as after none (the SDM's
    /// rule) it keeps the rest; with no difference between a full flush and none the loops
    /// cannot tell.
    #[test]
    fn the_reach_of_a_one_page_flush_decides_the_scope() {
        let with = |invlpg: f64, full: f64| {
            costs(&[
                (names::REREAD_AFTER_NONE, 1.11),
                (names::REREAD_AFTER_INVLPG, invlpg),
                (names::REREAD_AFTER_FLUSH, full),
            ])
        };
        let (all, how) = scope(&with(3.73, 3.84)).expect("decided");
        assert_eq!(all, TlbScope::All);
        assert!(how.contains("0.96 of the 2.73 ns"), "{how}");
        assert_eq!(scope(&with(1.2, 3.84)).expect("decided").0, TlbScope::Address);
        assert!(scope(&with(1.2, 1.3)).unwrap_err().contains("cannot tell"));
    }

    /// This project's guest (2026-12-01): two INVLPGs after two PTE changes cost 1,215 ns a
    /// call, a full flush after the same changes 580; with INVLPG at 129.3 ns and a CR3 write
    /// at 115.4, the kernel's refill is 491.8 ns. Where INVLPG keeps the kernel's translations
    /// there is none to derive.
    #[test]
    fn the_refill_is_what_two_invlpgs_cost_beyond_a_full_flush_and_the_instructions() {
        let c = costs(&[(names::MPROTECT_PAIR_NEAR, 1215.0), (names::MPROTECT_PAIR_FAR, 580.0)]);
        let d = refill(&c, TlbScope::All, 129.3, 115.4).expect("all").expect("derived");
        assert!((d.ns - 491.8).abs() < 0.05, "{}", d.ns);
        assert_eq!(d.scales, Scales::Time);
        assert!(d.how.contains("mprotect_2_near") && d.how.contains("mov_cr3"), "{}", d.how);
        assert!(refill(&c, TlbScope::Address, 129.3, 115.4).is_none());
        let noise = costs(&[(names::MPROTECT_PAIR_NEAR, 650.0), (names::MPROTECT_PAIR_FAR, 580.0)]);
        let e = refill(&noise, TlbScope::All, 129.3, 115.4).expect("all").unwrap_err();
        assert!(e.contains("not positive"), "{e}");
    }

    /// What a full flush adds to an mprotect, from this machine's loops (2026-12-01): 64 pages
    /// 1,586.6 ns, 256 pages 4,970.2 (a PTE's change 17.6 ns), none present 262.7: 196.0 ns,
    /// split as icelake-server's 100 : 490 : 300 cycles; the pieces replace the copies, marked
    /// measured; a total lost in noise keeps them and says why.
    #[test]
    fn a_full_flush_is_what_it_adds_to_an_mprotect_split_in_the_presets_proportion() {
        let c = costs(&[
            (names::MPROTECT_SMALL, 1586.6),
            (names::MPROTECT_LARGE, 4970.2),
            (names::MPROTECT_EMPTY, 262.7),
        ]);
        let (ns, how) = full_flush_ns(&c).expect("derived");
        assert!((ns - 196.0).abs() < 0.05, "{ns}");
        assert!(how.contains("mprotect_empty"), "{how}");
        let preset =
            tlblab_sim::machine::builtin("icelake-server").expect("built in").raw().clone();
        let (mut kernel, mut cost) =
            (preset.kernel.clone().expect("[kernel]"), preset.cost.clone());
        kernel.clock.mhz = 2600;
        let mut prov = Vec::new();
        apply_full_flush(&cached(c), &mut kernel, &mut cost, &mut prov);
        let share = |w: f64| 196.0 * w / 890.0;
        assert_eq!(cost.mov_cr3.cycles, (share(300.0) * 2.6).round() as u64);
        assert!((kernel.flush_tlb_func.written.ns.expect("in ns") - share(490.0)).abs() < 0.1);
        assert!((kernel.flush_tlb_mm_range.written.ns.expect("in ns") - share(100.0)).abs() < 0.1);
        assert_eq!(prov.len(), 3);
        assert!(prov.iter().all(|p| p.origin == Origin::Measured));

        let noise = costs(&[
            (names::MPROTECT_SMALL, 1200.0),
            (names::MPROTECT_LARGE, 4970.2),
            (names::MPROTECT_EMPTY, 262.7),
        ]);
        let (mut kernel, mut cost) =
            (preset.kernel.clone().expect("[kernel]"), preset.cost.clone());
        let mut prov = vec![Provenance::new("cost.mov_cr3", "300 cycles", Origin::Copied, "x")];
        apply_full_flush(&cached(noise), &mut kernel, &mut cost, &mut prov);
        assert_eq!(cost.mov_cr3.cycles, 300);
        assert_eq!(prov[0].origin, Origin::Fallback);
        assert!(prov[0].source.contains("not positive"), "{}", prov[0].source);
    }

    /// Applied: the measured cost in cycles at the host's clock, marked measured; the scope on
    /// the features with its evidence; without the loops the copies stay, and say why.
    #[test]
    fn apply_sets_the_cost_and_scope_or_keeps_the_copies() {
        let rereads = [
            (names::REREAD_AFTER_NONE, 1.11),
            (names::REREAD_AFTER_INVLPG, 3.73),
            (names::REREAD_AFTER_FLUSH, 3.84),
        ];
        let c = costs(&[&GUEST_ZAPS[..], &rereads[..]].concat());
        let preset = tlblab_sim::machine::builtin("sapphire-rapids").expect("built in");
        let mut features = preset.raw().features.clone();
        let mut invlpg = preset.raw().cost.invlpg.clone();
        let mut prov = vec![Provenance::new("cost.invlpg", "200 cycles", Origin::Copied, "x")];
        apply(&c, "the cache", 2600, &mut invlpg, &mut features, &mut prov);
        assert_eq!(invlpg.cycles, 336); // 129.3 ns at 2.6 GHz
        assert!(!invlpg.unverified);
        assert_eq!(features.invlpg_tlb_scope, TlbScope::All);
        assert!(features.invlpg_tlb_scope_source.contains("the cache"));
        assert_eq!(prov.iter().filter(|p| p.figure == "cost.invlpg").count(), 1);
        assert!(prov.iter().all(|p| p.origin == Origin::Measured));

        let mut features = preset.raw().features.clone();
        let mut invlpg = preset.raw().cost.invlpg.clone();
        let copied = invlpg.cycles;
        let mut prov = vec![Provenance::new("cost.invlpg", "200 cycles", Origin::Copied, "x")];
        apply(&costs(&[]), "the cache", 2600, &mut invlpg, &mut features, &mut prov);
        assert_eq!(invlpg.cycles, copied);
        assert!(invlpg.source.contains("not measured here"));
        assert_eq!(features.invlpg_tlb_scope, TlbScope::Address);
        assert!(prov.iter().all(|p| p.origin == Origin::Fallback));
    }
}
