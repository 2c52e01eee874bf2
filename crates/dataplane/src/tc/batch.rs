//! Running a list of tc commands as one `tc -batch -` process (inside a namespace with
//! `tc -n NS`). tc stops at the first command that fails and names its line; its exit status
//! and that line are checked. The process runs in its own process group, so a Ctrl-C meant for
//! tailbound does not stop it half-way (the caller decides when to stop), and it is killed if
//! it does not finish in time.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Why a batch did not run through.
#[derive(Debug)]
pub enum BatchError {
    /// `tc` could not be started
    Spawn(std::io::Error),
    /// a command failed: its 1-based line (when tc named it) and what tc printed
    Failed {
        line: Option<usize>,
        message: String,
    },
    /// the process did not finish within the time limit and was killed
    Timeout(Duration),
}

/// Runs `lines` through one `tc -batch -`.
pub fn run(
    program: &Path,
    netns: Option<&str>,
    lines: &[String],
    limit: Duration,
) -> Result<(), BatchError> {
    let mut cmd = Command::new(program);
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    cmd.args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(BatchError::Spawn)?;
    let mut input = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        input.push_str(l);
        input.push('\n');
    }
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // tc stops reading at a failed command: a broken pipe then is expected
            let _ = s.write_all(input.as_bytes());
        }
    });
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut out);
            }
            out
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(limit) {
        Ok(s) => s.map_err(BatchError::Spawn)?,
        Err(_) => {
            // SAFETY: pid is our child, not yet reaped (the waiter still waits for it).
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            let _ = waiter.join();
            return Err(BatchError::Timeout(limit));
        }
    };
    let _ = waiter.join();
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let line = failed_line(&stderr);
    let message = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Command failed"))
        .collect::<Vec<_>>()
        .join("; ");
    Err(BatchError::Failed {
        line,
        message: if message.is_empty() {
            format!("tc exited with {status}")
        } else {
            message
        },
    })
}

/// The line of "Command failed -:N" in tc's error output.
pub fn failed_line(stderr: &str) -> Option<usize> {
    stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Command failed -:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failed_line_is_read_from_tc_output() {
        assert_eq!(
            failed_line("Error: Specified class not found.\nCommand failed -:3\n"),
            Some(3)
        );
        assert_eq!(failed_line("garbage"), None);
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let e = run(
            Path::new("/nonexistent/tc"),
            None,
            &["qdisc show".into()],
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(
            matches!(e, BatchError::Spawn(ref io) if io.kind() == std::io::ErrorKind::NotFound)
        );
    }
}
