//! `tailbound completions SHELL` and `tailbound man --out-dir DIR`: the shell completion
//! script and the man pages, generated from the same command definitions as `--help`.

use crate::{output, Cli, Outcome};
use anyhow::Context;
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// the shell: bash, zsh, fish, elvish or powershell (e.g. `tailbound completions bash >
    /// /etc/bash_completion.d/tailbound`)
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// folder to write the pages to (tailbound.1, and tailbound-bound.1 and so on for every
    /// command); created if missing
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
}

/// Prints the completion script for `a.shell` on stdout.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<Outcome> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "tailbound", &mut script);
    output::to_stdout(|w| w.write_all(&script))?;
    Ok(Outcome::Ok)
}

/// Writes one man page per command (hidden ones and `help` left out) into `a.out_dir`.
pub fn man(a: ManArgs) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(&a.out_dir)
        .with_context(|| format!("--out-dir {}: cannot create it", a.out_dir.display()))?;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = 0;
    write_pages(&cmd, &a.out_dir, &mut written)?;
    output::note(format_args!(
        "wrote {written} man pages to {}",
        a.out_dir.display()
    ));
    Ok(Outcome::Ok)
}

fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut usize) -> anyhow::Result<()> {
    let page = clap_mangen::Man::new(cmd.clone());
    output::write_file(&dir.join(page.get_filename()), |w| page.render(w))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
