//! The checked machine description.

use super::nested::NestedSpec;
use super::raw::{
    max_cycles_at, resolve_kernel_figures, CyclesFigure, PscLevel, PscScope, RawGuest, RawIdle,
    RawKernel, RawMachine, TlbScope, MAX_MHZ, MAX_PATH_CYCLES,
};
use crate::hw::Replacement;
use std::path::Path;
use thiserror::Error;
use tlblab_types::{AccessKind, PageSize};

/// A preset that cannot be used, with the file (or built-in name) it came from.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MachineError {
    /// The file could not be read.
    #[error("machine preset {path}: cannot read it")]
    Io {
        /// The path as given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown or missing key (the message names it and its line).
    #[error("machine preset {origin}: {message}")]
    Parse {
        /// File or built-in name.
        origin: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The values are inconsistent.
    #[error("machine preset {origin}: {message}")]
    Invalid {
        /// File or built-in name.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// No built-in preset has this name.
    #[error("no built-in machine preset named {name:?}{hint} (built-in: {known}; or give a path to a .toml file)", hint = tlblab_types::names::did_you_mean(name, tlblab_types::names::listed(known)))]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The built-in names.
        known: String,
    },
    /// The run asked for something the machine does not have.
    #[error("machine {machine}: {message}")]
    Unsupported {
        /// The machine's name.
        machine: String,
        /// What is missing.
        message: String,
    },
}

/// One TLB structure, checked.
#[derive(Clone, Debug)]
pub struct StructureSpec {
    /// Display name.
    pub name: String,
    /// 1 or 2.
    pub level: u8,
    /// Entries.
    pub entries: usize,
    /// Ways per set.
    pub ways: usize,
    /// Whether it serves each access kind (indexed by `AccessKind::index`).
    pub serves: [bool; 3],
    /// Whether it holds each page size (indexed by `PageSize::index`); a splintering structure
    /// "holds" 1 GiB pages as 2 MiB entries.
    pub holds: [bool; 3],
    /// 1 GiB translations are stored as 2 MiB entries.
    pub splinter_1g: bool,
}

/// A checked machine preset, plus the run-time choices (replacement, paging depth).
#[derive(Clone, Debug)]
pub struct MachineSpec {
    raw: RawMachine,
    origin: String,
    /// The file it was read from, if any (errors found later name it).
    file: Option<String>,
    structures: Vec<StructureSpec>,
    paging_levels: u8,
    /// Nested paging is in force (the preset's `[guest.nested]` says so and the run kept it).
    nested: Option<NestedSpec>,
}

impl MachineSpec {
    /// Parses and checks a preset; `origin` names it in errors (a path or a built-in name).
    pub fn from_toml(text: &str, origin: &str) -> Result<MachineSpec, MachineError> {
        let mut raw: RawMachine = toml::from_str(text).map_err(|e| MachineError::Parse {
            origin: origin.to_string(),
            message: tlblab_types::plain::toml_error(text, e.message().trim_end(), e.span()),
        })?;
        let invalid = |message: String| MachineError::Invalid {
            origin: origin.to_string(),
            message: tlblab_types::plain::locate_key_message(text, &message),
        };
        let structures = check(&raw).map_err(invalid)?;
        resolve_kernel_figures(&mut raw).map_err(invalid)?;
        let nested =
            raw.guest.as_ref().and_then(|g| g.nested.as_ref()).and_then(NestedSpec::from_raw);
        Ok(MachineSpec {
            raw,
            origin: origin.to_string(),
            file: None,
            structures,
            paging_levels: 4,
            nested,
        })
    }

    /// Reads a preset file.
    pub fn from_file(path: &Path) -> Result<MachineSpec, MachineError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|source| MachineError::Io { path: shown.clone(), source })?;
        let text = tlblab_types::plain::utf8_text(&bytes)
            .map_err(|message| MachineError::Parse { origin: shown.clone(), message })?;
        Ok(MachineSpec { file: Some(shown.clone()), ..MachineSpec::from_toml(text, &shown)? })
    }

    /// A built-in preset by name, or a file if `name_or_path` ends in `.toml` or contains a `/`.
    pub fn load(name_or_path: &str) -> Result<MachineSpec, MachineError> {
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            MachineSpec::from_file(Path::new(name_or_path))
        } else {
            super::builtin(name_or_path)
        }
    }

    /// Overrides the replacement policy of every structure.
    pub fn with_replacement(mut self, replacement: Replacement) -> MachineSpec {
        self.raw.replacement = replacement;
        self
    }

    /// Chooses 4- or 5-level paging; 5 needs LA57.
    pub fn with_paging_levels(mut self, levels: u8) -> Result<MachineSpec, MachineError> {
        let unsupported =
            |message: String| MachineError::Unsupported { machine: self.shown(), message };
        match levels {
            4 => {}
            5 if self.raw.features.la57 => {}
            5 => return Err(unsupported("5-level paging needs LA57, which it lacks".into())),
            n => return Err(unsupported(format!("{n}-level paging does not exist on x86-64"))),
        }
        self.paging_levels = levels;
        Ok(self)
    }

    /// The guest run with the host set differently: posted interrupts on or off, and
    /// `overcommit` runnable host threads per physical CPU (a study's axis, docs/studies.md
    /// S9). The facts say so in their `source`. Errors: a preset without `[guest]`, an
    /// overcommit out of range or without the host slice and tick it needs.
    pub fn with_guest_setting(
        mut self,
        posted_interrupts: bool,
        overcommit: f64,
        why: &str,
    ) -> Result<MachineSpec, MachineError> {
        let (origin, machine) = (self.origin.clone(), self.shown());
        let Some(g) = self.raw.guest.as_mut() else {
            return Err(MachineError::Unsupported {
                machine,
                message: "a guest setting needs a preset with a [guest] section".into(),
            });
        };
        let fact =
            |value| super::raw::GuestFact { value, source: why.to_string(), unverified: false };
        g.posted_interrupts = Some(fact(posted_interrupts));
        g.overcommit = Some(super::raw::GuestFact {
            value: super::raw::Ratio(overcommit),
            source: why.to_string(),
            unverified: false,
        });
        g.check_preemption().map_err(|message| MachineError::Invalid { origin, message })?;
        Ok(self)
    }

    /// The machine with walks modelled as native even if its `[guest.nested]` says EPT/NPT
    /// (the `nested-paging` mechanism off).
    pub fn without_nested(mut self) -> MachineSpec {
        self.nested = None;
        self
    }

    /// Nested paging in force: `[guest.nested]` says the guest runs under EPT/NPT, and it was
    /// not switched off ([`MachineSpec::without_nested`]).
    pub fn nested(&self) -> Option<&NestedSpec> {
        self.nested.as_ref()
    }

    /// The preset's name.
    pub fn name(&self) -> &str {
        &self.raw.name
    }

    /// Where the preset came from (file path or built-in name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// How an error names the preset: its name, and its file when it came from one.
    pub fn shown(&self) -> String {
        tlblab_types::names::with_file(&self.raw.name, self.file.as_deref())
    }

    /// The preset as written, with every kernel-path figure resolved to cycles at the preset's
    /// clock ([`super::raw::KernelFigure::cycles`]).
    pub fn raw(&self) -> &RawMachine {
        &self.raw
    }

    /// The kernel-path costs, resolved to cycles at `[kernel].clock`, if the preset has them.
    pub fn kernel_costs(&self) -> Option<&RawKernel> {
        self.raw.kernel.as_ref()
    }

    /// What the machine is as a virtual machine (`[guest]`), if the preset says.
    pub fn guest(&self) -> Option<&RawGuest> {
        self.raw.guest.as_ref()
    }

    /// The TLB structures, in file order.
    pub fn structures(&self) -> &[StructureSpec] {
        &self.structures
    }

    /// Replacement policy.
    pub fn replacement(&self) -> Replacement {
        self.raw.replacement
    }

    /// 4 or 5.
    pub fn paging_levels(&self) -> u8 {
        self.paging_levels
    }

    /// INVLPG's paging-structure-cache scope.
    pub fn invlpg_psc_scope(&self) -> PscScope {
        self.raw.features.invlpg_psc_scope
    }

    /// Which TLB entries INVLPG drops.
    pub fn invlpg_tlb_scope(&self) -> TlbScope {
        self.raw.features.invlpg_tlb_scope
    }

    /// The same machine with the SDM's INVLPG: only the address's entries go (the kernel
    /// model's `invlpg-scope` switched off).
    pub fn with_architectural_invlpg(mut self) -> MachineSpec {
        self.raw.features.invlpg_tlb_scope = TlbScope::Address;
        self.raw.features.invlpg_tlb_scope_source.clear();
        self
    }
}

/// Checks a parsed preset; returns the structures in a ready form.
fn check(raw: &RawMachine) -> Result<Vec<StructureSpec>, String> {
    if raw.name.trim().is_empty() {
        return Err("`name` is empty".into());
    }
    if raw.vendor != "intel" && raw.vendor != "amd" {
        return Err(format!("`vendor` is {:?}; expected \"intel\" or \"amd\"", raw.vendor));
    }
    let mut structures: Vec<StructureSpec> = Vec::new();
    for (i, tlb) in raw.tlb.iter().enumerate() {
        let what = format!("[[tlb]] #{} ({:?})", i + 1, tlb.name);
        if tlb.level != 1 && tlb.level != 2 {
            return Err(format!("{what}: `level` is {}; expected 1 or 2", tlb.level));
        }
        check_geometry(&what, tlb.entries, tlb.ways)?;
        if tlb.accesses.is_empty() || tlb.page_sizes.is_empty() {
            return Err(format!("{what}: `accesses` and `page_sizes` must not be empty"));
        }
        let mut serves = [false; 3];
        for kind in &tlb.accesses {
            if std::mem::replace(&mut serves[kind.index()], true) {
                return Err(format!("{what}: access kind {} listed twice", kind.name()));
            }
        }
        let mut holds = [false; 3];
        for size in &tlb.page_sizes {
            if std::mem::replace(&mut holds[size.index()], true) {
                return Err(format!("{what}: page size {} listed twice", size.name()));
            }
        }
        if tlb.splinter_1g {
            if !holds[PageSize::Size2M.index()] || holds[PageSize::Size1G.index()] {
                return Err(format!(
                    "{what}: `splinter_1g` stores 1g pages as 2m entries, so `page_sizes` must \
                     list 2m and not 1g"
                ));
            }
            holds[PageSize::Size1G.index()] = true;
        }
        for other in &structures {
            for kind in AccessKind::ALL {
                for size in PageSize::ALL {
                    let (k, s) = (kind.index(), size.index());
                    if other.level == tlb.level
                        && other.serves[k]
                        && serves[k]
                        && other.holds[s]
                        && holds[s]
                    {
                        return Err(format!(
                            "{what}: {} {} translations at level {} are already held by {:?}",
                            kind.name(),
                            size.name(),
                            tlb.level,
                            other.name
                        ));
                    }
                }
            }
        }
        structures.push(StructureSpec {
            name: tlb.name.clone(),
            level: tlb.level,
            entries: tlb.entries as usize,
            ways: tlb.ways as usize,
            serves,
            holds,
            splinter_1g: tlb.splinter_1g,
        });
    }
    for kind in AccessKind::ALL {
        let has_l1 = structures
            .iter()
            .any(|s| s.level == 1 && s.serves[kind.index()] && s.holds[PageSize::Size4K.index()]);
        if !has_l1 {
            return Err(format!("no level-1 [[tlb]] holds 4k translations for {}", kind.name()));
        }
    }
    if let Some(idle) = &raw.idle {
        check_idle(idle)?;
    }
    if let Some(nested) = raw.guest.as_ref().and_then(|g| g.nested.as_ref()) {
        super::nested::check(nested)?;
    }
    let mut seen = Vec::new();
    for psc in &raw.psc {
        let what = format!("[[psc]] {:?}", psc.level);
        check_geometry(&what, psc.entries, psc.ways)?;
        if seen.contains(&psc.level) {
            return Err(format!("{what} is listed twice"));
        }
        if psc.level == PscLevel::Pml5e && !raw.features.la57 {
            return Err(format!("{what}: a PML5E cache needs `features.la57 = true`"));
        }
        seen.push(psc.level);
    }
    // A translation or an instruction is paid per access and per flush: a huge figure overflows
    // the clock or makes every step outlast millions of ticks.
    let latencies = raw.latency.figures().into_iter().map(|(n, f)| ("latency", n, f));
    let clock = raw.kernel.as_ref().map(|k| k.clock.mhz).filter(|m| (1..=MAX_MHZ).contains(m));
    for (section, name, figure) in
        latencies.chain(raw.cost.figures().into_iter().map(|(n, f)| ("cost", n, f)))
    {
        if figure.cycles > MAX_PATH_CYCLES {
            return Err(format!(
                "`[{section}] {name}`: `cycles = {}` is above the limit of {MAX_PATH_CYCLES} cycles",
                figure.cycles
            ));
        }
        if let Some(mhz) = clock.filter(|&m| figure.cycles > max_cycles_at(m)) {
            return Err(format!(
                "`[{section}] {name}`: `cycles = {}` is more than 1 s at the {mhz} MHz clock",
                figure.cycles
            ));
        }
    }
    let f = &raw.features;
    let c = &raw.cost;
    let invpcid_costs = [
        &c.invpcid_indiv_addr,
        &c.invpcid_single_ctxt,
        &c.invpcid_all_incl_global,
        &c.invpcid_all_non_global,
    ];
    let present = invpcid_costs.iter().filter(|x| x.is_some()).count();
    if present != if f.invpcid { 4 } else { 0 } {
        return Err(
            "the four `cost.invpcid_*` figures are needed exactly when `features.invpcid` \
                    is true"
                .into(),
        );
    }
    let invlpgb_fields = [c.invlpgb.is_some(), c.tlbsync.is_some(), f.invlpgb_count_max.is_some()];
    if invlpgb_fields.iter().any(|&present| present != f.invlpgb) {
        return Err("`cost.invlpgb`, `cost.tlbsync` and `features.invlpgb_count_max` are needed \
                    exactly when `features.invlpgb` is true"
            .into());
    }
    if f.invlpgb_count_max == Some(0) {
        return Err("`features.invlpgb_count_max` must be at least 1".into());
    }
    Ok(structures)
}

/// cpuidle's rules for a state table: at most `CPUIDLE_STATE_MAX` (10) states with the
/// polling state, named, latencies and residencies not decreasing, each bounded (1 s).
fn check_idle(idle: &RawIdle) -> Result<(), String> {
    if idle.states.len() > 9 {
        return Err(format!(
            "[idle]: {} states; cpuidle allows at most 9 besides POLL",
            idle.states.len()
        ));
    }
    let mut last = (0, 0);
    for (i, st) in idle.states.iter().enumerate() {
        let what = format!("[idle] state #{} ({:?})", i + 1, st.name);
        if st.name.trim().is_empty() {
            return Err(format!("[idle] state #{}: `name` is empty", i + 1));
        }
        for (key, v) in [
            ("exit_latency_ns", st.exit_latency_ns),
            ("target_residency_ns", st.target_residency_ns),
        ] {
            if v > 1_000_000_000 {
                return Err(format!("{what}: `{key}` = {v} is over 1 s"));
            }
        }
        if st.exit_latency_ns < last.0 || st.target_residency_ns < last.1 {
            return Err(format!(
                "{what}: states go shallowest first: its exit latency and target residency may \
                 not be below the previous state's"
            ));
        }
        last = (st.exit_latency_ns, st.target_residency_ns);
    }
    if let Some(h) = &idle.haltpoll {
        // cpuidle-haltpoll's table: POLL and one halt state, which keeps the TLB.
        if idle.states.len() != 1 || idle.states[0].tlb_flushed {
            return Err("[idle.haltpoll]: the haltpoll governor takes exactly one state besides \
                        POLL (the halt), one that keeps the TLB"
                .into());
        }
        // The module parameters are `uint`s; a window over 1 s is no poll window.
        for (key, v, max) in [
            ("guest_halt_poll_ns", h.guest_halt_poll_ns, 1_000_000_000),
            ("guest_halt_poll_grow_start", h.guest_halt_poll_grow_start, 1_000_000_000),
            ("guest_halt_poll_grow", h.guest_halt_poll_grow, u64::from(u32::MAX)),
            ("guest_halt_poll_shrink", h.guest_halt_poll_shrink, u64::from(u32::MAX)),
        ] {
            if v > max {
                return Err(format!("[idle.haltpoll]: `{key}` = {v} is over {max}"));
            }
        }
    }
    Ok(())
}

pub(super) fn check_geometry(what: &str, entries: u32, ways: u32) -> Result<(), String> {
    if entries == 0 || ways == 0 || ways > 128 || !entries.is_multiple_of(ways) || entries > 1 << 20
    {
        return Err(format!(
            "{what}: {entries} entries in {ways}-way sets is not a geometry the model takes \
             (needs 1 ≤ ways ≤ 128, entries a multiple of ways, at most 2^20 entries)"
        ));
    }
    Ok(())
}

impl CyclesFigure {
    /// The figure as a cost.
    pub fn get(&self) -> tlblab_types::Cycles {
        tlblab_types::Cycles(self.cycles)
    }
}
