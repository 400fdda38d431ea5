//! `tlblab sim run`: one scenario under several policies, several seeds each.

use crate::cli::RunArgs;
use crate::render::{self, group, Table};
use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::process::ExitCode;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::workloads::{scenario, Params};
use tlblab_kernel::{EffectStatus, Mechanism, Policy};
use tlblab_stats::{judge, Effect, Verdict};

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
    /// The mechanisms off in every run (`--without`).
    without: Vec<Mechanism>,
    /// The noise band (`--noise`, a fraction): a difference inside it is never a change.
    noise: f64,
    policies: Vec<PolicyResult>,
}

#[derive(Serialize)]
struct PolicyResult {
    policy: Policy,
    /// The metric per seed, in seed order.
    values: Vec<f64>,
    mean: f64,
    stddev: f64,
    /// Per-seed ratios to the baseline, with the 95% log-ratio interval (absent for the
    /// baseline and with one seed).
    ratio: Option<tlblab_stats::RatioToBaseline>,
    /// The verdict against the baseline (absent for the baseline itself).
    verdict: Option<Verdict>,
    /// With `--explain`: the metric with each mechanism off in turn, beside these runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<Vec<MechanismEffect>>,
    runs: Vec<KernelReport>,
}

/// One mechanism's part in a policy's metric: the runs with it off against those with it on.
#[derive(Serialize)]
struct MechanismEffect {
    mechanism: Mechanism,
    description: &'static str,
    status: EffectStatus,
    /// The metric per seed with the mechanism off (empty unless it ran).
    values: Vec<f64>,
    mean: Option<f64>,
    stddev: Option<f64>,
    /// Mean with it off less mean with it on.
    change: Option<f64>,
    /// `change` as a percentage of the mean with it on.
    change_pct: Option<f64>,
    /// Per-seed ratios off / on, with the 95% log-ratio interval (≥ 2 seeds).
    ratio: Option<tlblab_stats::RatioToBaseline>,
    /// What switching the mechanism off does to the metric: higher, lower, within the noise
    /// band, not significant, or no interval (one seed).
    effect: Option<Effect>,
    /// Whether that is a change: the interval excludes 1 and lies wholly outside the band.
    significant: Option<bool>,
}

/// The ratio of `values` to `base` (paired by seed) and its effect by the one verdict rule;
/// no ratio with fewer than 2 seeds or a zero in `base` (then the effect is `NoInterval`).
fn paired_ratio(
    values: &[f64],
    base: &[f64],
    noise: f64,
) -> (Option<tlblab_stats::RatioToBaseline>, Effect) {
    let q = tlblab_stats::ratio_to_baseline(values, base, 0.95).ok();
    (q, judge(q.as_ref().map(|q| &q.ci), None, 0.05, noise))
}

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    args.output.check()?;
    let noise = super::noise_fraction(args.noise)?;
    let spec = super::load_preset(&args.machine)?;
    let info = scenario(&args.scenario)?;
    let policies: Vec<Policy> =
        args.policies.iter().map(|p| Policy::load(p)).collect::<Result<_, _>>()?;
    let base = args.without.mechanisms()?;
    let params = args.params.to_params();
    // The runs of each policy: with `base`, then (with --explain) with each mechanism that is
    // on and present also off.
    let mut variants = vec![(None, base)];
    if args.explain {
        variants.extend(
            Mechanism::ALL
                .iter()
                .filter(|&&m| base.is_on(m) && m.present_for(&spec, policies.iter()))
                .map(|&m| (Some(m), base.without(m))),
        );
    }
    let jobs: Vec<(usize, usize, u64)> = (0..policies.len())
        .flat_map(|p| {
            (0..variants.len()).flat_map(move |v| (0..args.seeds).map(move |s| (p, v, s)))
        })
        .collect();
    // Each run is independent and deterministic; results are put back in job order. Only the
    // runs with `base` keep their report.
    let progress = crate::progress::Progress::new(info.name, "runs", jobs.len() as u64, false);
    let outcomes: Vec<(f64, Option<KernelReport>)> = jobs
        .par_iter()
        .map(|&(p, v, s)| -> Result<(f64, Option<KernelReport>)> {
            let scenario = (info, &params);
            let run = (args.cpus, args.seed + s, variants[v].1);
            let mut kernel = super::scenario_kernel(&spec, &policies[p], run, scenario, |_| {})?;
            info.run(&mut kernel, &params);
            let report = kernel.report();
            progress.inc();
            Ok((info.metric.value(&report), (v == 0).then_some(report)))
        })
        .collect::<Result<_>>()?;
    progress.finish();
    let mut results = Vec::new();
    let mut outcomes = outcomes.into_iter();
    for policy in &policies {
        let mut per_variant: Vec<(Vec<f64>, Vec<KernelReport>)> = Vec::new();
        for _ in &variants {
            let (values, runs) =
                outcomes.by_ref().take(args.seeds as usize).unzip::<_, _, _, Vec<_>>();
            per_variant.push((values, runs.into_iter().flatten().collect()));
        }
        let mut per_variant = per_variant.into_iter();
        let (values, runs) = per_variant.next().expect("the base variant");
        let ms = tlblab_stats::mean_std(&values).context("metric")?;
        let explanation = args.explain.then(|| {
            let mut ran = per_variant.map(|(v, _)| v);
            Mechanism::ALL
                .iter()
                .map(|&m| {
                    let status = m.effect_status(base, m.present_for(&spec, policies.iter()));
                    let off = if status == EffectStatus::Ran {
                        ran.next().expect("a run per mechanism that ran")
                    } else {
                        Vec::new()
                    };
                    effect(m, status, off, &values, ms.mean, noise)
                })
                .collect()
        });
        results.push(PolicyResult {
            policy: policy.clone(),
            values,
            mean: ms.mean,
            stddev: ms.stddev,
            ratio: None,
            verdict: None,
            explanation,
            runs,
        });
    }
    let base_values = results[0].values.clone();
    let lower_is_better = info.metric.lower_is_better();
    for r in results.iter_mut().skip(1) {
        let (ratio, effect) = paired_ratio(&r.values, &base_values, noise);
        r.ratio = ratio;
        r.verdict = Some(Verdict::of(effect, lower_is_better));
    }
    let report = RunReport {
        schema: "tlblab.sim.run/1",
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: spec.name().to_string(),
        cpus: args.cpus,
        scenario: info.name,
        metric: info.metric.unit(),
        lower_is_better,
        params,
        without: base.off(),
        noise,
        policies: results,
    };
    if args.format.json() {
        args.output.emit(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        args.output.emit(&text(&report, info.description))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Mechanism `m`'s effect: `off`, the metric per seed with it off (empty unless it ran),
/// against `on` (mean `on_mean`).
fn effect(
    m: Mechanism,
    status: EffectStatus,
    off: Vec<f64>,
    on: &[f64],
    on_mean: f64,
    noise: f64,
) -> MechanismEffect {
    let ms = tlblab_stats::mean_std(&off).ok();
    let change = ms.map(|ms| ms.mean - on_mean);
    let (ratio, effect) = paired_ratio(&off, on, noise);
    let effect = (status == EffectStatus::Ran).then_some(effect);
    MechanismEffect {
        mechanism: m,
        description: m.description(),
        status,
        mean: ms.map(|ms| ms.mean),
        stddev: ms.map(|ms| ms.stddev),
        change,
        change_pct: change.filter(|_| on_mean != 0.0).map(|c| 100.0 * c / on_mean),
        ratio,
        effect,
        significant: effect.filter(|e| *e != Effect::NoInterval).map(Effect::is_change),
        values: off,
    }
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
