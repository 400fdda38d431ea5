//! A built-in study as a sweep spec: one `[[sweep]]` per part, its policies on the `policy` axis
//! with the part's first policy as the baseline, its measures, the study's seeds. Running the
//! spec gives each run's values exactly as `tlblab sim study` does (the same kernel model, the
//! same measures, the same seeds).

use std::fmt::Write;
use tlblab_kernel::workloads::StormOp;
use tlblab_studies::{Size, Study};

/// The spec of `study` at `size` (`tlblab sweep --print-study NAME`), or why a sweep spec
/// cannot say what the study runs: a part that sets a guest preset's host (S9), hackbench's
/// parameters (S7) or reports the safety checker's verdict (S8).
pub fn spec_of(study: &Study, size: Size) -> Result<String, String> {
    if let Some(part) = study.parts(size).iter().find(|p| p.guest.is_some()) {
        return Err(format!(
            "{} cannot be printed as a sweep spec: its part {:?} sets the host of its guest preset ({}), which a sweep has no axis for; run it with `tlblab sim study {}`",
            study.name,
            part.label,
            part.guest.map(|g| g.label()).unwrap_or_default(),
            study.short
        ));
    }
    let defaults = tlblab_kernel::workloads::Params::default();
    for part in study.parts(size) {
        let p = &part.params;
        let why = if (p.groups, p.fds, p.loops, p.datasize, p.pipe)
            != (defaults.groups, defaults.fds, defaults.loops, defaults.datasize, defaults.pipe)
        {
            Some("sets hackbench's parameters (groups, fds, loops, datasize, pipe)")
        } else if part.measures.iter().any(|m| m.checked()) {
            Some("reports the safety checker's verdict beside its runs")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!(
                "{} cannot be printed as a sweep spec: its part {:?} {why}, which a sweep has no axis or measure for; run it with `tlblab sim study {}`",
                study.name, part.label, study.short
            ));
        }
    }
    let mut out = format!(
        "# {} ({}): {}\n# mirrors {}\nname = {:?}\nseeds = {}\nfirst_seed = 1\n",
        study.name,
        match size {
            Size::Full => "full settings",
            Size::Quick => "quick settings",
        },
        study.title,
        study.mirrors,
        study.name,
        study.default_seeds
    );
    for part in study.parts(size) {
        let p = &part.params;
        let list = |v: &[&str]| v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
        let measures: Vec<&str> = part.measures.iter().map(|m| m.key()).collect();
        // S10: a trace replay is not a scenario a sweep can run.
        if part.scenario.starts_with("replay:") {
            let _ = write!(
                out,
                "\n# part {:?} replays a shipped trace ({}): not a sweep scenario; `tlblab sim replay FILE --ceiling ...` sweeps a trace\n",
                part.label, part.scenario
            );
            continue;
        }
        // S10's ceiling axis: one kernel at several ceilings (`BASE@ceiling=N`).
        let ceilings: Option<Vec<(&str, &str)>> =
            part.policies.iter().map(|q| q.split_once("@ceiling=")).collect();
        let axis = match ceilings {
            Some(c) => format!(
                "policy = {:?}\nceiling = [{}]\nbaseline = {{ ceiling = {} }}",
                c[0].0,
                c.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", "),
                c[0].1
            ),
            None => format!(
                "policy = [{}]\nbaseline = {{ policy = {:?} }}",
                list(&part.policies),
                part.policies[0]
            ),
        };
        let _ = write!(
            out,
            "\n[[sweep]]\nlabel = {:?}\nmachine = {:?}\ncpus = {}\nscenario = {:?}\n{axis}\nmeasures = [{}]\n",
            part.label,
            part.machine,
            part.cpus,
            part.scenario,
            list(&measures),
        );
        let _ = write!(
            out,
            "iterations = {}\ntouch = {}\nbusy = {}\ntasks = {}\nmode = {:?}\nop = {:?}\npages = {}\ncycles_per_page = {}\njobs = {}\nwindow_ms = {}\nburst_us = {}\nwarmup_ms = {}\n",
            p.iterations,
            p.touch,
            p.busy,
            p.tasks,
            if p.threads { "threads" } else { "processes" },
            match p.op {
                StormOp::Munmap => "munmap",
                StormOp::Mprotect => "mprotect",
            },
            p.pages,
            p.cycles_per_page,
            p.jobs,
            p.window_ms,
            p.burst_us,
            p.warmup_ms
        );
    }
    Ok(out)
}
