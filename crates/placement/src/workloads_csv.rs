//! The workloads CSV that `tailbound place` reads: one workload per line,
//! `name,trace,slo,percentile` (e.g. `w1,trace0000.csv,250ms,99.9`). The SLO is seconds
//! (`0.25`) or a duration with a unit (`250ms`); the trace path is relative to the CSV's
//! folder. Blank lines, lines starting with `#` and a first line starting with `name,` are
//! skipped. Parsing only: reading the traces is the caller's.

use std::path::{Path, PathBuf};
use tailbound_model::units::parse_duration_s;
use tailbound_model::Slo;

/// One line of a workloads CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadLine {
    pub name: String,
    /// the trace as written (relative to the CSV's folder)
    pub trace: PathBuf,
    pub slo: Slo,
    /// line number in the file, for messages
    pub line: usize,
}

/// A workloads file (a workloads CSV or a WorkloadCompactor topology) that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct WorkloadsFileError {
    pub file: PathBuf,
    /// 0: the file as a whole
    pub line: usize,
    pub message: String,
}

/// Parses the text of workloads CSV `file` (named in errors).
pub fn parse_workloads_csv(
    file: &Path,
    text: &str,
) -> Result<Vec<WorkloadLine>, WorkloadsFileError> {
    let err = |line: usize, message: String| WorkloadsFileError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let mut out: Vec<WorkloadLine> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') || (i == 0 && text.starts_with("name,")) {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != 4 {
            return Err(err(
                line,
                format!(
                    "{} fields in {text:?}; expected name,trace,slo,percentile (e.g. w1,trace0000.csv,250ms,99.9)",
                    fields.len()
                ),
            ));
        }
        let name = fields[0];
        if name.is_empty() {
            return Err(err(
                line,
                "the workload name is empty; expected a name".into(),
            ));
        }
        if out.iter().any(|w| w.name == name) {
            return Err(err(
                line,
                format!("workload {name:?} appears twice; workload names must be unique"),
            ));
        }
        if fields[1].is_empty() {
            return Err(err(
                line,
                "the trace path is empty; expected a trace file".into(),
            ));
        }
        let slo_s = fields[2]
            .parse::<f64>()
            .ok()
            .map_or_else(|| parse_duration_s(fields[2]), Ok)
            .map_err(|_| {
                err(
                    line,
                    format!(
                        "SLO {:?}; expected seconds (0.25) or a duration (250ms)",
                        fields[2]
                    ),
                )
            })?;
        let percentile: f64 = fields[3].parse().map_err(|_| {
            err(
                line,
                format!(
                    "percentile {:?} is not a number; expected e.g. 99.9",
                    fields[3]
                ),
            )
        })?;
        let slo = Slo::new(slo_s, percentile).map_err(|e| err(line, e.to_string()))?;
        out.push(WorkloadLine {
            name: name.to_string(),
            trace: PathBuf::from(fields[1]),
            slo,
            line,
        });
    }
    if out.is_empty() {
        return Err(err(
            0,
            "lists no workloads; expected lines name,trace,slo,percentile".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<WorkloadLine>, WorkloadsFileError> {
        parse_workloads_csv(Path::new("w.csv"), text)
    }

    #[test]
    fn reads_seconds_and_durations_skipping_header_comments_and_blanks() {
        let w =
            parse("name,trace,slo,percentile\n# c\n\nw1,t0.csv,0.25,99.9\nw2, t1.csv ,250ms,99\n")
                .unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!((w[1].name.as_str(), w[1].line), ("w2", 5));
        assert_eq!(w[1].trace, PathBuf::from("t1.csv"));
        assert_eq!(w[0].slo.latency_s, w[1].slo.latency_s);
    }

    #[test]
    fn errors_name_the_file_line_and_value() {
        for (text, want) in [
            ("w1,t.csv,0.25\n", "w.csv:1: 3 fields"),
            ("w1,t.csv,fast,99.9\n", "w.csv:1: SLO \"fast\""),
            ("w1,t.csv,0.25,p99\n", "percentile \"p99\""),
            ("w1,t.csv,0.25,100\n", "percentile 100"),
            ("w1,t.csv,0,99\n", "not positive"),
            (",t.csv,0.25,99\n", "name is empty"),
            (
                "w1,t.csv,1,99\nw1,u.csv,1,99\n",
                "w.csv:2: workload \"w1\" appears twice",
            ),
            ("# nothing\n", "w.csv:0: lists no workloads"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
