//! The `tailbound` binary: parse the command line, set up logging, dispatch, print errors once.

use clap::Parser;
use std::process::ExitCode;
use tailbound_cli::{run, Cli, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tailbound_cli::init_logging(cli.verbose, cli.quiet);
    match run(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::CheckFailed) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
