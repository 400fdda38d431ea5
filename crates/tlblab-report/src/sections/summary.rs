//! The conclusions, before any detail: the machine and moment the results come from, one verdict
//! line per study part, the safety matrix in compact form, and the check of the model against
//! this machine's measurements with the configurations outside the agreement range flagged.
//!
//! Everything here is read from the results' own fields (a ratio's interval and its
//! `significant` verdict, a check's counts); nothing is computed afresh but the
//! simulated / measured ratio the host section also shows.

use serde_json::Value;

use super::check::Check;
use super::lab::{
    drift_list, outside, outside_both, Class, HostComparison, Row, AGREEMENT, SHAPE_AGREEMENT,
};
use crate::doc::{b, cell, t, Block, Cell, Document, Table, Tone};
use crate::fmt;
use crate::model::study::Study;

/// The noise band a verdict used when the result does not say (tlblab's default, `--noise`).
const DEFAULT_NOISE: f64 = 0.01;

/// The header's lines from an environment record (`tlblab_env::Environment` as saved) and the
/// date the results were taken; a field the record lacks says so.
pub fn header(env: Option<&Value>, date: Option<&str>) -> Vec<(String, String)> {
    let missing = "not recorded";
    let Some(env) = env else {
        return vec![
            ("machine".into(), "no environment record in these results".into()),
            ("date".into(), date.unwrap_or(missing).into()),
        ];
    };
    let avail = |v: &Value| -> Option<String> {
        match &v["available"] {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let reason = |v: &Value| v["unavailable"]["reason"].as_str().map(|r| format!("unknown ({r})"));
    let kernel = match (avail(&env["kernel_release"]), avail(&env["kernel_version"])) {
        (Some(r), Some(v)) => format!("{r} ({v})"),
        (Some(r), None) => r,
        _ => reason(&env["kernel_release"]).unwrap_or_else(|| missing.into()),
    };
    let mut cpu = avail(&env["cpu_model"])
        .or_else(|| reason(&env["cpu_model"]))
        .unwrap_or_else(|| missing.into());
    if let Some(online) = avail(&env["online_cpus"]) {
        cpu += &format!(", online CPUs {online}");
    }
    let hv = &env["hypervisor"];
    let hypervisor = match (avail(&hv["cpuid_vendor"]), &hv["cpuinfo_flag"]["available"]) {
        (Some(vendor), _) => {
            let name = match vendor.as_str() {
                "KVMKVMKVM" => "KVM".to_string(),
                "Microsoft Hv" => "Hyper-V".to_string(),
                "VMwareVMware" => "VMware".to_string(),
                "XenVMMXenVMM" => "Xen".to_string(),
                other => other.trim().to_string(),
            };
            let pv = &env["kvm_pv_tlb_flush"]["available"];
            let pv = match pv["expected_in_use"].as_bool() {
                Some(true) => ", paravirtual TLB flush in use",
                Some(false) if pv["offered"] == true => ", paravirtual TLB flush offered, not used",
                _ => "",
            };
            format!("{name} (CPUID vendor {vendor:?}){pv}")
        }
        (None, Value::Bool(false)) => "none (bare metal)".into(),
        (None, Value::Bool(true)) => "yes (vendor unknown)".into(),
        _ => missing.into(),
    };
    vec![
        ("kernel".into(), kernel),
        ("CPU".into(), cpu),
        ("hypervisor".into(), hypervisor),
        ("date".into(), date.unwrap_or(missing).into()),
        ("system load".into(), load(&env["system_load"])),
    ]
}

/// The load average at the start (and end) of the measurement and the competing processes, as
/// `tlblab_env::SystemLoad` saves them; results of a tlblab that did not record it say so.
fn load(v: &Value) -> String {
    let avg = |l: &Value| -> Option<String> {
        let l = &l["available"];
        Some(format!(
            "{:.2} {:.2} {:.2} (1/5/15 min), {} of {} tasks runnable",
            l["one"].as_f64()?,
            l["five"].as_f64()?,
            l["fifteen"].as_f64()?,
            l["runnable"].as_u64()?,
            l["total"].as_u64()?
        ))
    };
    let Some(start) = avg(&v["at_start"]) else {
        return match v["at_start"]["unavailable"]["reason"].as_str() {
            Some(r) => format!("not recorded ({r})"),
            None => "not recorded by the tlblab that took these results".into(),
        };
    };
    let mut out = format!("load average {start}");
    if let Some(end) = avg(&v["at_end"]) {
        out += &format!("; at the end {end}");
    }
    match v["competing"]["available"].as_array() {
        Some(list) if list.is_empty() => out += "; no competing process",
        Some(list) => {
            let names: Vec<String> = list
                .iter()
                .map(|p| {
                    format!(
                        "{} {:.0}%",
                        p["comm"].as_str().unwrap_or("?"),
                        p["cpu_percent"].as_f64().unwrap_or(f64::NAN)
                    )
                })
                .collect();
            out += &format!("; competing processes (% of a CPU): {}", names.join(", "));
        }
        None => {}
    }
    out
}

/// What the summary draws on.
pub struct Inputs<'a> {
    /// Every simulated study, in order.
    pub studies: Vec<&'a Study>,
    /// Every safety check.
    pub checks: Vec<&'a Check>,
    /// Measured beside simulated on this machine.
    pub hosts: Vec<&'a HostComparison>,
}

impl Inputs<'_> {
    /// Whether there is anything to summarise.
    pub fn is_empty(&self) -> bool {
        self.studies.is_empty() && self.checks.is_empty() && self.hosts.is_empty()
    }
}

/// The "Summary" section.
pub fn summary(doc: &mut Document, inputs: &Inputs) {
    doc.heading(2, "Summary");
    if !inputs.studies.is_empty() {
        verdicts(doc, &inputs.studies);
    }
    if !inputs.checks.is_empty() {
        safety_matrix(doc, &inputs.checks);
    }
    for h in &inputs.hosts {
        host_check(doc, h);
    }
}

/// One line per study part: each other policy against the baseline on the part's first
/// measure, its ratio with the interval, and the verdict the study recorded.
fn verdicts(doc: &mut Document, studies: &[&Study]) {
    let quick = studies.iter().any(|s| s.quick);
    let noise = studies.iter().find_map(|s| s.noise).unwrap_or(DEFAULT_NOISE);
    let band = format!("±{}%", pct(noise));
    let confidence = studies.first().map_or(0.95, |s| s.confidence);
    doc.para(vec![
        b("Simulated studies. "),
        t(format!(
            "Per part, on its first measure: each policy against the part's baseline, as the \
             ratio policy / baseline [its {:.0}% interval]; a change is a ratio whose interval \
             excludes 1 and lies beyond the {band} practical band, otherwise \"no change beyond \
             {band}\".{}",
            confidence * 100.0,
            if quick { " Quick settings: not the studies' figures." } else { "" }
        )),
    ]);
    let mut items = Vec::new();
    for s in studies {
        for part in &s.parts {
            let Some(info) = part.measures.first() else { continue };
            let base = &part.policies[0].policy.name;
            let better = if info.lower_is_better { "lower is better" } else { "higher is better" };
            let mut spans = vec![
                b(format!("{} {}", s.short.to_uppercase(), part.label)),
                t(format!(
                    " ({}, {} CPUs), {} ({better}), against {base}: ",
                    part.machine.name, part.cpus, info.label
                )),
            ];
            let mut lines = Vec::new();
            for pol in &part.policies[1..] {
                let m = &pol.measures[0];
                lines.push(match &m.ratio {
                    Some(r) => {
                        let ratio = r.ratios.mean;
                        let verdict = match m.significant {
                            Some(true) => {
                                let higher = ratio > 1.0;
                                let good = higher != info.lower_is_better;
                                format!(
                                    "{}% {} ({}), beyond {band}",
                                    pct(ratio - 1.0),
                                    if higher { "higher" } else { "lower" },
                                    if good { "better" } else { "worse" }
                                )
                            }
                            _ => format!("no change beyond {band}"),
                        };
                        format!(
                            "{} {}: {verdict}",
                            pol.policy.name,
                            fmt::ratio_ci(ratio, r.ci.low, r.ci.high, false)
                        )
                    }
                    None => format!(
                        "{}: no ratio ({})",
                        pol.policy.name,
                        m.note.as_deref().unwrap_or("fewer than two seeds")
                    ),
                });
            }
            if lines.is_empty() {
                lines.push("one policy only".into());
            }
            spans.push(t(lines.join("; ")));
            items.push(spans);
        }
        for n in &s.not_run {
            items.push(vec![
                b(format!("{} {}", s.short.to_uppercase(), n.label)),
                t(format!(": not run ({})", n.reason)),
            ]);
        }
    }
    doc.push(Block::List(items));
}

/// `fraction` as an unsigned percentage: 1, 0.21, 23.1, 2296.
fn pct(fraction: f64) -> String {
    let p = (fraction * 100.0).abs();
    let d = match p {
        p if (p - p.round()).abs() < 1e-9 => 0,
        p if p >= 100.0 => 0,
        p if p >= 10.0 => 1,
        _ => 2,
    };
    format!("{p:.d$}")
}

/// A count in at most five characters: 4,789 · 17.6k · 557k · 1.39M.
fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => fmt::group(n),
        10_000..=999_999 => {
            let k = n as f64 / 1e3;
            if k < 100.0 {
                format!("{k:.1}k")
            } else {
                format!("{k:.0}k")
            }
        }
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// The stale uses inside a declared deferral's windows, summed over user and kernel mappings;
/// `None` when the policy declares a deferral whose uses the model does not count.
fn declared_uses(ch: &Check) -> Option<Option<u64>> {
    let e = ch.exposure.as_ref()?;
    if e["declared"].as_array().is_none_or(|d| d.is_empty()) {
        return None;
    }
    let uses: Vec<Option<u64>> = ["user", "kernel"]
        .iter()
        .filter(|k| !e[**k].is_null())
        .map(|k| e[*k]["uses"].as_u64())
        .collect();
    if uses.is_empty() || uses.iter().any(Option::is_none) {
        return Some(None);
    }
    Some(Some(uses.into_iter().flatten().sum()))
}

/// Policies down, checked scenarios across (numbered, with a legend), one short verdict a cell.
fn safety_matrix(doc: &mut Document, checks: &[&Check]) {
    let mut policies: Vec<&str> = Vec::new();
    let mut columns: Vec<&Check> = Vec::new();
    for ch in checks {
        if !policies.contains(&ch.policy_name()) {
            policies.push(ch.policy_name());
        }
        if !columns.iter().any(|c| c.same_setup(ch)) {
            columns.push(ch);
        }
    }
    let schedules: u64 = checks.iter().map(|c| c.schedules).max().unwrap_or(0);
    let legend: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!("{} {}, {} CPUs, {} pages", i + 1, c.scenario, c.cpus, c.params["pages"])
        })
        .collect();
    let mut head = vec!["policy".to_string()];
    head.extend((1..=columns.len()).map(|i| i.to_string()));
    let mut table = Table::new(&head);
    let (mut unsafe_shipped, mut missed_bad) = (Vec::new(), Vec::new());
    for policy in &policies {
        let bad = policy.starts_with("bad-");
        let mut row = vec![Cell::from(policy.to_string())];
        let mut any_violation = false;
        for col in &columns {
            let found = checks.iter().find(|c| c.policy_name() == *policy && c.same_setup(col));
            row.push(match found {
                None => cell("-", Tone::Missing),
                Some(c) if c.violations > 0 => {
                    any_violation = true;
                    cell(format!("V {}", short_count(c.violations)), Tone::Significant)
                }
                Some(c) => match declared_uses(c) {
                    None => "ok".into(),
                    Some(Some(n)) => format!("D {}", short_count(n)).into(),
                    Some(None) => "D ?".into(),
                },
            });
        }
        if any_violation && !bad {
            unsafe_shipped.push(policy.to_string());
        }
        if !any_violation && bad {
            missed_bad.push(policy.to_string());
        }
        table.row(row);
    }
    let shipped = policies.iter().filter(|p| !p.starts_with("bad-")).count();
    let bad = policies.len() - shipped;
    let mut verdict = match unsafe_shipped.is_empty() {
        true => format!("No violation in any of the {shipped} shipped policies"),
        false => format!("VIOLATIONS in shipped policies: {}", unsafe_shipped.join(", ")),
    };
    if bad > 0 {
        verdict += &match missed_bad.is_empty() {
            true if bad == 1 => "; the known-bad variant caught".to_string(),
            true => format!("; all {bad} known-bad variants caught"),
            false => format!("; known-bad variants NOT caught: {}", missed_bad.join(", ")),
        };
    }
    doc.para(vec![
        b("Safety. "),
        t(format!(
            "{verdict} ({} scenarios, up to {} perturbed schedules each).",
            columns.len(),
            fmt::group(schedules)
        )),
    ]);
    doc.table(table.note(format!(
        "Scenarios: {}. ok: no violation; V n: n violations (stale uses after the operation \
         returned); D n: no violation, and n stale uses inside the windows of a deferral the \
         policy declares (exposure by design, not hidden); D ?: a declared deferral on kernel \
         mappings, whose uses the model does not count. bad-…: known-bad variants the checker \
         must catch. Full counts and witnesses: the Safety section.",
        legend.join("; ")
    )));
}

/// The measured configurations beside their simulation on the host preset, with those whose
/// ratio lies outside ± [`AGREEMENT`] flagged. Only the predicted ones count as evidence: a
/// calibrated configuration is mostly a loop the host preset measured, so its agreement is
/// listed apart, with the loop and its share. Results without the classification (older files)
/// are counted as they were, and say so.
fn host_check(doc: &mut Document, h: &HostComparison) {
    let band = format!("±{:.0}%", AGREEMENT * 100.0);
    let table_of = |rows: &[&Row], with_share: bool| {
        // With the loop share, the flag joins the ratio (OUT) to keep within 80 columns.
        let mut header = vec!["configuration", "measured", "simulated", "sim/meas"];
        header.push(if with_share { "loop share" } else { "range" });
        let mut table = Table::new(&header).numeric_from(1);
        for r in rows {
            let (m, s) = (r.measured_mean(), r.simulated_mean());
            let ratio = r.ratio();
            let within = ratio.map(super::lab::within_band);
            let flag = match within {
                Some(true) => cell("within", Tone::Plain),
                Some(false) => cell("OUTSIDE", Tone::Significant),
                None => cell("-", Tone::Missing),
            };
            let ratio = match (ratio, within) {
                (Some(x), Some(false)) if with_share => {
                    cell(format!("{x:.2} OUT"), Tone::Significant)
                }
                (Some(x), _) => format!("{x:.2}").into(),
                _ => cell("-", Tone::Missing),
            };
            let mut cells: Vec<Cell> = vec![
                r.name.clone().into(),
                m.map_or_else(
                    || cell("-", Tone::Missing),
                    |m| format!("{} {}", fmt::num(m), r.unit).into(),
                ),
                s.map_or_else(|| cell("-", Tone::Missing), |s| fmt::num(s).into()),
                ratio,
            ];
            if !with_share {
                cells.push(flag);
            } else {
                cells.push(match &r.class {
                    Class::Unclassified(_) | Class::Predicted { largest: None } => {
                        cell("-", Tone::Missing)
                    }
                    class => class.share_text().into(),
                });
            }
            table.row(cells);
        }
        table
    };
    let (predicted, calibrated) = (h.rows_of("predicted"), h.rows_of("calibrated"));
    if predicted.is_empty() && calibrated.is_empty() {
        let all: Vec<&Row> = h.rows.iter().collect();
        let (outside, compared) = outside(&all);
        doc.para(vec![
            b("Simulated against measured on this machine. "),
            t(format!(
                "{outside} of {compared} configurations outside the {band} range of simulated / \
                 measured ({} on the host preset; means of the runs and of the seeds). Not \
                 classified into calibrated and predicted (results written before the \
                 classification): some of these may be loops the host preset measured.",
                h.policy
            )),
        ]);
        doc.table(table_of(&all, false).note(format!(
            "OUTSIDE: the model is more than {band} off on this machine for that configuration \
             (a cost or a mechanism it lacks here, e.g. IPIs through a hypervisor); the full \
             table with spreads and intervals is in \"Simulated and measured on this machine\"."
        )));
        let explained: Vec<&Row> = all.iter().copied().chain(&h.peers).collect();
        super::lab::gaps_list(doc, &explained);
        return;
    }
    let (out_p, compared_p) = outside(&predicted);
    // With two calibrations: how many of those outside stay outside on both.
    let both = |rows: &[&Row], out: usize| match h.calibrations.len() {
        2 if out > 0 => {
            format!(" ({} on both presets, before and after the live part)", outside_both(rows))
        }
        _ => String::new(),
    };
    let shapes: Vec<_> = h.shapes.iter().filter_map(|s| s.figures(&h.rows)).collect();
    let shapes_within = shapes.iter().filter(|f| f.within()).count();
    let shapes_both = match h.calibrations.len() {
        2 if shapes_within < shapes.len() => {
            format!(" ({} outside on both presets)", super::lab::shapes_outside_both(&shapes))
        }
        _ => String::new(),
    };
    let peers: Vec<&Row> = h.peers.iter().collect();
    let (out_peers, compared_peers) = outside(&peers);
    doc.para(vec![
        b("Simulated against measured on this machine (predicted configurations). "),
        t(format!(
            "{out_p} of {compared_p} predicted configurations outside the {band} range of \
             simulated / measured{} ({} on the host preset; means of the runs and of the seeds); \
             {shapes_within} of {} shapes within ±{:.0}%{shapes_both}{}. These are the evidence: \
             no loop the host preset measured is most of their simulated value.",
            both(&predicted, out_p),
            h.policy,
            shapes.len(),
            SHAPE_AGREEMENT * 100.0,
            if compared_peers > 0 {
                let both = both(&peers, out_peers);
                format!("; peers: {out_peers} of {compared_peers} outside {band}{both}")
            } else {
                String::new()
            }
        )),
    ]);
    if !predicted.is_empty() {
        doc.table(table_of(&predicted, true).note(format!(
            "OUT: the model is more than {band} off on this machine for that configuration (a \
             cost or a mechanism it lacks here); loop share: the measured loop with the largest \
             share of the simulated value. Shapes, peers and the full tables: \"Simulated and \
             measured on this machine\"."
        )));
    }
    // The evidence: the predicted rows and the peers.
    let evidence: Vec<&Row> = predicted.iter().copied().chain(&h.peers).collect();
    drift_list(doc, &evidence, &h.calibrations);
    super::lab::gaps_list(doc, &evidence);
    super::lab::shape_drift_list(doc, &h.shapes, &h.rows);
    super::lab::shape_gaps_list(doc, &h.shapes, &h.rows);
    if !calibrated.is_empty() {
        let (out_c, compared_c) = outside(&calibrated);
        let both = both(&calibrated, out_c);
        doc.para(vec![
            b("Calibrated configurations (not evidence). "),
            t(format!(
                "{out_c} of {compared_c} outside {band}{both}: each is mostly one loop the host \
                 preset timed alone on this machine (the loop share), so agreement tests the \
                 measurement, not the model."
            )),
        ]);
        doc.table(table_of(&calibrated, true));
        drift_list(doc, &calibrated, &h.calibrations);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_short() {
        let got: Vec<String> =
            [0, 4_789, 17_609, 556_663, 1_389_684].into_iter().map(short_count).collect();
        assert_eq!(got, ["0", "4,789", "17.6k", "557k", "1.39M"]);
    }

    #[test]
    fn the_header_names_each_field_or_says_it_is_missing() {
        let env = serde_json::json!({
            "kernel_release": {"available": "6.18.4"},
            "kernel_version": {"available": "#1 SMP"},
            "cpu_model": {"available": "AMD EPYC"},
            "online_cpus": {"available": "0-1"},
            "hypervisor": {"cpuid_vendor": {"available": "KVMKVMKVM"},
                           "cpuinfo_flag": {"available": true}},
            "system_load": {"at_start": {"available":
                {"one": 0.5, "five": 0.25, "fifteen": 0.0, "runnable": 2, "total": 100}},
                "competing": {"available": [{"pid": 7, "comm": "cc1", "cpu_percent": 99.6}]}}
        });
        let h = header(Some(&env), Some("2026-11-25T23:00:00Z"));
        let get = |k: &str| h.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap();
        assert_eq!(get("kernel"), "6.18.4 (#1 SMP)");
        assert_eq!(get("CPU"), "AMD EPYC, online CPUs 0-1");
        assert!(get("hypervisor").starts_with("KVM"), "{}", get("hypervisor"));
        assert_eq!(get("date"), "2026-11-25T23:00:00Z");
        assert_eq!(
            get("system load"),
            "load average 0.50 0.25 0.00 (1/5/15 min), 2 of 100 tasks runnable; competing \
             processes (% of a CPU): cc1 100%"
        );
        let old = header(Some(&serde_json::json!({})), None);
        assert!(old.iter().any(|(k, v)| k == "system load" && v.starts_with("not recorded")));
        assert!(old.iter().any(|(k, v)| k == "date" && v == "not recorded"));
    }
}
