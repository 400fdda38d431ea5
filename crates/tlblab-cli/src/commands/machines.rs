//! `tlblab sim machines [show NAME]`: the machine presets and the sources of their figures.

use crate::cli::{MachinesArgs, MachinesCommand};
use crate::render::{self, group, Table};
use anyhow::{Context, Result};
use std::process::ExitCode;
use tlblab_sim::machine::raw::RawMachine;
use tlblab_sim::machine::{builtin, MachineSpec, PscScope, TlbScope, BUILTIN_PRESETS};

pub fn run(args: &MachinesArgs) -> Result<ExitCode> {
    match &args.show {
        None => render::stdout(&list()?)?,
        Some(MachinesCommand::Show { name, toml: true }) => render::stdout_data(&toml_text(name)?)?,
        Some(MachinesCommand::Show { name, toml: false }) => {
            render::stdout(&show(&super::load_preset(name)?))?
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list() -> Result<String> {
    let mut t =
        Table::new(&["name", "vendor", "TLB structures", "UNVERIFIED figures", "description"]);
    for (name, _) in BUILTIN_PRESETS {
        let spec = builtin(name)?;
        let raw = spec.raw();
        t.row(vec![
            name.to_string(),
            raw.vendor.clone(),
            raw.tlb.len().to_string(),
            format!("{} of {}", unverified(raw).0, unverified(raw).1),
            raw.description.clone(),
        ]);
    }
    Ok(format!(
        "Built-in machine presets (`tlblab sim machines show NAME` for figures and sources;\n\
         `--machine PATH.toml` uses your own file):\n\n{}",
        t.render(2)
    ))
}

/// `(unverified, total)` figures of a preset.
fn unverified(raw: &RawMachine) -> (usize, usize) {
    let figures = raw.sourced_figures();
    (figures.iter().filter(|f| f.unverified).count(), figures.len())
}

/// `[kernel]` and `[guest]`: each figure as written (unit, source clock, scaling rule) and its
/// cycles at the preset's clock.
fn kernel_tables(raw: &RawMachine) -> String {
    let Some(k) = &raw.kernel else {
        return "No [kernel] section: the kernel model cannot run on this preset.\n".into();
    };
    let mut out = format!(
        "kernel paths at {} MHz{}\n  source: {}\n",
        group(k.clock.mhz),
        if k.clock.unverified { " (UNVERIFIED)" } else { "" },
        k.clock.source
    );
    let mut t =
        Table::new(&["figure", "as written", "measured at", "scales with", "cycles", "", "source"]);
    for (name, f) in raw.kernel_figures() {
        let w = &f.written;
        let (written, at, scales) = match (w.cycles, w.ns, w.at_mhz, w.scales) {
            (Some(c), ..) => {
                (format!("{} cycles", group(c)), "this core".to_owned(), "—".to_owned())
            }
            (None, Some(ns), Some(m), Some(s)) => {
                (format!("{ns} ns"), format!("{} MHz", group(m)), s.name().to_owned())
            }
            _ => ("?".into(), "?".into(), "?".into()),
        };
        t.row(vec![
            name,
            written,
            at,
            scales,
            group(f.cycles),
            mark(f.unverified).into(),
            f.source.clone(),
        ]);
    }
    out += &t.render(0);
    if let Some(m) = &raw.mitigations {
        let paths: Vec<&str> = m.paths.keys().map(String::as_str).collect();
        out += &format!(
            "\nmitigations: {}\n  IBPB: {:?}{}; events held by: {} ({})\n",
            m.source,
            m.ibpb_mode,
            if m.ibpb_opted_in { ", every task opted in" } else { "" },
            if paths.is_empty() { "no figure".to_owned() } else { paths.join(", ") },
            m.paths_source
        );
    }
    if let Some(g) = &raw.guest {
        out.push('\n');
        let mut t = Table::new(&["guest fact", "value", "", "source"]);
        let mut fact = |name: &str, value: Option<(String, bool, &String)>| {
            if let Some((v, unverified, source)) = value {
                t.row(vec![name.to_owned(), v, mark(unverified).into(), source.clone()]);
            }
        };
        fact(
            "hypervisor",
            g.hypervisor.as_ref().map(|f| (f.value.clone(), f.unverified, &f.source)),
        );
        for (name, flag) in [
            ("pv_tlb_flush", &g.pv_tlb_flush),
            ("pv_send_ipi", &g.pv_send_ipi),
            ("posted_interrupts", &g.posted_interrupts),
            ("steal_time", &g.steal_time),
        ] {
            fact(name, flag.as_ref().map(|f| (yes(f.value).to_owned(), f.unverified, &f.source)));
        }
        fact("idle", g.idle.as_ref().map(|f| (f.value.name().to_owned(), f.unverified, &f.source)));
        out += &t.render(0);
    }
    out
}

/// The preset text with each `[kernel]`/`[guest]` figure's resolved cycles as a trailing comment
/// (`# = 410 cycles at 4,000 MHz`); a comment from an earlier run is replaced, so the text of a
/// file that `--toml` printed comes back unchanged.
fn annotate(text: &str, spec: &MachineSpec) -> String {
    let raw = spec.raw();
    let mhz = raw.kernel.as_ref().map_or(0, |k| k.clock.mhz);
    let figures = raw.kernel_figures();
    let mut section = String::new();
    let mut out = String::with_capacity(text.len() + 2048);
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let trimmed = body.trim_start();
        if trimmed.starts_with('[') {
            section = trimmed.trim_end().to_owned();
        }
        let body = body.split(RESOLVED_MARK).next().unwrap_or(body);
        // `key = { … }` inside `[kernel]` or `[guest]`, or a `[kernel.key]` table header (as
        // the host preset writes them).
        let name = if trimmed.starts_with('[') {
            section.trim_start_matches('[').split(']').next().unwrap_or("").to_owned()
        } else {
            let key = trimmed.split([' ', '=']).next().unwrap_or("");
            match section.as_str() {
                "[kernel]" => format!("kernel.{key}"),
                "[guest]" => format!("guest.{key}"),
                "[rar]" => format!("rar.{key}"),
                "[locks]" => format!("locks.{key}"),
                _ => String::new(),
            }
        };
        let figure = figures.iter().find(|(n, _)| *n == name);
        out.push_str(body);
        if let Some((_, f)) = figure {
            out.push_str(&format!("{RESOLVED_MARK}{} cycles at {} MHz", f.cycles, mhz));
        }
        out.push_str(newline);
    }
    out
}

/// The start of the comment [`annotate`] adds.
const RESOLVED_MARK: &str = "  # resolved: ";

fn mark(unverified: bool) -> &'static str {
    if unverified {
        "UNVERIFIED"
    } else {
        ""
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn show(spec: &MachineSpec) -> String {
    let raw = spec.raw();
    let f = &raw.features;
    let (bad, all) = unverified(raw);
    let mut out = format!(
        "{} — {}\nvendor {} · replacement {} · from {}\n{} of {} figures are UNVERIFIED (no primary source, or assumed).\n\n",
        raw.name,
        raw.description,
        raw.vendor,
        raw.replacement.name(),
        spec.origin(),
        bad,
        all
    );
    out += &format!(
        "features: PCID {} · INVPCID {} · INVLPGB {}{} · LA57 {} · page walkers {}\n  source: {}\n",
        yes(f.pcid),
        yes(f.invpcid),
        yes(f.invlpgb),
        f.invlpgb_count_max.map(|n| format!(" (invlpgb_count_max {n})")).unwrap_or_default(),
        yes(f.la57),
        f.page_walkers,
        f.source
    );
    out += &format!(
        "INVLPG drops paging-structure-cache entries {}\n  source: {}\n\n",
        match f.invlpg_psc_scope {
            PscScope::Pcid => "of the current PCID, whatever their address",
            PscScope::Address => "that translate the address only",
        },
        f.invlpg_psc_scope_source
    );
    if f.invlpg_tlb_scope == TlbScope::All {
        out += &format!(
            "INVLPG drops every TLB entry, globals and guest-physical translations too\n  source: {}\n\n",
            f.invlpg_tlb_scope_source
        );
    }
    let mut t = Table::new(&[
        "TLB structure",
        "level",
        "accesses",
        "page sizes",
        "entries",
        "ways",
        "sets",
        "",
        "source",
    ]);
    for s in &raw.tlb {
        let mut sizes: Vec<&str> = s.page_sizes.iter().map(|p| p.name()).collect();
        if s.splinter_1g {
            sizes.push("1g as 2m");
        }
        t.row(vec![
            s.name.clone(),
            s.level.to_string(),
            s.accesses.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
            sizes.join(","),
            group(u64::from(s.entries)),
            s.ways.to_string(),
            (s.entries / s.ways).to_string(),
            mark(s.unverified).into(),
            s.source.clone(),
        ]);
    }
    out += &t.render(0);
    out.push('\n');
    let mut t = Table::new(&["paging-structure cache", "entries", "ways", "", "source"]);
    for p in &raw.psc {
        t.row(vec![
            format!("{:?}", p.level).to_uppercase(),
            p.entries.to_string(),
            p.ways.to_string(),
            mark(p.unverified).into(),
            p.source.clone(),
        ]);
    }
    out += &t.render(0);
    out.push('\n');
    let mut t = Table::new(&["figure", "cycles", "", "source"]);
    for (name, fig) in raw.cycles_figures() {
        t.row(vec![name, group(fig.cycles), mark(fig.unverified).into(), fig.source.clone()]);
    }
    out += &t.render(0);
    out.push('\n');
    out += &kernel_tables(raw);
    out
}

fn toml_text(name: &str) -> Result<String> {
    if let Some((_, text)) = BUILTIN_PRESETS.iter().find(|(n, _)| *n == name) {
        return Ok(annotate(text, &builtin(name)?));
    }
    if name == super::HOST_PRESET {
        // The preset with the source of every figure as leading comments.
        let host = tlblab_host::host_spec()?;
        return Ok(annotate(&host.toml, &host.spec));
    }
    // Not built in: validate first, so a bad file gets the preset error, then print it.
    let spec = MachineSpec::load(name)?;
    let text = std::fs::read_to_string(name).with_context(|| format!("reading {name}"))?;
    Ok(annotate(&text, &spec))
}
