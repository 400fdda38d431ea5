//! Replays a recorded flush trace through the kernel model (`tlblab-kernel`) under several
//! policies, and sweeps `tlb_single_page_flush_ceiling` on it (study S10).
//!
//! A trace has the initiators' flush events, optionally context switches, and no memory
//! accesses. [`Plan::build`] turns it into simulated processes (one per thread group), threads
//! (one per thread id) with the times and CPUs they run on, and flush requests (reason 4 and
//! the following reason 3 or 2 of the same CPU and thread); the outcomes (reasons 0, 1, 5) are
//! left for the model to regenerate and are only compared. [`replay`] runs the plan under each
//! policy, and once more as a twin whose requests flush nothing, so that every cost is the
//! difference between the two. docs/replay.md states every inference.
//!
//! ```
//! use tlblab_flushtrace::{Flush, Header, Origin, Record};
//! use tlblab_kernel::Policy;
//! use tlblab_replay::{replay, ReplayOptions};
//!
//! // One thread on CPU 0 flushing one page, ten times, 100 µs apart.
//! let records = (0..10u64).map(|i| {
//!     Record::Flush(Flush { ts_ns: i * 100_000, cpu: 0, pid: 7, reason: 3, pages: 1 })
//! });
//! let spec = tlblab_sim::machine::builtin("skylake").unwrap();
//! let policy = Policy::named("linux-6.18").unwrap();
//! let report = replay(&Header::new(Origin::Recorded), records, &spec, &[policy], &ReplayOptions::default()).unwrap();
//! let p = &report.policies[0];
//! assert_eq!(p.requests_replayed, 10);
//! assert_eq!(p.ipis_sent, 0, "no other CPU runs the mm");
//! ```
#![deny(missing_docs)]

mod error;
mod options;
mod plan;
mod program;
mod render;
mod report;
mod run;

pub use error::ReplayError;
pub use options::{Refill, ReplayOptions};
pub use plan::{KindCounts, Plan, RequestSummary, ScheduleMode, TraceSummary, MAX_QUIET_NS};
pub use render::{render_replay, render_sweep};
pub use report::{
    Cost, PolicyReplay, ReasonRow, ReplayReport, Slip, SweepReport, BROADCAST_FLUSH, SCHEMA,
    SWEEP_SCHEMA,
};

use rayon::prelude::*;
use std::sync::Arc;
use tlblab_flushtrace::{Header, Record};
use tlblab_kernel::Policy;
use tlblab_sim::machine::MachineSpec;

/// The highest ceiling a replay handles: a censored request is replayed as a range one page
/// above the ceiling, and ranges are at most 65,536 pages.
pub const MAX_CEILING: u64 = plan::MAX_REQUEST_PAGES - 1;

fn censored_pages(policy: &Policy, ceiling: u64) -> Result<u64, ReplayError> {
    if ceiling > MAX_CEILING {
        return Err(ReplayError::CeilingTooHigh {
            policy: policy.shown(),
            ceiling,
            max: MAX_CEILING,
        });
    }
    Ok(ceiling + 1)
}

/// Replays `records` (in time order) under each policy, on machine `spec`.
pub fn replay(
    header: &Header,
    records: impl IntoIterator<Item = Record>,
    spec: &MachineSpec,
    policies: &[Policy],
    opts: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let plan = Arc::new(Plan::build(header, records, opts)?);
    replay_plan(&plan, header, spec, policies, opts)
}

/// [`replay`] of a plan already built (to replay one trace several times).
pub fn replay_plan(
    plan: &Arc<Plan>,
    header: &Header,
    spec: &MachineSpec,
    policies: &[Policy],
    opts: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    run::check_span(plan, spec)?;
    let jobs: Vec<(usize, bool)> =
        (0..policies.len()).flat_map(|p| [(p, false), (p, true)]).collect();
    let runs = jobs
        .par_iter()
        .map(|&(p, twin)| {
            let policy = &policies[p];
            let pages = censored_pages(policy, policy.tlb_single_page_flush_ceiling)?;
            let setup = run::setup(plan, spec, opts, pages, twin);
            run::run(plan, spec, policy, setup, opts.seed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let policies = policies
        .iter()
        .zip(runs.chunks(2))
        .map(|(policy, pair)| report::policy_replay(plan, header, policy, &pair[0], &pair[1]))
        .collect();
    Ok(ReplayReport {
        schema: SCHEMA,
        machine: spec.name().to_string(),
        trace: plan.summary.clone(),
        options: opts.clone(),
        assumptions: report::assumptions(plan, opts, header),
        policies,
    })
}

/// The twin of a ceiling sweep: the run whose requests flush nothing, laid out for ceilings up
/// to `top`. One twin serves every [`replay_point`] of the same plan, machine, seed and `top`.
pub struct Twin {
    top: u64,
    seed: u64,
    run: run::RunOutput,
}

/// The twin of [`replay_point`]s at ceilings up to `top` (a sweep's highest), under `policy`'s
/// other settings and `opts.seed`.
pub fn twin_run(
    plan: &Arc<Plan>,
    spec: &MachineSpec,
    policy: &Policy,
    top: u64,
    opts: &ReplayOptions,
) -> Result<Twin, ReplayError> {
    run::check_span(plan, spec)?;
    let pages = censored_pages(policy, top)?;
    let run = run::run(plan, spec, policy, run::setup(plan, spec, opts, pages, true), opts.seed)?;
    Ok(Twin { top, seed: opts.seed, run })
}

/// One row of a ceiling sweep made on its own: `plan` replayed under `policy` (whose
/// `tlb_single_page_flush_ceiling` is the point's), laid out as [`sweep_plan`] lays out a sweep
/// whose highest ceiling is `twin`'s, with costs against `twin`. The row is the one
/// [`sweep_plan`] gives for that ceiling; also returns the model's report of the run.
///
/// Errors: `policy`'s ceiling above the twin's `top`, or a seed other than the twin's.
pub fn replay_point(
    plan: &Arc<Plan>,
    header: &Header,
    spec: &MachineSpec,
    policy: &Policy,
    twin: &Twin,
    opts: &ReplayOptions,
) -> Result<(PolicyReplay, tlblab_kernel::stats::KernelReport), ReplayError> {
    let ceiling = policy.tlb_single_page_flush_ceiling;
    if ceiling > twin.top || opts.seed != twin.seed {
        return Err(ReplayError::TwinMismatch {
            ceiling,
            top: twin.top,
            seed: opts.seed,
            twin_seed: twin.seed,
        });
    }
    let pages = censored_pages(policy, twin.top)?;
    let r = run::run(plan, spec, policy, run::setup(plan, spec, opts, pages, false), opts.seed)?;
    let row = report::policy_replay(plan, header, policy, &r, &twin.run);
    Ok((row, r.kernel))
}

/// Replays `records` under `policy` with each `tlb_single_page_flush_ceiling` of `ceilings`
/// (S10: 1 to 512 on a realistic distribution of flush sizes). Censored requests are full at
/// every ceiling.
pub fn sweep_ceiling(
    header: &Header,
    records: impl IntoIterator<Item = Record>,
    spec: &MachineSpec,
    policy: &Policy,
    ceilings: &[u64],
    opts: &ReplayOptions,
) -> Result<SweepReport, ReplayError> {
    let plan = Arc::new(Plan::build(header, records, opts)?);
    sweep_plan(&plan, header, spec, policy, ceilings, opts)
}

/// [`sweep_ceiling`] of a plan already built.
pub fn sweep_plan(
    plan: &Arc<Plan>,
    header: &Header,
    spec: &MachineSpec,
    policy: &Policy,
    ceilings: &[u64],
    opts: &ReplayOptions,
) -> Result<SweepReport, ReplayError> {
    let top = *ceilings.iter().max().ok_or(ReplayError::EmptySweep)?;
    run::check_span(plan, spec)?;
    // One layout for every row, so that one twin (which flushes nothing, whatever the ceiling)
    // serves them all.
    let pages = censored_pages(policy, top)?;
    let with = |c: u64| Policy {
        name: format!("{} (ceiling {c})", policy.name),
        tlb_single_page_flush_ceiling: c,
        ..policy.clone()
    };
    let jobs: Vec<Option<u64>> =
        std::iter::once(None).chain(ceilings.iter().map(|&c| Some(c))).collect();
    let mut runs = jobs
        .par_iter()
        .map(|c| {
            let twin = c.is_none();
            let p = c.map_or_else(|| policy.clone(), with);
            run::run(plan, spec, &p, run::setup(plan, spec, opts, pages, twin), opts.seed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let twin = runs.remove(0);
    let rows = ceilings
        .iter()
        .zip(&runs)
        .map(|(&c, r)| {
            let mut row = report::policy_replay(plan, header, &with(c), r, &twin);
            row.policy = policy.name.clone();
            row
        })
        .collect();
    Ok(SweepReport {
        schema: SWEEP_SCHEMA,
        machine: spec.name().to_string(),
        policy: policy.name.clone(),
        trace: plan.summary.clone(),
        options: opts.clone(),
        assumptions: report::assumptions(plan, opts, header),
        rows,
    })
}
