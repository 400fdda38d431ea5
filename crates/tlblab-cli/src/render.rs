//! Plain-text rendering helpers: grouped numbers, ratios, and aligned tables. Output never
//! depends on the terminal, so it is byte-identical across runs and machines.

use std::io::Write;
use tlblab_sim::stats::{HwReport, WALK_LEVEL_NAMES};
pub use tlblab_studies::text::{group, Table};

/// Writes `text` to standard output: what every command uses instead of `print!`, which panics
/// when the write fails. A closed pipe (`tlblab … | head`) gives [`StdoutClosed`], which stops
/// the command and exits with status 0, silently; any other failure (a full disk) is an error,
/// status 1. Text for a reader (prose, tables, Markdown) may quote its inputs (a preset's or a
/// sweep's names, a result file's strings): every control or text-reordering character but the
/// line break is shown escaped ([`tlblab_types::escape::escape_lines`]), so no input acts on the
/// terminal. Data formats (JSON, TOML, CSV, HTML) go through [`stdout_data`] as they are.
pub fn stdout(text: &str) -> anyhow::Result<()> {
    stdout_bytes(tlblab_types::escape::escape_lines(text).as_bytes())
}

/// [`stdout`] for a data format, written as it is: its own syntax quotes its strings, and an
/// escape of ours would corrupt it.
pub fn stdout_data(text: &str) -> anyhow::Result<()> {
    stdout_bytes(text.as_bytes())
}

/// [`stdout`] for bytes.
pub fn stdout_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_error)
}

/// [`stdout`], with a line end.
pub fn stdout_line(text: &str) -> anyhow::Result<()> {
    stdout(&format!("{text}\n"))
}

/// The error for a failed write to standard output: [`StdoutClosed`] for a closed pipe, else
/// the I/O error saying that standard output was being written.
pub fn stdout_error(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        StdoutClosed.into()
    } else {
        anyhow::Error::new(e).context("writing standard output")
    }
}

/// Standard output's reader stopped reading (`tlblab … | head`). Not a failure: the command
/// stops and exits with status 0 without a message, as ripgrep does. (A broken pipe to a child
/// process is an ordinary error: only this type is silent.)
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct StdoutClosed;

/// `part / whole` as a percentage with one decimal, or `-` when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// `num / den` with `decimals` decimals, or `-` when `den` is 0.
pub fn ratio(num: u64, den: u64, decimals: usize) -> String {
    if den == 0 {
        "-".into()
    } else {
        format!("{:.*}", decimals, num as f64 / den as f64)
    }
}

/// Every counter of a run, as text. Counts are exact (the model is deterministic).
pub fn hw_report(r: &HwReport, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let a = &r.accesses;
    let mut out = format!(
        "{pad}accesses: {} (load {} · store {} · fetch {})\n\n",
        group(a.total),
        group(a.load),
        group(a.store),
        group(a.fetch)
    );
    let mut t = Table::new(&[
        "TLB structure",
        "level",
        "entries",
        "ways",
        "hits",
        "misses",
        "hit rate",
        "fills",
        "evictions",
        "invalidated",
    ]);
    for s in &r.structures {
        let st = &s.stats;
        t.row(vec![
            s.name.clone(),
            s.level.to_string(),
            group(s.entries as u64),
            group(s.ways as u64),
            group(st.hits),
            group(st.misses),
            percent(st.hits, st.hits + st.misses),
            group(st.fills),
            group(st.evictions),
            group(st.invalidated),
        ]);
    }
    out += &t.render(indent);
    out.push('\n');
    let mut t = Table::new(&[
        "L1 misses",
        "count",
        "stlb_hit",
        "walk_completed",
        "walk cycles",
        "translation cycles",
    ]);
    for (name, m) in [
        ("dtlb_load_misses", &r.dtlb_load_misses),
        ("dtlb_store_misses", &r.dtlb_store_misses),
        ("itlb_misses", &r.itlb_misses),
    ] {
        t.row(vec![
            name.into(),
            group(m.l1_miss),
            group(m.stlb_hit),
            group(m.walk_completed),
            group(m.walk_active_cycles),
            group(m.translation_cycles),
        ]);
    }
    out += &t.render(indent);
    let w = &r.page_walks;
    let refs: Vec<String> = WALK_LEVEL_NAMES
        .iter()
        .filter_map(|l| {
            w.memory_references.get(*l).filter(|&&n| n > 0).map(|n| format!("{l} {}", group(*n)))
        })
        .collect();
    out += &format!(
        "\n{pad}page walks: {} ({} per 1,000 accesses); {} walk cycles ({} per walk, mean)\n",
        group(w.walks),
        ratio(w.walks * 1000, a.total, 2),
        group(w.cycles),
        ratio(w.cycles, w.walks, 1)
    );
    out += &format!(
        "{pad}walk memory references: {}\n",
        if refs.is_empty() { "none".into() } else { refs.join(" · ") }
    );
    if let Some(n) = &r.nested_paging {
        let c = &n.stats.cache;
        out += &format!(
            "{pad}nested paging ({} host pages, {} levels): {} host references, {} cycles; \
             {} guest-physical translations, {} from the {}-entry nested cache\n",
            n.host_page_size,
            n.host_levels,
            group(n.stats.memory_references),
            group(n.stats.cycles),
            group(n.stats.translations),
            group(c.hits),
            n.cache_entries
        );
    }
    let translation: u64 = [&r.dtlb_load_misses, &r.dtlb_store_misses, &r.itlb_misses]
        .iter()
        .map(|m| m.translation_cycles)
        .sum();
    out += &format!(
        "{pad}translation cycles (STLB lookups + walks): {} ({} per access, mean)\n",
        group(translation),
        ratio(translation, a.total, 3)
    );
    if !r.paging_structure_caches.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "paging-structure cache",
            "entries",
            "ways",
            "hits",
            "misses",
            "fills",
            "evictions",
            "invalidated",
        ]);
        for p in &r.paging_structure_caches {
            let st = &p.stats;
            t.row(vec![
                format!("{:?}", p.level).to_uppercase(),
                group(u64::from(p.entries)),
                group(u64::from(p.ways)),
                group(st.hits),
                group(st.misses),
                group(st.fills),
                group(st.evictions),
                group(st.invalidated),
            ]);
        }
        out += &t.render(indent);
    }
    let ops: Vec<_> =
        r.invalidations.iter().filter(|(_, o)| o.count > 0 || o.tlb_entries_dropped > 0).collect();
    out.push('\n');
    if ops.is_empty() {
        out += &format!("{pad}invalidating instructions: none\n");
    } else {
        let mut t = Table::new(&[
            "invalidating instruction",
            "count",
            "cycles",
            "TLB entries dropped",
            "PSC entries dropped",
        ]);
        for (name, o) in ops {
            t.row(vec![
                name.clone(),
                group(o.count),
                group(o.cycles),
                group(o.tlb_entries_dropped),
                group(o.psc_entries_dropped),
            ]);
        }
        out += &t.render(indent);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }

    #[test]
    fn ratios_say_when_undefined() {
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(1, 0), "-");
        assert_eq!(ratio(10, 4, 2), "2.50");
    }

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&["name", "n", "note"]);
        t.row(vec!["a".into(), "1,000".into(), "x".into()]);
        t.row(vec!["bb".into(), "5".into(), "yz".into()]);
        assert_eq!(t.render(1), " name      n  note\n a     1,000  x\n bb        5  yz\n");
    }
}
