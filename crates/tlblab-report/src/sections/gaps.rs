//! What the kernel model is known to lack where its prediction of a live configuration falls
//! outside the band: one entry per mechanism, matched to rows by scenario and parameters, and
//! listed under a table in which such a row is OUT, so that a reader sees why. An entry only
//! explains; it never changes a figure. Each names its evidence (measured on the project's
//! machine) and where it is written up.

use super::lab::{within_band, Row};

/// A mechanism the model lacks, and the configurations it puts outside the band.
#[derive(Debug)]
pub struct Gap {
    /// The scenario or peer program (`hackbench`).
    pub scenario: &'static str,
    /// Parameters a row must have, as recorded (`pipe` = `false`): all of them.
    pub params: &'static [(&'static str, &'static str)],
    /// The mechanism, its evidence, and where it is written up.
    pub lacks: &'static str,
}

/// The known gaps.
pub const GAPS: &[Gap] = &[Gap {
    scenario: "hackbench",
    params: &[("pipe", "true")],
    lacks: "EEVDF's wake-up preemption as 6.18 decides it: traced at -g 2, the real \
            program's woken pipe readers preempted their writers 1,686 times and blocked \
            10,302 times, the model's 8,309 and 18,610, so it switches more than the kernel \
            does (docs/workloads.md, hackbench)",
}];

/// A mechanism the model lacks behind shapes (ratios of two configurations) outside their band.
#[derive(Debug)]
pub struct ShapeGap {
    /// The shapes it explains, by name (as `tlblab study` names them).
    pub shapes: &'static [&'static str],
    /// The mechanism, its evidence, and where it is written up.
    pub lacks: &'static str,
}

/// The known gaps behind shapes.
pub const SHAPE_GAPS: &[ShapeGap] = &[ShapeGap {
    shapes: &["tlb-flush2 processes: 2 tasks over 1", "tlb-flush2 threads: 2 tasks over 1"],
    lacks: "two things, measured on the project's Milan guest on 2026-11-29. First, the host's \
            share of a core when both vCPUs are busy: tlb-flush2's processes share no mm, no \
            flush and no lock the model charges, so the model gives them exactly 2.00, and the \
            host gave 2.00 at 15:36, 1.65 at 17:26 and 1.94 at 18:27 (steal 0.4%: it slowed \
            both vCPUs rather than take one away, as SMT siblings or a shared core would); the \
            model gives each vCPU a core of its own. Second, with threads each page's DONTNEED \
            interrupts the other thread: per page that added 8.3, 10.7 and 9.2 µs to each \
            thread in those three runs, and 9.5, 6.8 and 6.4 µs in the model, built from the \
            IPI round trip and the shootdown's cost to its target timed alone, which moved by \
            up to 23% within one live part; which cost of two shootdowns that cross the model \
            leaves out is not found yet (docs/workloads.md, tlb-flush2)",
}];

/// The gaps behind the shapes of `shapes` outside their band, each once, in [`SHAPE_GAPS`]
/// order.
pub fn behind_shapes(shapes: &[&str]) -> Vec<&'static ShapeGap> {
    SHAPE_GAPS.iter().filter(|g| shapes.iter().any(|s| g.shapes.contains(s))).collect()
}

/// The gaps behind the rows of `rows` outside the band, each once, in [`GAPS`] order.
pub fn behind(rows: &[&Row]) -> Vec<&'static Gap> {
    let out: Vec<&&Row> =
        rows.iter().filter(|r| r.ratio().is_some_and(|x| !within_band(x))).collect();
    GAPS.iter().filter(|g| out.iter().any(|r| g.explains(r))).collect()
}

impl Gap {
    /// Whether `row` is a configuration of this gap.
    pub fn explains(&self, row: &Row) -> bool {
        row.scenario == self.scenario
            && self.params.iter().all(|(k, v)| row.params.get(*k).is_some_and(|x| x == v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::lab::Class;

    fn row(pipe: &str, measured: f64, simulated: f64) -> Row {
        Row {
            name: format!("hackbench -g 1 -l 200 (pipe {pipe})"),
            scenario: "hackbench".into(),
            params: [("pipe".to_string(), pipe.to_string())].into(),
            class: Class::Unclassified("a peer program".into()),
            unit: "s".into(),
            measured: vec![measured],
            simulated: vec![simulated],
            note: None,
            drift: None,
        }
    }

    /// Only a row outside the band brings its gap; a gap comes once however many rows it
    /// explains; a row of other parameters brings none.
    #[test]
    fn a_gap_is_listed_for_rows_outside_the_band_only() {
        let pipes_out = row("true", 0.10, 0.14);
        let pipes_out_too = row("true", 0.20, 0.28);
        let pipes_in = row("true", 0.10, 0.11);
        let listed = behind(&[&pipes_out, &pipes_out_too, &pipes_in]);
        assert_eq!(listed.len(), 1);
        assert!(listed[0].lacks.starts_with("EEVDF's wake-up preemption"));
        assert!(behind(&[&pipes_in]).is_empty());
        // Sockets: their queued messages are modelled now (mechanism queued-messages).
        assert!(behind(&[&row("false", 0.20, 0.12)]).is_empty());
        // Another program with the same parameter is not hackbench.
        let other = Row { scenario: "perf-bench".into(), ..pipes_out };
        assert!(behind(&[&other]).is_empty());
    }

    /// A shape gap is listed once for any of its shapes, and not for another shape.
    #[test]
    fn a_shape_gap_is_listed_once_for_its_shapes() {
        let both = ["tlb-flush2 threads: 2 tasks over 1", "tlb-flush2 processes: 2 tasks over 1"];
        assert_eq!(behind_shapes(&both).len(), 1);
        assert_eq!(behind_shapes(&both[..1]).len(), 1);
        assert!(behind_shapes(&["pingpong: --touch 512 over --touch 0"]).is_empty());
    }
}
