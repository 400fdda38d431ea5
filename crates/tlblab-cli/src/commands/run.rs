//! `tlblab sim run`: one scenario under several policies, several seeds each. The runs and
//! the report are `tlblab_runs::run`; this module parses, renders and writes.

use crate::cli::RunArgs;
use crate::render::{self, group, Table};
use anyhow::Result;
use std::process::ExitCode;
use tlblab_kernel::{EffectStatus, Mechanism};
use tlblab_runs::{MechanismEffect, PolicyResult, RunReport, RunRequest};

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    args.output.check()?;
    let noise = super::noise_fraction(args.noise)?;
    let request = RunRequest {
        machine: args.machine.clone(),
        cpus: args.cpus,
        scenario: args.scenario.clone(),
        params: args.params.to_params(&args.scenario),
        policies: args.policies.clone(),
        seeds: args.seeds,
        first_seed: args.seed,
        without: args.without.mechanisms()?,
        explain: args.explain,
        noise,
    };
    let progress = crate::progress::Progress::new("", "runs", 0, false);
    let report = tlblab_runs::run(&request, &progress);
    progress.finish();
    let report = report?;
    if args.format.json() {
        args.output.emit_data(&report.to_json()?)?;
    } else {
        let description = tlblab_kernel::workloads::scenario(report.scenario)?.description;
        args.output.emit(&text(&report, description))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `tlblab sim mechanisms`: the switches, what each models and what off means.
pub fn list_mechanisms() -> Result<ExitCode> {
    let mut out = String::from(
        "The model's mechanisms (`tlblab sim run` or `sim study` `--without NAME[,NAME…]` switches\n\
         them off; `--explain` runs each policy, or each study part, with each off in turn):\n",
    );
    for &m in Mechanism::ALL {
        out += &format!(
            "\n{}\n  models: {}\n  off:    {}\n  doc:    {}\n",
            m.name(),
            m.description(),
            m.off_means(),
            m.doc()
        );
    }
    render::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn text(r: &RunReport, description: &str) -> String {
    let k = r.policies[0].values.len();
    let mut out = format!(
        "tlblab sim run: scenario {} on {} simulated CPUs of machine {}, {} seed(s) per policy\n  {}\n",
        r.scenario, r.cpus, r.machine, k, description
    );
    if !r.without.is_empty() {
        let names: Vec<&str> = r.without.iter().map(|m| m.name()).collect();
        out += &format!("  mechanisms off in every run: {}\n", names.join(", "));
    }
    out.push('\n');
    let better = if r.lower_is_better { "lower is better" } else { "higher is better" };
    let mut t = Table::new(&[
        "policy",
        &format!("{} (mean ± sd)", r.metric),
        "ratio to first [95% CI]",
        "verdict",
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
        let verdict = p.verdict.map_or("-".into(), |v| v.text(r.noise));
        let (ratio, significant) = match &p.ratio {
            Some(q) => (ratio_ci(q), verdict),
            None if std::ptr::eq(p, &r.policies[0]) => ("baseline".into(), "-".into()),
            None if k < 2 => ("one seed: no interval".into(), "-".into()),
            None => ("(no ratio)".into(), verdict),
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
    let verdicts = if k < 2 {
        "With one seed there is no interval and no verdict (--seeds 2 or more).".to_string()
    } else {
        format!(
            "Ratio: the geometric mean of the per-seed ratios\n  with its 95% log-t interval. Verdict: a change only when the interval excludes 1 and lies\n  wholly outside the {} noise band (--noise).",
            tlblab_stats::band(r.noise)
        )
    };
    out += &format!(
        "\n  {} ({}); per-op counts are from the first seed. {verdicts}\n  Events simulated in the first run: {}.\n",
        r.metric,
        better,
        group(r.policies[0].runs[0].events)
    );
    if k == 2 {
        out += "  warning: few seeds (2): each interval has 1 degree of freedom and is wide; use --seeds 3 or more\n";
    }
    for p in &r.policies {
        out += &format!("  {}: {}\n", p.policy.name, p.policy.mirrors);
    }
    for p in &r.policies {
        if let Some(effects) = &p.explanation {
            out += &explanation(r, p, effects);
        }
    }
    out
}

/// The `--explain` table of policy `p`, and what each mechanism models.
fn explanation(r: &RunReport, p: &PolicyResult, effects: &[MechanismEffect]) -> String {
    let all_on = if r.without.is_empty() { "all on" } else { "all others on" };
    let mut out = format!(
        "\n  {}: each mechanism off in turn, same seeds ({all_on}: {:.3} ± {:.3} {})\n",
        p.policy.name, p.mean, p.stddev, r.metric
    );
    let mut t = Table::new(&[
        "mechanism",
        &format!("{} off (mean ± sd)", r.metric),
        "change off − on",
        "ratio off/on [95% CI]",
        "effect of off",
    ]);
    for e in effects {
        let mut row = vec![e.mechanism.name().to_string()];
        match (e.status, e.mean, e.stddev, e.change) {
            (EffectStatus::Ran, Some(mean), Some(sd), Some(change)) => {
                let pct = e.change_pct.map_or("-".into(), |p| format!("{p:+.1}%"));
                let (ratio, significant) = match (&e.ratio, e.effect) {
                    (Some(q), Some(effect)) => (ratio_ci(q), effect.text(r.noise)),
                    _ if p.values.len() < 2 => ("one seed: no interval".into(), "-".into()),
                    _ => ("-".into(), "-".into()),
                };
                row.extend([
                    format!("{mean:.3} ± {sd:.3}"),
                    format!("{change:+.3} ({pct})"),
                    ratio,
                    significant,
                ]);
            }
            (EffectStatus::NotPresent, ..) => row.push("not present on this machine".into()),
            _ => row.push("off in every run (--without)".into()),
        }
        t.row(row);
    }
    out += &t.render(2);
    out += "\n";
    for e in effects {
        out += &format!("  {}: {}\n", e.mechanism.name(), e.description);
    }
    out
}

/// `point [low, high]` of a ratio, with enough decimals that an interval that excludes 1 does not
/// print as touching it.
fn ratio_ci(q: &tlblab_stats::RatioToBaseline) -> String {
    let (p, lo, hi) = (q.ci.point, q.ci.low, q.ci.high);
    let touches_one = |d: usize| {
        let one = format!("{:.d$}", 1.0);
        format!("{lo:.d$}") == one || format!("{hi:.d$}") == one
    };
    let d = if q.ci.contains(1.0) { 3 } else { (3..6).find(|&d| !touches_one(d)).unwrap_or(6) };
    format!("{p:.d$} [{lo:.d$}, {hi:.d$}]")
}
