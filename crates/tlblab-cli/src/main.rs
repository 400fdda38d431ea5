//! `tlblab`: simulate, measure and trace x86 TLB-flush policies on Linux.
//!
//! Parse → run the subcommand → exit status. Status 2 means bad input (a trace, a preset, an
//! option), 1 any other failure, 0 success.

mod cli;
mod commands;
mod progress;
mod render;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tlblab: error: {error:#}");
            ExitCode::from(commands::exit_status(&error))
        }
    }
}
