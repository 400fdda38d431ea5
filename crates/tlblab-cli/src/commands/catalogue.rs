//! `tlblab sim scenarios` and `tlblab sim policies [show NAME [--toml]]`: what the built-in
//! names are, so that a user need not read the source to find them.

use crate::cli::{PoliciesArgs, PoliciesCommand};
use crate::render;
use anyhow::{Context, Result};
use std::process::ExitCode;
use tlblab_kernel::workloads::SCENARIOS;
use tlblab_kernel::Policy;

/// Every simulated scenario, with its metric and whether `tlblab bench` runs it live.
pub fn scenarios() -> Result<ExitCode> {
    let live: Vec<&str> = tlblab_live::scenarios().iter().map(|s| s.name).collect();
    let mut out = String::from(
        "Built-in scenarios (`tlblab sim run -s NAME`; `live` ones also `tlblab bench NAME`):\n",
    );
    for s in SCENARIOS {
        let where_ = if live.contains(&s.name) { "sim and live" } else { "sim only" };
        out += &format!(
            "\n{}  ({where_}; metric: {})\n  {}\n",
            s.name,
            s.metric.unit(),
            s.description
        );
    }
    render::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The built-in policies, or one policy's switches (as text or as a policy file).
pub fn policies(args: &PoliciesArgs) -> Result<ExitCode> {
    let out = match &args.show {
        None => {
            let mut out = String::from(
                "Built-in policies (`-p NAME`; variants apply to their study's base, or to any \
                 base with `BASE+VARIANT`; `tlblab sim policies show NAME` lists the switches):\n",
            );
            for name in Policy::builtin_names() {
                let p = Policy::named(name).context("a built-in policy")?;
                out += &format!("\n{name}\n  {}\n", p.mirrors);
            }
            out
        }
        Some(PoliciesCommand::Show { name, toml }) => {
            let policy = Policy::load(name)?;
            if *toml && Policy::named(name).is_err() {
                return Err(super::BadInput(format!(
                    "--toml writes a template whose base is a built-in policy; {name} is a \
                     policy file already: edit it"
                ))
                .into());
            }
            if *toml {
                render::stdout_data(&policy.policy_file(name))?;
                return Ok(ExitCode::SUCCESS);
            } else {
                let mut out = format!("{}\n  mirrors: {}\n\n", policy.name, policy.mirrors);
                for (key, value) in policy.switches() {
                    out += &format!("  {key} = {value}\n");
                }
                out
            }
        }
    };
    render::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
