//! `tlblab`: simulate, measure and trace x86 TLB-flush policies on Linux.
//!
//! Parse → run the subcommand → exit status: 0 success (also when standard output's reader
//! stops reading, `tlblab … | head`), 1 failure, 2 bad input (a trace, a preset, an option),
//! 130/143 stopped by SIGINT/SIGTERM (the commands that handle them). The README's "Exit
//! status" section is the table.

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
        Err(error) if error.chain().any(|c| c.is::<render::StdoutClosed>()) => ExitCode::SUCCESS,
        Err(error) => {
            // Messages quote inputs (a trace's line, a file name): no control byte may reach
            // the terminal.
            eprintln!("tlblab: error: {}", tlblab_types::escape::escape_lines(&message(&error)));
            ExitCode::from(commands::exit_status(&error))
        }
    }
}

/// The error and its causes, each once ([`tlblab_types::plain::error_chain`]).
fn message(error: &anyhow::Error) -> String {
    tlblab_types::plain::error_chain(error.as_ref())
}

#[cfg(test)]
mod tests {
    use super::message;
    use anyhow::Context;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("r.json: writing: {0}")]
        struct Wrapping(#[source] std::io::Error);
        let io = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let text = io.to_string();
        let error = anyhow::Error::new(Wrapping(io));
        assert_eq!(message(&error), format!("r.json: writing: {text}"));
        // A context that adds something is kept, and the causes it does not contain follow.
        let error =
            Err::<(), _>(std::io::Error::other("disk on fire")).context("saving").unwrap_err();
        assert_eq!(message(&error), "saving: disk on fire");
    }
}
