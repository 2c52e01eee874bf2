//! The `tailbound` binary: parse the command line, set up logging, dispatch, print errors once.

use clap::Parser;
use std::process::ExitCode;
use tailbound_cli::{output, run, Cli};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` are results: they go through stdout's error handling
        Err(e) if !e.use_stderr() && !std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
            return match output::print(&e.render().to_string()) {
                Ok(()) => code,
                Err(err) => output::exit_code(Err(err)),
            };
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    tailbound_cli::init_logging(cli.verbose, cli.quiet, cli.log_format);
    output::exit_code(run(cli))
}
