//! `tlblab sim run`: one scenario under several policies, several seeds each.

use crate::cli::RunArgs;
use crate::render::{self, group, Table};
use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::process::ExitCode;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::workloads::{scenario, Params};
use tlblab_kernel::Policy;

/// The JSON output of `tlblab sim run`.
#[derive(Serialize)]
struct RunReport {
    schema: &'static str,
    tlblab_version: &'static str,
    machine: String,
    cpus: u16,
    scenario: &'static str,
    metric: &'static str,
    lower_is_better: bool,
    params: Params,
    policies: Vec<PolicyResult>,
}

#[derive(Serialize)]
struct PolicyResult {
    policy: Policy,
    /// The metric per seed, in seed order.
    values: Vec<f64>,
    mean: f64,
    stddev: f64,
    /// Mean of per-seed ratios to the baseline, with its 95% CI (absent for the baseline).
    ratio: Option<tlblab_stats::RatioToBaseline>,
    runs: Vec<KernelReport>,
}

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let spec = super::load_preset(&args.machine)?;
    let info = scenario(&args.scenario)?;
    let policies: Vec<Policy> =
        args.policies.iter().map(|p| Policy::load(p)).collect::<Result<_, _>>()?;
    let params = args.params.to_params();
    let jobs: Vec<(usize, u64)> =
        (0..policies.len()).flat_map(|p| (0..args.seeds).map(move |s| (p, s))).collect();
    // Each run is independent and deterministic; results are put back in job order.
    let reports: Vec<KernelReport> = jobs
        .par_iter()
        .map(|&(p, s)| -> Result<KernelReport> {
            let scenario = (info, &params);
            let mut kernel = super::scenario_kernel(
                &spec,
                &policies[p],
                args.cpus,
                args.seed + s,
                scenario,
                |_| {},
            )?;
            info.run(&mut kernel, &params);
            Ok(kernel.report())
        })
        .collect::<Result<_>>()?;
    let mut results = Vec::new();
    let mut reports = reports.into_iter();
    for policy in &policies {
        let runs: Vec<KernelReport> = reports.by_ref().take(args.seeds as usize).collect();
        let values: Vec<f64> = runs.iter().map(|r| info.metric.value(r)).collect();
        let ms = tlblab_stats::mean_std(&values).context("metric")?;
        results.push(PolicyResult {
            policy: policy.clone(),
            values,
            mean: ms.mean,
            stddev: ms.stddev,
            ratio: None,
            runs,
        });
    }
    if args.seeds >= 2 {
        let base = results[0].values.clone();
        for r in results.iter_mut().skip(1) {
            r.ratio = tlblab_stats::ratio_to_baseline(&r.values, &base, 0.95).ok();
        }
    }
    let report = RunReport {
        schema: "tlblab.sim.run/1",
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: spec.name().to_string(),
        cpus: args.cpus,
        scenario: info.name,
        metric: info.metric.unit(),
        lower_is_better: info.metric.lower_is_better(),
        params,
        policies: results,
    };
    if args.json {
        render::stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        render::stdout(&text(&report, info.description))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn text(r: &RunReport, description: &str) -> String {
    let k = r.policies[0].values.len();
    let mut out = format!(
        "tlblab sim run: scenario {} on {} simulated CPUs of machine {}, {} seed(s) per policy\n  {}\n\n",
        r.scenario, r.cpus, r.machine, k, description
    );
    let better = if r.lower_is_better { "lower is better" } else { "higher is better" };
    let mut t = Table::new(&[
        "policy",
        &format!("{} (mean ± sd)", r.metric),
        "ratio to first [95% CI]",
        "significant",
        "IPIs/op",
        "remote flushes/op",
        "full flushes/op",
        "walks/op",
    ]);
    for p in &r.policies {
        let run = &p.runs[0];
        let ops: u64 = run.tasks.iter().map(|t| t.ops).sum::<u64>().max(1);
        let per_op = |n: u64| render::ratio(n, ops, 2);
        let full = run.flush_sizes.by_pages.get(&-1).map_or(0, |e| e.0);
        let (ratio, significant) = match &p.ratio {
            Some(q) => (
                format!("{:.3} [{:.3}, {:.3}]", q.ratios.mean, q.ci.low, q.ci.high),
                if q.ci.low > 1.0 || q.ci.high < 1.0 { "yes" } else { "no" }.to_string(),
            ),
            None if std::ptr::eq(p, &r.policies[0]) => ("baseline".into(), "-".into()),
            None => ("(needs ≥ 2 seeds)".into(), "-".into()),
        };
        t.row(vec![
            p.policy.name.clone(),
            format!("{:.3} ± {:.3}", p.mean, p.stddev),
            ratio,
            significant,
            per_op(run.ipis_sent.iter().sum()),
            per_op(run.vmstat.nr_tlb_remote_flush_received),
            per_op(full),
            per_op(run.hw.page_walks.walks),
        ]);
    }
    out += &t.render(2);
    out += &format!(
        "\n  {} ({}); per-op counts are from the first seed. Significant: the 95% CI of the ratio\n  excludes 1. Events simulated in the first run: {}.\n",
        r.metric,
        better,
        group(r.policies[0].runs[0].events)
    );
    for p in &r.policies {
        out += &format!("  {}: {}\n", p.policy.name, p.policy.mirrors);
    }
    out
}
