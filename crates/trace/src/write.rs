//! Writing traces back out in either format [`crate::read`] accepts, so that a split or
//! synthetic trace reads exactly as it was written.
//!
//! The writer does not validate: it writes the requests it is given. Zero sizes or unsorted
//! times would be rejected when the file is read back.

use std::io::{self, BufWriter, Write};

use serde::{Deserialize, Serialize};
use tailbound_model::Request;

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// no header; `arrival_ns,0xSIZE,op`, e.g. `564037000,0x00001000,DiskWrite`
    Native,
    /// header `time_s,size_bytes,op`; e.g. `0.564037000,4096,DiskWrite`
    Csv,
}

tailbound_model::names!(Format, "trace format", { Native => "native", Csv => "csv" });

impl Format {
    /// The line layout, for messages: `arrival_ns,0xSIZE,op` or `time_s,size_bytes,op`.
    pub fn layout(self) -> &'static str {
        match self {
            Format::Native => "arrival_ns,0xSIZE,op",
            Format::Csv => "time_s,size_bytes,op",
        }
    }
}

/// Writes `requests` to `w`, one per line, in `format`.
///
/// Native: `{arrival_ns},0x{size:08x},{op}`. CSV: the header `time_s,size_bytes,op`, then the
/// time in seconds with 9 decimals (exact: nanoseconds are printed, not rounded through
/// `f64`), decimal bytes and the op. Ops keep their vocabulary (`Get`/`Put` or
/// `DiskRead`/`DiskWrite`). Output is buffered internally and flushed before returning.
pub fn write_trace(w: impl Write, requests: &[Request], format: Format) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(64 * 1024, w);
    match format {
        Format::Native => {
            for r in requests {
                writeln!(
                    w,
                    "{},0x{:08x},{}",
                    r.arrival_ns,
                    r.size_bytes,
                    r.op.as_str()
                )?;
            }
        }
        Format::Csv => {
            writeln!(w, "{}", Format::Csv.layout())?;
            for r in requests {
                writeln!(
                    w,
                    "{}.{:09},{},{}",
                    r.arrival_ns / 1_000_000_000,
                    r.arrival_ns % 1_000_000_000,
                    r.size_bytes,
                    r.op.as_str()
                )?;
            }
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::Op;

    fn requests() -> Vec<Request> {
        vec![
            Request {
                arrival_ns: 564_037_000,
                size_bytes: 4096,
                op: Op::DiskWrite,
            },
            Request {
                arrival_ns: 1_000_000_001,
                size_bytes: 0x20000,
                op: Op::Get,
            },
        ]
    }

    #[test]
    fn native_output() {
        let mut out = Vec::new();
        write_trace(&mut out, &requests(), Format::Native).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "564037000,0x00001000,DiskWrite\n1000000001,0x00020000,Get\n"
        );
    }

    #[test]
    fn csv_output() {
        let mut out = Vec::new();
        write_trace(&mut out, &requests(), Format::Csv).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "time_s,size_bytes,op\n0.564037000,4096,DiskWrite\n1.000000001,131072,Get\n"
        );
    }
}
