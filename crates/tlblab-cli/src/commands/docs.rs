//! `tlblab completions` and `tlblab man`: the command line's own documentation, generated from
//! its clap definition so that it never drifts from the parser.

use crate::cli::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Prints `shell`'s completion script for `tlblab`.
pub fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tlblab", &mut out);
    crate::render::stdout_bytes(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes one man page per visible command into `dir`; prints the pages written.
pub fn man_pages(dir: &Path) -> Result<ExitCode> {
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, "tlblab", dir, &mut written)?;
    let list: String = written.iter().map(|p| format!("{}\n", p.display())).collect();
    crate::render::stdout(&list)?;
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd`, named `name` (`tlblab-sim-run`), then its visible subcommands' pages.
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let titled = cmd.clone().name(name.to_string());
    let mut roff = Vec::new();
    clap_mangen::Man::new(titled).render(&mut roff).with_context(|| format!("rendering {name}"))?;
    let path = dir.join(format!("{name}.1"));
    tlblab_types::atomic::write_file(&path, &roff)
        .with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
