//! One module per subcommand, plus the small helpers they share: loading traces with context,
//! printing JSON, writing SVG figures, an experiment's output options, progress bars. Every
//! write goes through [`crate::output`] (closed pipes, full disks, files whole or not at all).

pub mod admit;
pub mod agent;
pub mod alloc;
pub mod bound;
pub mod curve;
pub mod demo;
pub mod docs;
pub mod enforce;
pub mod enforcer;
pub mod experiment;
pub mod experiment_admission;
pub mod experiment_admission_testbed;
pub mod experiment_eyeq;
pub mod experiment_placement;
pub mod experiment_vdc;
pub mod experiment_vdc_testbed;
pub mod graph;
pub mod host;
pub mod place;
pub mod probe;
pub mod schema;
pub mod serve;
pub mod simulate;
pub mod tenant;
pub mod testbed;
pub mod trace;
pub mod vdc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use tailbound_plot::Figure;
use tailbound_trace::Trace;

/// Reads and validates a trace; errors already name the file and line.
pub fn load_trace(path: &Path) -> anyhow::Result<Trace> {
    tracing::debug!(path = %path.display(), "reading trace");
    Ok(tailbound_trace::read_trace(path)?)
}

pub use crate::output::print_json;

pub use tailbound_report::characterized_part;

/// Largest input file (allocation input, workloads CSV, VDC file, decisions) the CLI reads
/// whole [bytes]: memory stays bounded whatever the path names (`/dev/zero`, a huge file).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads the text file `path` (`what` it is, for messages), refusing one larger than
/// [`MAX_INPUT_BYTES`].
pub fn read_input(path: &Path, what: &str) -> anyhow::Result<String> {
    use anyhow::Context;
    use std::io::Read;
    let name = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {what} {name}"))?;
    let mut text = String::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {what} {name}"))?;
    anyhow::ensure!(
        text.len() as u64 <= MAX_INPUT_BYTES,
        "{what} {name} is larger than {} MiB; the most tailbound reads",
        MAX_INPUT_BYTES >> 20
    );
    Ok(text)
}

/// Writes a figure as SVG to `svg` and its data as CSV to `data` (each when given, whole or
/// not at all); the figure is built only when one of them is.
pub fn write_figure(
    svg: Option<&Path>,
    data: Option<&Path>,
    figure: impl FnOnce() -> Figure,
) -> anyhow::Result<()> {
    if svg.is_none() && data.is_none() {
        return Ok(());
    }
    let figure = figure();
    if let Some(path) = svg {
        crate::output::write_text(path, &figure.to_svg()?)?;
    }
    if let Some(path) = data {
        crate::output::write_text(path, &figure.to_csv())?;
    }
    Ok(())
}

/// The help of every `--data` flag.
pub const DATA_HELP: &str = "write the data of the --svg figure to this CSV file (one row per point: chart,series,x,y,x_axis,y_axis; the axes name their units); works without --svg";

/// Where an experiment's result goes (every `tailbound experiment` takes these).
#[derive(Debug, clap::Args)]
pub struct ExperimentOutput {
    /// print JSON on stdout instead of a table
    #[arg(long)]
    pub json: bool,
    /// also write the JSON result to this file
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// draw the experiment's figure to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = DATA_HELP)]
    pub data: Option<PathBuf>,
}

impl ExperimentOutput {
    /// Writes `--out`, `--svg` and `--data` (the figure is built only then), and prints the
    /// JSON with `--json`, otherwise `text`.
    pub fn emit(
        &self,
        value: &impl crate::output::JsonOutput,
        figure: impl FnOnce() -> Figure,
        text: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        if let Some(path) = &self.out {
            crate::output::write_json(path, value)?;
        }
        write_figure(self.svg.as_deref(), self.data.as_deref(), figure)?;
        if self.json {
            print_json(value)
        } else {
            crate::output::print(&text())
        }
    }
}

/// A progress bar on stderr for `len` steps; hidden when stderr is not a terminal, with
/// `--json`, or when there is a single step.
pub fn progress(len: u64, json: bool, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if json || len <= 1 || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(what.to_string());
    }
    bar
}

/// A file name for messages: the path as given.
pub fn display_name(path: &Path) -> String {
    path.display().to_string()
}
