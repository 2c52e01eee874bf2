//! Trace ingestion. PROVISIONAL: the trace helper replaces this file's internals; the public
//! signatures below (`Trace`, `read_trace`, `parse_trace`, `TraceError`) are the contract.

use std::io::BufRead;
use std::path::Path;
use tailbound_model::Request;

/// A tenant's requests, sorted by arrival time.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// where the trace came from (file path or generator description)
    pub name: String,
    pub requests: Vec<Request>,
}

#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct TraceError {
    pub path: String,
    pub line: u64,
    pub message: String,
}

pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let f = std::fs::File::open(path).map_err(|e| TraceError {
        path: path.display().to_string(),
        line: 0,
        message: e.to_string(),
    })?;
    parse_trace(&path.display().to_string(), std::io::BufReader::new(f))
}

pub fn parse_trace(name: &str, reader: impl BufRead) -> Result<Trace, TraceError> {
    let mut requests = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let err = |message: String| TraceError {
            path: name.to_string(),
            line: i as u64 + 1,
            message,
        };
        let line = line.map_err(|e| err(e.to_string()))?;
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 3 {
            return Err(err(format!("bad line {line:?}")));
        }
        let arrival_ns = f[0].parse().map_err(|_| err(format!("bad time {}", f[0])))?;
        let size_bytes = u64::from_str_radix(f[1].trim_start_matches("0x"), 16)
            .map_err(|_| err(format!("bad size {}", f[1])))?;
        let op = f[2].parse().map_err(|e| err(format!("{e}")))?;
        requests.push(Request {
            arrival_ns,
            size_bytes,
            op,
        });
    }
    Ok(Trace {
        name: name.to_string(),
        requests,
    })
}
