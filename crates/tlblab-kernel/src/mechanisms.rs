//! Switches for the model's mechanisms (docs/kernel-model.md, "Mechanisms and their switches"),
//! so that a user can see what each contributes: a run with one switched off is the model as it
//! was, or as a preset without that section would make it, without that mechanism.
//!
//! A mechanism is a piece of machine or kernel behaviour the model adds to the flush code
//! itself, not a kernel version's choice (those are [`crate::Policy`] switches) and not a way of
//! accounting time. Adding one is a line in [`mechanisms!`]'s invocation below, a line in
//! [`Mechanism::present_on`], and its check where it acts
//! (`config.mechanisms.is_on(Mechanism::…)`).

use serde::Serialize;
use std::fmt;
use thiserror::Error;
use tlblab_sim::machine::MachineSpec;

macro_rules! mechanisms {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $what:literal, $doc_section:literal, $off:literal;)+) => {
        /// A mechanism of the model that can be switched off.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Mechanism {
            $($(#[$doc])* $variant,)+
        }

        impl Mechanism {
            /// Every mechanism, in the order the docs and `--explain` list them.
            pub const ALL: &'static [Mechanism] = &[$(Mechanism::$variant),+];

            /// Its stable name (kebab-case), as `--without` takes it.
            pub fn name(self) -> &'static str {
                match self { $(Mechanism::$variant => $name,)+ }
            }

            /// What it models, in one line.
            pub fn description(self) -> &'static str {
                match self { $(Mechanism::$variant => $what,)+ }
            }

            /// The doc section that describes it.
            pub fn doc(self) -> &'static str {
                match self { $(Mechanism::$variant => $doc_section,)+ }
            }

            /// What the model does with it off.
            pub fn off_means(self) -> &'static str {
                match self { $(Mechanism::$variant => $off,)+ }
            }
        }
    };
}

mechanisms! {
    /// KVM guest costs (`kernel/guest.rs`).
    Guest => "guest",
        "a KVM guest's VM exits: one per IPI sent (per batch with PV send-IPI), one per IPI received without posted interrupts",
        "docs/kernel-model.md, \"Virtualisation\"",
        "bare metal, as a preset without [guest] (the preset's [idle] table stays)";
    /// Idle states and the governor (`kernel/idle.rs`).
    IdleStates => "idle-states",
        "the C-states of the preset's [idle] table, the menu governor's choice, their exit latencies and TLB loss",
        "docs/kernel-model.md, \"Idle states\"",
        "as a preset without [idle]: one state left at kernel.idle_exit";
    /// `smp_call_function_many_cond()`'s per-CPU call queue (`kernel/run.rs`).
    CsdQueue => "csd-queue",
        "smp_call_function_many's csd queue (a csd per target, an IPI only to an empty queue, one interrupt runs every queued call, the initiator waits for each csd in turn)",
        "docs/kernel-model.md, \"How time is modelled\" (IPIs and cross-CPU calls)",
        "one IPI per call per target carrying its call, no csd write, the wait ends ipi_ack after the last target";
    /// The fixed cost of an mmu_gather that frees pages (`kernel/run.rs`, `zap_cycles`).
    ZapBatch => "zap-batch",
        "once per mmu_gather that cleared a present PTE: lru_add_drain() and tlb_finish_mmu()'s batched free of the pages (kernel.zap_batch)",
        "docs/kernel-model.md, \"Memory management\" (item 4)",
        "zap_pte per PTE only, as a preset whose zap_batch is 0";
    /// `mm->mmap_lock` (`kernel/mmap_lock.rs`).
    MmapLock => "mmap-lock",
        "mm->mmap_lock: mmap/munmap/mprotect take it for write (munmap downgrades to read from 4.20), faults and MADV_DONTNEED for read before per-VMA locks; writers spin on a running holder, others sleep",
        "docs/kernel-model.md, \"How time is modelled\" (mmap_lock)",
        "no lock: every path runs at once, as if each task had the mm to itself";
    /// The live loops' own program images (`program::WorkingSet`).
    WorkingSet => "working-set",
        "each live loop's own code, stack and library pages, referenced once per iteration (measured with a lackey trace), so that a flushing CR3 write costs their refills",
        "docs/kernel-model.md, \"How time is modelled\" (working sets)",
        "the loops reference only the regions they map (the model before this mechanism)";
    /// Memory-level parallelism of page-strided loads and stores (`Kernel::touch_cycles`).
    Mlp => "mlp",
        "independent page-strided loads and stores overlap their STLB lookups and page walks (up to the preset's page_walkers at once) with each other and with the work between them",
        "docs/hardware-model.md, \"Memory-level parallelism\"",
        "every translation is charged in full, one after the other (the model before this mechanism)";
    /// VMA merging and splitting (`mm.rs`, `Mm::mmap_beside`).
    VmaMerge => "vma-merge",
        "mmap(MAP_FIXED_NOREPLACE) beside a region merges the two VMAs, and a munmap of the new pages alone splits the merged VMA (kernel.split_vma)",
        "docs/kernel-model.md, \"Memory management\" (item 2)",
        "every mapping is a VMA of its own (placed beside when asked), and no munmap splits one";
    /// vfork()'s suspension of the parent until the child execs or exits (`kernel/process.rs`).
    VforkWait => "vfork-wait",
        "vfork()/posix_spawn() put the parent to sleep until the child execs or exits (wait_for_vfork_done()), a block and a wake-up per child",
        "docs/kernel-model.md, \"Memory management\" (item 8)",
        "the parent runs on after vfork() (the model before this mechanism)";
}

impl Mechanism {
    /// The mechanism named `name`.
    pub fn from_name(name: &str) -> Result<Mechanism, MechanismError> {
        Mechanism::ALL.iter().copied().find(|m| m.name() == name).ok_or_else(|| {
            MechanismError::Unknown {
                name: name.to_string(),
                hint: did_you_mean(name),
                known: Mechanism::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
            }
        })
    }

    /// Whether the mechanism has anything to act on on `spec`: a guest needs a `[guest]` with
    /// an exit cost, idle states an `[idle]` table, the zap batch and VMA merging their
    /// `[kernel]` figure (a preset that gives 0 holds the cost in other figures); the csd queue
    /// is the kernel's own.
    pub fn present_on(self, spec: &MachineSpec) -> bool {
        match self {
            Mechanism::Guest => crate::kernel::guest::Guest::from_spec(spec).is_some(),
            Mechanism::IdleStates => spec.raw().idle.is_some(),
            Mechanism::CsdQueue
            | Mechanism::MmapLock
            | Mechanism::WorkingSet
            | Mechanism::Mlp
            | Mechanism::VforkWait => true,
            Mechanism::ZapBatch => spec.kernel_costs().is_some_and(|k| k.zap_batch.cycles > 0),
            Mechanism::VmaMerge => spec.kernel_costs().is_some_and(|k| k.split_vma.cycles > 0),
        }
    }
}

/// What an explanation (`--explain`) did with a mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EffectStatus {
    /// Run again with it off.
    Ran,
    /// The machine has nothing for it to act on ([`Mechanism::present_on`]): not run.
    NotPresent,
    /// Already off in every run (`--without`): not run.
    Off,
}

impl Mechanism {
    /// Whether an explanation runs `self` off, given the run's `base` set and whether the
    /// mechanism is `present` on the machine.
    pub fn effect_status(self, base: Mechanisms, present: bool) -> EffectStatus {
        if !base.is_on(self) {
            EffectStatus::Off
        } else if !present {
            EffectStatus::NotPresent
        } else {
            EffectStatus::Ran
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name `--without` does not know.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MechanismError {
    /// No mechanism has this name.
    #[error("unknown mechanism {name:?}{hint} (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// `; did you mean "…"?` when a known name is close, else empty.
        hint: String,
        /// The known names.
        known: String,
    },
}

/// `; did you mean "x"?` for the known name closest to `name` within two edits.
fn did_you_mean(name: &str) -> String {
    Mechanism::ALL
        .iter()
        .map(|m| (edit_distance(name, m.name()), m.name()))
        .filter(|&(d, _)| d <= 2)
        .min()
        .map_or(String::new(), |(_, n)| format!("; did you mean {n:?}?"))
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            row[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

/// A set of mechanisms switched on; the default has them all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mechanisms {
    /// Bit `i` set: [`Mechanism::ALL`]`[i]` is off (so that the default is everything on).
    off: u64,
}

impl Mechanisms {
    /// Every mechanism on.
    pub fn all() -> Mechanisms {
        Mechanisms::default()
    }

    fn bit(m: Mechanism) -> u64 {
        1 << Mechanism::ALL.iter().position(|&x| x == m).expect("ALL lists every mechanism")
    }

    /// This set with `m` off.
    #[must_use]
    pub fn without(self, m: Mechanism) -> Mechanisms {
        Mechanisms { off: self.off | Mechanisms::bit(m) }
    }

    /// Whether `m` is on.
    pub fn is_on(self, m: Mechanism) -> bool {
        self.off & Mechanisms::bit(m) == 0
    }

    /// The mechanisms switched off, in [`Mechanism::ALL`] order.
    pub fn off(self) -> Vec<Mechanism> {
        Mechanism::ALL.iter().copied().filter(|&m| !self.is_on(m)).collect()
    }

    /// Every mechanism but those of a comma-separated list of names (`""`: all on).
    pub fn without_list(list: &str) -> Result<Mechanisms, MechanismError> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(Mechanisms::all(), |set, name| Ok(set.without(Mechanism::from_name(name)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_parse_back() {
        for &m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Ok(m));
            assert!(m.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{m}");
            assert!(!m.description().is_empty() && m.doc().starts_with("docs/"));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        let mut names: Vec<_> = Mechanism::ALL.iter().map(|m| m.name()).collect();
        names.dedup();
        assert_eq!(names.len(), Mechanism::ALL.len());
    }

    /// docs/kernel-model.md has a row for each in "Mechanisms and their switches", and the
    /// section each names exists in the file it names.
    #[test]
    fn every_mechanism_is_documented() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernel-model.md");
        let text = std::fs::read_to_string(path).unwrap();
        let table = &text[text.find("## Mechanisms and their switches").unwrap()..];
        for &m in Mechanism::ALL {
            assert!(table.contains(&format!("\n| `{}` |", m.name())), "no row for {m}");
            let (file, section) = m.doc().split_once(", \"").unwrap();
            let section = &section[..section.find('"').unwrap()];
            let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
            let doc = std::fs::read_to_string(format!("{root}{file}")).unwrap();
            assert!(doc.contains(section), "{m}: no section {section:?} in {file}");
        }
    }

    #[test]
    fn a_set_starts_full_and_loses_what_is_switched_off() {
        let all = Mechanisms::all();
        assert!(Mechanism::ALL.iter().all(|&m| all.is_on(m)));
        let s = all.without(Mechanism::Guest).without(Mechanism::CsdQueue);
        assert!(!s.is_on(Mechanism::Guest) && !s.is_on(Mechanism::CsdQueue));
        assert!(s.is_on(Mechanism::IdleStates));
        assert_eq!(s.off(), [Mechanism::Guest, Mechanism::CsdQueue]);
        assert_eq!(Mechanisms::without_list("csd-queue, guest,"), Ok(s));
        assert_eq!(Mechanisms::without_list(""), Ok(all));
    }

    #[test]
    fn a_bad_name_lists_the_known_ones_and_suggests_a_close_one() {
        let e = Mechanisms::without_list("guest,idle-state").unwrap_err().to_string();
        assert!(e.contains("unknown mechanism \"idle-state\""), "{e}");
        assert!(e.contains("did you mean \"idle-states\"?"), "{e}");
        assert!(e.contains("guest, idle-states, csd-queue"), "{e}");
        let e = Mechanism::from_name("pcid").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }
}
