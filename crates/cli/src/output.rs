//! Every byte the `tailbound` binary writes goes through here: results on stdout, files
//! (`--out`, `--svg`, `--csv`, `--decisions-out`, `trace gen -o`, `trace split --out-dir`),
//! notes on stderr, and the exit code.
//!
//! * **stdout** ([`print`], [`print_json`], [`to_stdout`]): a reader that went away (a closed
//!   pipe, `tailbound ... | head -1`) ends the command quietly with [`StdoutClosed`], which
//!   [`exit_code`] turns into exit 0; any other write error (a full disk, `> /dev/full`) is an
//!   error naming stdout (exit 2). Nothing panics.
//! * **files** ([`write_file`], [`write_text`], [`write_json`]; [`write_to`] takes `-` for
//!   stdout): written to a temporary file beside the destination, flushed and synced, then
//!   renamed over it, so a file appears whole or not at all — an error or an interrupt
//!   (SIGINT, SIGTERM, SIGHUP) removes the temporary file and leaves the destination as it
//!   was. Devices and pipes (`/dev/null`, `/dev/full`, a FIFO) are written in place, since
//!   they cannot be replaced. Errors name the path.
//! * **stderr** ([`note`]): progress notes that must never fail the command.
//! * **JSON** ([`print_json`], [`write_json`]): every JSON document the binary prints or writes
//!   is a [`JsonOutput`] and opens with two fields, added here and nowhere else:
//!   `"format": "tailbound.<kind>/<version>"` (the structure's kind and format version, see
//!   [`crate::report::FORMATS`]) and `"tool": "tailbound 0.x.y"` (the version that wrote it).
//!   They sit beside the structure's own fields, so a reader that ignores unknown fields reads
//!   the document as before; a list is printed as `{"format", "tool", "items": [...]}`
//!   ([`Items`]).
//!
//! Commands return `anyhow::Result<Outcome>`; `main` maps it with [`exit_code`].

use crate::Outcome;
use anyhow::Context;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The reader of stdout went away (a closed pipe): not an error, the command just stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct StdoutClosed;

/// The exit code of a command's result: 0 ok (or stdout closed by its reader), 1 checked and
/// failed, 2 error (printed once on stderr as `error: ...` with its causes).
pub fn exit_code(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::CheckFailed) => ExitCode::from(1),
        Err(e) if e.chain().any(|c| c.is::<StdoutClosed>()) => ExitCode::SUCCESS,
        Err(e) => {
            note(format_args!("error: {}", error_text(&e)));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes on one line, `outer: inner: ...`, leaving out a cause whose text
/// the line already holds (many errors quote their source in their own message).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Maps a write error on stdout: a closed pipe is [`StdoutClosed`], anything else an error
/// naming stdout.
fn stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(e).context("cannot write to stdout")
    }
}

/// Runs `write` on (buffered) stdout and flushes it.
///
/// # Errors
/// [`StdoutClosed`] when the reader went away, otherwise the write error naming stdout.
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut w = BufWriter::with_capacity(64 * 1024, stdout.lock());
    write(&mut w).and_then(|()| w.flush()).map_err(stdout_error)
}

/// Prints `text` on stdout as it is.
///
/// # Errors
/// As [`to_stdout`].
pub fn print(text: &str) -> anyhow::Result<()> {
    to_stdout(|w| w.write_all(text.as_bytes()))
}

/// The tool and its version, as JSON outputs name it in `"tool"`.
pub const TOOL: &str = concat!("tailbound ", env!("CARGO_PKG_VERSION"));

/// A structure the binary prints (`--json`) or writes (`--out`, `--decisions-out`) as JSON.
pub trait JsonOutput: Serialize {
    /// Its kind and format version, `tailbound.<kind>/<version>`; the version grows when a
    /// field changes meaning or goes away (new fields do not change it).
    const FORMAT: &'static str;
}

/// A list printed as JSON: `{"format", "tool", "items": [...]}` (a bare array has no place
/// for the format and tool fields).
#[derive(Debug, Serialize)]
pub struct Items<'a, T> {
    pub items: &'a [T],
}

/// A JSON output with its format and the tool's version first, then its own fields.
#[derive(Serialize)]
struct Stamped<'a, T> {
    format: &'static str,
    tool: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

/// Prints a result as pretty JSON on stdout, one trailing newline, with its format and the
/// tool's version (see the module docs).
///
/// # Errors
/// As [`to_stdout`].
pub fn print_json<T: JsonOutput>(value: &T) -> anyhow::Result<()> {
    to_stdout(|w| json_to(w, value))
}

fn json_to<T: JsonOutput>(w: &mut dyn Write, value: &T) -> io::Result<()> {
    let stamped = Stamped {
        format: T::FORMAT,
        tool: TOOL,
        body: value,
    };
    serde_json::to_writer_pretty(&mut *w, &stamped).map_err(io::Error::from)?;
    w.write_all(b"\n")
}

/// A line on stderr (a note for the person at the terminal); a closed or full stderr is
/// ignored, since nothing could report it.
pub fn note(line: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(line).and_then(|()| err.write_all(b"\n"));
}

/// Writes `path` whole or not at all (see the module docs); `-` is not special here (see
/// [`write_to`]).
///
/// # Errors
/// The path and the cause: its folder does not exist or is not writable, it is a folder, the
/// disk is full...
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    write_file_inner(path, write).with_context(|| format!("cannot write {}", path.display()))?;
    tracing::info!(path = %path.display(), "wrote");
    Ok(())
}

/// Writes to `path`, or to stdout when `path` is `-`.
///
/// # Errors
/// As [`write_file`] and [`to_stdout`].
pub fn write_to(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    if path == Path::new("-") {
        to_stdout(write)
    } else {
        write_file(path, write)
    }
}

/// Writes `text` to `path` whole or not at all.
///
/// # Errors
/// As [`write_file`].
pub fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    write_file(path, |w| w.write_all(text.as_bytes()))
}

/// Writes `value` as pretty JSON (one trailing newline, its format and the tool's version
/// first, as [`print_json`]) to `path` whole or not at all.
///
/// # Errors
/// As [`write_file`].
pub fn write_json<T: JsonOutput>(path: &Path, value: &T) -> anyhow::Result<()> {
    write_file(path, |w| json_to(w, value))
}

fn write_file_inner(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    // A symbolic link is followed: the file it points to is replaced, not the link.
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => path.to_path_buf(),
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => anyhow::bail!("it is a folder; expected a file name"),
        // devices and pipes cannot be replaced: write them in place
        Ok(m) if !m.is_file() => {
            let file = OpenOptions::new().write(true).open(&target)?;
            return finish(file, write, false);
        }
        _ => {}
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        anyhow::bail!("folder {} does not exist", dir.display());
    }
    let temp = TempFile::create(&dir, &target)?;
    finish(temp.file()?, write, true)?;
    temp.persist(&target)
}

/// Writes, flushes and (for regular files) syncs to the device.
fn finish(
    file: File,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    sync: bool,
) -> anyhow::Result<()> {
    let mut w = BufWriter::with_capacity(64 * 1024, file);
    write(&mut w)?;
    let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

/// Temporary files being written, removed by the signal handler.
static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SIGNALS: OnceLock<()> = OnceLock::new();

/// A temporary file beside its destination, removed on drop unless persisted.
struct TempFile {
    path: PathBuf,
    file: Option<File>,
}

impl TempFile {
    fn create(dir: &Path, target: &Path) -> io::Result<TempFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        install_signal_cleanup();
        let name = target
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
            // registered before it exists, so that a signal during creation removes it
            if let Ok(mut list) = TEMP_FILES.lock() {
                list.push(path.clone());
            }
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(TempFile {
                        path,
                        file: Some(file),
                    })
                }
                Err(e) => {
                    forget(&path);
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn file(&self) -> io::Result<File> {
        match &self.file {
            Some(f) => f.try_clone(),
            None => Err(io::Error::other("temporary file already closed")),
        }
    }

    fn persist(mut self, target: &Path) -> anyhow::Result<()> {
        self.file = None;
        std::fs::rename(&self.path, target)?;
        forget(&self.path);
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
            forget(&self.path);
        }
    }
}

fn forget(path: &Path) {
    if let Ok(mut list) = TEMP_FILES.lock() {
        list.retain(|p| p != path);
    }
}

/// On SIGINT, SIGTERM or SIGHUP: remove the temporary files being written (and the network
/// namespaces this process created, as `tailbound_dataplane` does), then let the signal take
/// its default action. Installed once, when the first file is written.
fn install_signal_cleanup() {
    SIGNALS.get_or_init(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot install the signal handler; an interrupted write may leave a temporary file behind");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("tailbound-output-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let files = TEMP_FILES.lock().map(|l| l.clone()).unwrap_or_default();
                    for f in files {
                        let _ = std::fs::remove_file(f);
                    }
                    tailbound_dataplane::netns::cleanup_live();
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the signal thread");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_an_error_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_text(&path, "first\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\n");
        let e = write_file(&path, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("out.json"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\n");
        // no temporary file is left beside it
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn folders_and_missing_folders_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_text(dir.path(), "x").unwrap_err();
        assert!(format!("{e:#}").contains("is a folder"), "{e:#}");
        let missing = dir.path().join("no/such/out.svg");
        let e = write_text(&missing, "x").unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("out.svg") && msg.contains("does not exist"),
            "{msg}"
        );
    }

    #[test]
    fn a_device_is_written_in_place() {
        write_text(Path::new("/dev/null"), "x").unwrap();
        assert!(Path::new("/dev/null").exists());
        let e = write_text(Path::new("/dev/full"), "x").unwrap_err();
        assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
    }

    #[test]
    fn causes_already_quoted_are_printed_once() {
        let inner = io::Error::other("unknown host \"x\"");
        let e = anyhow::Error::new(inner)
            .context("cannot move tenant a: unknown host \"x\"")
            .context("cannot apply decisions d.json");
        assert_eq!(
            error_text(&e),
            "cannot apply decisions d.json: cannot move tenant a: unknown host \"x\""
        );
    }

    #[test]
    fn a_closed_pipe_exits_0_and_other_errors_exit_2() {
        let closed = stdout_error(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(
            exit_code(Err(closed.context("printing"))),
            ExitCode::SUCCESS
        );
        let full = stdout_error(io::Error::from_raw_os_error(28));
        assert!(format!("{full:#}").contains("stdout"));
        assert_eq!(exit_code(Err(full)), ExitCode::from(2));
    }
}
