//! `tlblab`: simulate, measure and trace x86 TLB-flush policies on Linux.
//!
//! Parse → run the subcommand → exit status. Status 2 means bad input (a trace, a preset, an
//! option), 1 any other failure, 0 success.

mod cli;
mod commands;
mod render;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            // Messages quote inputs (a trace's line, a file name): no control byte may reach
            // the terminal.
            let message = format!("{error:#}");
            eprintln!("tlblab: error: {}", tlblab_types::escape::escape_lines(&message));
            ExitCode::from(commands::exit_status(&error))
        }
    }
}
