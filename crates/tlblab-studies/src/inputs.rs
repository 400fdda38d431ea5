//! A study's statement of its inputs: which were measured on the project's machine, which
//! were copied and from where, which are assumptions (docs/studies.md, "Inputs: measured,
//! copied, assumed"). Built from the presets' own `source` fields and the scenarios' declared
//! inputs, so that it says what the code uses, not what a document hopes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tlblab_kernel::workloads::ScenarioInfo;
use tlblab_sim::machine::MachineSpec;
pub use tlblab_types::provenance::InputOrigin;

/// One line of the statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StudyInput {
    /// How it was obtained.
    pub origin: InputOrigin,
    /// What it is (`skylake: 41 figures …`, `kbuild: the build's process mix`).
    pub what: String,
    /// Where from.
    pub from: String,
}

/// What a part runs: a built-in scenario, or a shipped trace (S10).
pub(crate) enum Feed<'a> {
    /// A scenario of the kernel model.
    Scenario(&'a ScenarioInfo),
    /// A trace replayed: its name and what was recorded.
    Trace(&'a str, &'a str),
}

/// Sources named in a copied line; the rest are counted.
const SOURCES_SHOWN: usize = 5;
/// Figure names listed in a measured or assumed line; the rest are counted.
const NAMES_SHOWN: usize = 8;

/// The statement for a study's parts, each preset and each scenario or trace once, in the order
/// they first appear; lines grouped by origin in [`InputOrigin::ALL`]'s order.
pub(crate) fn statement<'a>(
    parts: impl IntoIterator<Item = (&'a MachineSpec, Feed<'a>)>,
) -> Vec<StudyInput> {
    let mut lines = Vec::new();
    let (mut presets, mut feeds): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for (spec, feed) in parts {
        if !presets.iter().any(|p| p == spec.name()) {
            presets.push(spec.name().to_string());
            lines.extend(preset_lines(spec));
        }
        match feed {
            Feed::Scenario(s) if !feeds.iter().any(|f| f == s.name) => {
                feeds.push(s.name.to_string());
                lines.extend(s.inputs().into_iter().map(|i| StudyInput {
                    origin: i.origin,
                    what: format!("{}: {}", s.name, i.what),
                    from: i.from,
                }));
            }
            Feed::Trace(name, what) if !feeds.iter().any(|f| f == name) => {
                feeds.push(name.to_string());
                lines.push(StudyInput {
                    origin: InputOrigin::MeasuredHere,
                    what: format!("trace {name}: {what}"),
                    from: "recorded with `tlblab trace record` on the project's VM \
                           (crates/tlblab-studies/data/traces/README.md)"
                        .into(),
                });
            }
            _ => {}
        }
    }
    // A stable sort keeps first-appearance order within each origin.
    lines.sort_by_key(|l| l.origin);
    lines
}

/// A preset's figures by origin: one line each for those measured here, copied (with the
/// sources most cited) and assumed.
fn preset_lines(spec: &MachineSpec) -> Vec<StudyInput> {
    let name = spec.name();
    let figures = spec.raw().sourced_figures();
    let of = |origin| figures.iter().filter(move |f| f.origin() == origin);
    let mut lines = Vec::new();
    let measured: Vec<&str> = of(InputOrigin::MeasuredHere).map(|f| f.name.as_str()).collect();
    if !measured.is_empty() {
        lines.push(StudyInput {
            origin: InputOrigin::MeasuredHere,
            what: format!("preset {name}: {}", listed(&measured, "kernel-path figure")),
            from: "docs/calibration.md: primitive paths timed on the project's 2-vCPU KVM guest, \
                   each carried to the preset's clock by its scaling rule"
                .into(),
        });
    }
    let mut cited: BTreeMap<&str, usize> = BTreeMap::new();
    for f in of(InputOrigin::Copied) {
        *cited.entry(citation(f.source)).or_default() += 1;
    }
    if !cited.is_empty() {
        let copied: usize = cited.values().sum();
        let mut by_count: Vec<(&str, usize)> = cited.into_iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut from: Vec<String> =
            by_count.iter().take(SOURCES_SHOWN).map(|(s, n)| format!("{s} (×{n})")).collect();
        if by_count.len() > SOURCES_SHOWN {
            from.push(format!("{} other sources", by_count.len() - SOURCES_SHOWN));
        }
        lines.push(StudyInput {
            origin: InputOrigin::Copied,
            what: format!(
                "preset {name}: {copied} figure{} (TLB geometries, latencies, instruction and path costs)",
                plural(copied)
            ),
            from: from.join("; "),
        });
    }
    let assumed: Vec<&str> = of(InputOrigin::Assumed).map(|f| f.name.as_str()).collect();
    if !assumed.is_empty() {
        lines.push(StudyInput {
            origin: InputOrigin::Assumed,
            what: format!("preset {name}: {}", listed(&assumed, "figure")),
            from: format!(
                "no source gives them: marked assumed in the preset (`tlblab sim machines show {name}`)"
            ),
        });
    }
    lines
}

/// `3 kernel-path figures (a, b, c)`, the names cut after [`NAMES_SHOWN`].
fn listed(names: &[&str], noun: &str) -> String {
    let shown = names.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
    let more = names.len().saturating_sub(NAMES_SHOWN);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("{} {noun}{} ({shown}{more})", names.len(), plural(names.len()))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The document a source cites: its text up to the first `:` or `;` (where the presets start
/// saying what they took from it), at most 80 characters.
fn citation(source: &str) -> &str {
    let head = source.split([':', ';']).next().unwrap_or(source).trim();
    match head.char_indices().nth(80) {
        Some((i, _)) => head[..i].trim_end(),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_kernel::workloads::scenario;

    fn spec(name: &str) -> MachineSpec {
        tlblab_sim::machine::builtin(name).unwrap()
    }

    /// The statement counts every figure of the preset once, under one origin, and its
    /// measured line names skylake's syscall figure (docs/calibration.md's null_syscall).
    #[test]
    fn every_figure_of_a_preset_is_counted_once() {
        let skylake = spec("skylake");
        let lines = statement([(&skylake, Feed::Scenario(scenario("kbuild").unwrap()))]);
        let total = skylake.raw().sourced_figures().len();
        let counted: usize = lines
            .iter()
            .filter(|l| l.what.starts_with("preset skylake: "))
            .map(|l| {
                l.what["preset skylake: ".len()..]
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        assert_eq!(counted, total);
        let measured = &lines[0];
        assert_eq!(measured.origin, InputOrigin::MeasuredHere);
        assert!(measured.what.contains("kernel.syscall"), "{}", measured.what);
        // INVLPG's 200 cycles are Dave Hansen's Skylake figure: copied, and cited.
        let copied = lines.iter().find(|l| l.origin == InputOrigin::Copied).unwrap();
        assert!(copied.from.contains("Intel optimization manual"), "{}", copied.from);
        let origins: Vec<InputOrigin> = lines.iter().map(|l| l.origin).collect();
        let mut sorted = origins.clone();
        sorted.sort();
        assert_eq!(origins, sorted, "grouped by origin");
    }

    /// A preset and a scenario shared by two parts are stated once; a trace is measured here.
    #[test]
    fn shared_inputs_are_stated_once_and_traces_are_measured_here() {
        let zen4 = spec("zen4");
        let s = scenario("madvise-busy").unwrap();
        let once = statement([(&zen4, Feed::Scenario(s))]);
        let twice = statement([(&zen4, Feed::Scenario(s)), (&zen4, Feed::Scenario(s))]);
        assert_eq!(once, twice);
        let traced = statement([(&zen4, Feed::Trace("t", "a build"))]);
        assert!(traced
            .iter()
            .any(|l| l.origin == InputOrigin::MeasuredHere && l.what == "trace t: a build"));
    }

    #[test]
    fn a_citation_is_the_document_before_what_was_taken_from_it() {
        assert_eq!(
            citation("Dave Hansen, LKML 2017-12-05: INVLPG ≈ 200 cycles"),
            "Dave Hansen, LKML 2017-12-05"
        );
        assert_eq!(
            citation("WikiChip Skylake (client); not in the manual"),
            "WikiChip Skylake (client)"
        );
        assert_eq!(citation(&"x".repeat(100)).len(), 80);
    }
}
