//! `tlblab sim demo`: the built-in workloads through one machine's TLB model.

use super::{load_machine, machine_line, BadInput};
use crate::cli::DemoArgs;
use crate::render::{group, percent, ratio, Table};
use anyhow::Result;
use serde::Serialize;
use std::process::ExitCode;
use tlblab_sim::stats::{HwReport, HwStats};
use tlblab_sim::workload::Workload;
use tlblab_sim::System;

/// The JSON output of `tlblab sim demo`.
#[derive(Serialize)]
struct DemoReport {
    schema: &'static str,
    tlblab_version: &'static str,
    machine: super::trace::MachineInfo,
    seed: u64,
    accesses_per_workload: u64,
    workloads: Vec<WorkloadReport>,
}

#[derive(Serialize)]
struct WorkloadReport {
    name: &'static str,
    description: &'static str,
    stats: HwReport,
}

pub fn run(args: &DemoArgs) -> Result<ExitCode> {
    args.output.check()?;
    let spec = load_machine(&args.machine)?;
    let workloads = if args.workloads.is_empty() {
        Workload::ALL.to_vec()
    } else {
        args.workloads
            .iter()
            .map(|name| {
                Workload::from_name(name).ok_or_else(|| {
                    let known: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
                    BadInput(format!("no built-in workload {name:?} (known: {})", known.join(", ")))
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut results: Vec<(Workload, HwStats)> = Vec::new();
    for w in workloads {
        let mut system = System::new(&spec);
        let mut generator = w.generator(args.accesses, args.seed);
        let mut batch = Vec::with_capacity(4096);
        while generator.fill(&mut batch, 4096) {
            system.apply_all(&batch)?;
        }
        results.push((w, system.total()));
    }
    if args.format.json() {
        let report = DemoReport {
            schema: "tlblab.sim.demo/1",
            tlblab_version: env!("CARGO_PKG_VERSION"),
            machine: super::trace::MachineInfo::of(&spec),
            seed: args.seed,
            accesses_per_workload: args.accesses,
            workloads: results
                .iter()
                .map(|(w, s)| WorkloadReport {
                    name: w.name(),
                    description: w.description(),
                    stats: s.report(&spec),
                })
                .collect(),
        };
        args.output.emit_data(&(serde_json::to_string_pretty(&report)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    args.output.emit(&render(&spec, args, &results))?;
    Ok(ExitCode::SUCCESS)
}

fn render(
    spec: &tlblab_sim::machine::MachineSpec,
    args: &DemoArgs,
    results: &[(Workload, HwStats)],
) -> String {
    let mut out = format!(
        "tlblab sim demo: {}\n{} accesses per workload, seed {}. Counts are exact (deterministic model);\n\
         cycles are the model's translation overhead beyond L1 hits, from the preset's latencies.\n\n",
        machine_line(spec),
        group(args.accesses),
        args.seed
    );
    let mut t = Table::new(&[
        "workload",
        "L1 hit rate",
        "STLB hits",
        "page walks",
        "walks/1k acc",
        "cycles/access",
        "CR3 writes",
        "TLB entries flushed",
    ]);
    for (w, s) in results {
        let total = s.total_accesses();
        let l1_hits: u64 = total - s.misses.iter().map(|m| m.l1_miss).sum::<u64>();
        let stlb: u64 = s.misses.iter().map(|m| m.stlb_hit).sum();
        let cycles: u64 = s.misses.iter().map(|m| m.translation_cycles).sum();
        let cr3 = s.ops[tlblab_sim::stats::OpKind::MovCr3.index()].count
            + s.ops[tlblab_sim::stats::OpKind::MovCr3Noflush.index()].count;
        let dropped: u64 = s.ops.iter().map(|o| o.tlb_entries_dropped).sum();
        t.row(vec![
            w.name().into(),
            percent(l1_hits, total),
            group(stlb),
            group(s.total_walks()),
            ratio(s.total_walks() * 1000, total, 2),
            ratio(cycles, total, 3),
            group(cr3),
            group(dropped),
        ]);
    }
    out += &t.render(2);
    out.push('\n');
    for (w, _) in results {
        out += &format!("  {:<18} {}\n", w.name(), w.description());
    }
    let find = |w: Workload| results.iter().find(|(x, _)| *x == w).map(|(_, s)| s);
    if let (Some(pcid), Some(nopcid)) =
        (find(Workload::CtxSwitchPcid), find(Workload::CtxSwitchNoPcid))
    {
        out += &format!(
            "\nPCID: the same two processes walk {} times with PCID (NOFLUSH switches keep both working\n\
             sets) and {} times without (every MOV to CR3 flushes), {} as many.\n",
            group(pcid.total_walks()),
            group(nopcid.total_walks()),
            match ratio(nopcid.total_walks(), pcid.total_walks(), 1).as_str() {
                "-" => "infinitely".to_string(),
                r => format!("{r}×"),
            }
        );
    }
    out += "\nRun your own trace: tlblab sim trace FILE (see tlblab sim trace --help).\n";
    out
}
