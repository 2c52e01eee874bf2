//! Streaming trace reader with validation: one request per line, errors that name the file, the
//! line and the offending value.
//!
//! Two formats are accepted, told apart by the first line that is neither blank nor a `#`
//! comment:
//!
//! * **native** (no header), the format of the MSR production traces and SNC-Meister's tools:
//!   `arrival_ns,0xSIZE,op`, e.g. `564037000,0x00001000,DiskWrite`. The arrival time is a
//!   decimal integer of nanoseconds, the size is hexadecimal bytes with a `0x`/`0X` prefix.
//! * **CSV** with the header `time_s,size_bytes,op` (any case, spaces around fields allowed):
//!   the time is a decimal number of seconds, converted to nanoseconds by rounding to the
//!   nearest (plain decimals are converted exactly, without going through `f64`), the size is
//!   decimal bytes.
//!
//! In both, `op` is one of `Get`, `Put`, `DiskRead`, `DiskWrite` in any case, fields may be
//! surrounded by spaces, lines may end in `\r\n`, blank lines are skipped and lines starting
//! with `#` are comments. Sizes must be ≥ 1 byte and at most [`MAX_REQUEST_BYTES`] (1 TiB),
//! arrival times non-decreasing (equal times are fine). A trace without requests is an error.
//!
//! **Limits**, so that no input can exhaust memory: a line is at most [`MAX_LINE_BYTES`]
//! (64 KiB; a request line needs about 50), a trace at most [`MAX_REQUESTS`] requests (20
//! million, 480 MB in memory; the largest production trace has 110 thousand). Beyond either
//! the reader stops with an error naming the line.
//!
//! The reader parses each line where it lies in its input buffer (copying only a line split
//! across two fills into one reused line buffer), native lines in their usual form in one pass,
//! and bytes by hand throughout; it never panics on any input.
//! Writing traces lives in [`crate::write`].

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use tailbound_model::{Op, Request};

use crate::{Format, Trace};

/// The CSV header, field by field (compared ignoring ASCII case and surrounding spaces).
pub const CSV_HEADER: [&str; 3] = ["time_s", "size_bytes", "op"];

/// Longest excerpt of an offending value quoted in an error message \[bytes\].
const MAX_QUOTE: usize = 64;

/// Buffer size of the reader [`open_trace`] returns \[bytes\].
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Longest line a trace may have \[bytes\], end of line included.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most requests one trace may hold (also the most [`crate::generate`] produces).
pub const MAX_REQUESTS: u64 = 20_000_000;

/// Largest request size a trace may give \[bytes\]: 1 TiB.
pub const MAX_REQUEST_BYTES: u64 = 1 << 40;

/// Why a trace could not be read: where (file and line) and what ([`TraceErrorKind`]).
///
/// Displays as `trace0001.csv line 17: timestamp 3200000 ns is before the previous 4100000 ns;
/// traces must be sorted by arrival time`. Line numbers count from 1; line 0 means the error
/// is about the file as a whole (it could not be opened, or it holds no lines at all).
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", Location(.path, *.line))]
pub struct TraceError {
    /// the file (or stream name) being read
    pub path: String,
    /// 1-based line number, 0 for the file as a whole
    pub line: u64,
    pub kind: TraceErrorKind,
}

struct Location<'a>(&'a str, u64);

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 0 {
            f.write_str(self.0)
        } else {
            write!(f, "{} line {}", self.0, self.1)
        }
    }
}

/// What is wrong with a trace. Values are quoted as they appear in the file (at most 64
/// bytes, invalid UTF-8 replaced).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    #[error("cannot read the trace: {0}")]
    Io(std::io::Error),
    #[error("is a folder; expected a trace file")]
    Folder,
    #[error("the line is longer than {max} bytes; expected lines `arrival_ns,0xSIZE,op` or `time_s,size_bytes,op` (is this a trace?)")]
    LineTooLong { max: usize },
    #[error("the trace holds more than {max} requests; expected at most {max} (split it with `tailbound trace split`)")]
    TooManyRequests { max: u64 },
    #[error("unrecognized header {line:?}; expected either no header (lines `arrival_ns,0xSIZE,op`) or exactly `time_s,size_bytes,op`")]
    Header { line: String },
    #[error("found {found} comma-separated fields in {line:?}; expected 3: `{}`", format.layout())]
    FieldCount {
        found: usize,
        line: String,
        format: Format,
    },
    #[error("malformed timestamp {value:?}; expected {}", time_hint(*.format))]
    BadTime { value: String, format: Format },
    #[error("timestamp {value} is negative; expected a time >= 0")]
    NegativeTime { value: String },
    #[error("timestamp {value:?} is not a finite number; expected a finite time >= 0")]
    NonFiniteTime { value: String },
    #[error("timestamp {value} is too large; expected at most 18446744073709551615 ns (about 584 years)")]
    TimeOverflow { value: String },
    #[error("timestamp {value} {unit} is before the previous request's {previous} {unit}; traces must be sorted by arrival time (equal times are fine)")]
    Unsorted {
        /// the time field as written
        value: String,
        /// the previous request's time in the file's unit
        previous: String,
        unit: &'static str,
        arrival_ns: u64,
        previous_ns: u64,
    },
    #[error("malformed size {value:?}; expected {}", size_hint(*.format))]
    BadSize { value: String, format: Format },
    #[error("size {value} is negative; expected a positive number of bytes")]
    NegativeSize { value: String },
    #[error("size {value} is zero; expected at least 1 byte")]
    ZeroSize { value: String },
    #[error("size {value} does not fit in 64 bits; expected at most 1099511627776 bytes (1 TiB)")]
    SizeOverflow { value: String },
    #[error("size {value} is larger than 1 TiB; expected at most 1099511627776 bytes")]
    SizeTooLarge { value: String },
    #[error("unknown op {value:?}; expected one of Get, Put, DiskRead, DiskWrite (any case)")]
    UnknownOp { value: String },
    #[error("the trace holds no requests; expected at least one line `arrival_ns,0xSIZE,op`, or a `time_s,size_bytes,op` header followed by requests")]
    Empty,
}

fn time_hint(format: Format) -> &'static str {
    match format {
        Format::Native => "a decimal integer of nanoseconds, e.g. 564037000",
        Format::Csv => "a decimal number of seconds, e.g. 0.564037",
    }
}

fn size_hint(format: Format) -> &'static str {
    match format {
        Format::Native => "hexadecimal bytes with a 0x prefix, e.g. 0x00001000",
        Format::Csv => "a decimal integer of bytes, e.g. 4096",
    }
}

/// Quotes (an excerpt of) a field for an error message.
fn quote(bytes: &[u8]) -> String {
    if bytes.len() <= MAX_QUOTE {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        let mut s = String::from_utf8_lossy(bytes.get(..MAX_QUOTE).unwrap_or(bytes)).into_owned();
        s.push('…');
        s
    }
}

/// Reads a whole trace file. The trace is named after the path.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let reader = open_trace(path)?;
    let name = reader.name().to_string();
    // room for a request per 24 bytes of file (the production traces' lines are ~26 bytes),
    // up to a million, so that the vector seldom grows (pages reserved but never written are
    // not used)
    let estimate = std::fs::metadata(path).map_or(0, |m| m.len() / 24);
    let mut requests = Vec::with_capacity(estimate.min(1 << 20) as usize);
    for r in reader {
        requests.push(r?);
    }
    tracing::debug!(path = %name, requests = requests.len(), "trace read");
    Ok(Trace { name, requests })
}

/// Opens a trace file for streaming: the returned reader yields one request at a time.
pub fn open_trace(path: &Path) -> Result<TraceReader<BufReader<File>>, TraceError> {
    let name = path.display().to_string();
    if path.is_dir() {
        return Err(TraceError {
            path: name,
            line: 0,
            kind: TraceErrorKind::Folder,
        });
    }
    match File::open(path) {
        Ok(f) => Ok(TraceReader::new(
            name,
            BufReader::with_capacity(READ_BUFFER_BYTES, f),
        )),
        Err(e) => Err(TraceError {
            path: name,
            line: 0,
            kind: TraceErrorKind::Io(e),
        }),
    }
}

/// Parses a whole trace from a reader; `name` names it in errors and in [`Trace::name`].
pub fn parse_trace(name: &str, reader: impl BufRead) -> Result<Trace, TraceError> {
    let requests = TraceReader::new(name, reader).collect::<Result<Vec<_>, _>>()?;
    Ok(Trace {
        name: name.to_string(),
        requests,
    })
}

/// A streaming trace parser: an iterator over the requests of a trace.
///
/// It yields `Ok(request)` per request line and stops after the first error (which it
/// yields). If the input ends without a single request it yields [`TraceErrorKind::Empty`].
///
/// A line that lies whole in the reader's buffer is parsed where it lies; only a line split
/// across two fills of the buffer (or the last one, without a newline) is copied into a line
/// buffer first. Both paths parse the same bytes the same way.
pub struct TraceReader<R> {
    reader: R,
    /// the line being read when it does not lie whole in the reader's buffer
    buf: Vec<u8>,
    state: LineState,
}

/// What a [`TraceReader`] knows between lines.
struct LineState {
    name: String,
    /// lines consumed so far (= the number of the current line)
    line: u64,
    format: Option<Format>,
    previous_ns: Option<u64>,
    requests: u64,
    done: bool,
}

/// What one line of a trace gives.
enum Step {
    /// a blank line, a comment or the CSV header
    Skip,
    Yield(Result<Request, TraceError>),
}

impl<R: BufRead> TraceReader<R> {
    /// A reader over `reader`, named `name` in errors.
    pub fn new(name: impl Into<String>, reader: R) -> TraceReader<R> {
        TraceReader {
            reader,
            buf: Vec::with_capacity(128),
            state: LineState {
                name: name.into(),
                line: 0,
                format: None,
                previous_ns: None,
                requests: 0,
                done: false,
            },
        }
    }

    /// The name used in errors (the path for [`open_trace`]).
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Lines consumed so far, i.e. the number of the line last read.
    pub fn line(&self) -> u64 {
        self.state.line
    }

    /// The detected format, once the first non-blank, non-comment line has been read.
    pub fn format(&self) -> Option<Format> {
        self.state.format
    }
}

impl LineState {
    fn fail(&mut self, line: u64, kind: TraceErrorKind) -> Step {
        self.done = true;
        Step::Yield(Err(TraceError {
            path: self.name.clone(),
            line,
            kind,
        }))
    }

    /// Takes the next line (as read, end of line included).
    fn take(&mut self, raw: &[u8]) -> Step {
        self.line = self.line.saturating_add(1);
        let mut line = raw.trim_ascii();
        if self.line == 1 {
            // A UTF-8 byte-order mark, as spreadsheet tools write.
            line = line
                .strip_prefix(b"\xEF\xBB\xBF")
                .unwrap_or(line)
                .trim_ascii();
        }
        if line.is_empty() || line.first() == Some(&b'#') {
            return Step::Skip;
        }
        let format = match self.format {
            Some(f) => f,
            None => match detect(line) {
                Ok(Format::Csv) => {
                    self.format = Some(Format::Csv);
                    return Step::Skip;
                }
                Ok(Format::Native) => {
                    self.format = Some(Format::Native);
                    Format::Native
                }
                Err(kind) => return self.fail(self.line, kind),
            },
        };
        let fast = match format {
            Format::Native => native_line(line),
            Format::Csv => None,
        };
        let request = match fast.map_or_else(|| parse_line(line, format), Ok) {
            Ok(r) => r,
            Err(kind) => return self.fail(self.line, kind),
        };
        if let Some(previous_ns) = self.previous_ns {
            if request.arrival_ns < previous_ns {
                // Quote both times in the file's own unit, the current one as written.
                let value = fields(line, format).map_or_else(
                    |_| request.arrival_ns.to_string(),
                    |f| String::from_utf8_lossy(f[0]).into_owned(),
                );
                let (previous, unit) = match format {
                    Format::Native => (previous_ns.to_string(), "ns"),
                    Format::Csv => (seconds_text(previous_ns), "s"),
                };
                let kind = TraceErrorKind::Unsorted {
                    value,
                    previous,
                    unit,
                    arrival_ns: request.arrival_ns,
                    previous_ns,
                };
                return self.fail(self.line, kind);
            }
        }
        if self.requests >= MAX_REQUESTS {
            let max = MAX_REQUESTS;
            return self.fail(self.line, TraceErrorKind::TooManyRequests { max });
        }
        self.previous_ns = Some(request.arrival_ns);
        self.requests = self.requests.saturating_add(1);
        Step::Yield(Ok(request))
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.state.done {
                return None;
            }
            // a whole line in the reader's buffer: parsed in place
            let step = match self.reader.fill_buf() {
                Ok(avail) => match avail.iter().position(|&b| b == b'\n') {
                    Some(end) if end < MAX_LINE_BYTES => {
                        let step = self.state.take(&avail[..=end]);
                        self.reader.consume(end + 1);
                        Some(step)
                    }
                    _ => None,
                },
                // as `read_until` below does
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let line = self.state.line.saturating_add(1);
                    Some(self.state.fail(line, TraceErrorKind::Io(e)))
                }
            };
            match step {
                Some(Step::Skip) => continue,
                Some(Step::Yield(r)) => return Some(r),
                None => {}
            }
            // otherwise (a line across fills of the buffer, the last line, an error, a line
            // too long): copied into `buf`
            self.buf.clear();
            // at most one byte more than a line may hold, so that no input grows the buffer
            let limit = MAX_LINE_BYTES as u64 + 1;
            let step = match (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
            {
                Ok(n) if n > MAX_LINE_BYTES => {
                    let line = self.state.line.saturating_add(1);
                    self.state.fail(
                        line,
                        TraceErrorKind::LineTooLong {
                            max: MAX_LINE_BYTES,
                        },
                    )
                }
                Ok(0) => {
                    if self.state.requests == 0 {
                        let line = self.state.line;
                        self.state.fail(line, TraceErrorKind::Empty)
                    } else {
                        self.state.done = true;
                        return None;
                    }
                }
                Ok(_) => self.state.take(&self.buf),
                Err(e) => {
                    let line = self.state.line.saturating_add(1);
                    self.state.fail(line, TraceErrorKind::Io(e))
                }
            };
            match step {
                Step::Skip => continue,
                Step::Yield(r) => return Some(r),
            }
        }
    }
}

/// Nanoseconds as decimal seconds without trailing zeros: 500000000 → "0.5".
fn seconds_text(ns: u64) -> String {
    let frac = format!("{:09}", ns % 1_000_000_000);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        (ns / 1_000_000_000).to_string()
    } else {
        format!("{}.{frac}", ns / 1_000_000_000)
    }
}

/// Splits a line into exactly three comma-separated fields, each trimmed.
fn fields(line: &[u8], format: Format) -> Result<[&[u8]; 3], TraceErrorKind> {
    let mut it = line.split(|&b| b == b',');
    if let (Some(a), Some(b), Some(c), None) = (it.next(), it.next(), it.next(), it.next()) {
        return Ok([a.trim_ascii(), b.trim_ascii(), c.trim_ascii()]);
    }
    Err(TraceErrorKind::FieldCount {
        found: line.split(|&b| b == b',').count(),
        line: quote(line),
        format,
    })
}

/// Decides the format from the first content line: the CSV header, or a native request line.
fn detect(line: &[u8]) -> Result<Format, TraceErrorKind> {
    let mut it = line.split(|&b| b == b',');
    let first = it.next().unwrap_or_default().trim_ascii();
    let is_header = line.split(|&b| b == b',').count() == CSV_HEADER.len()
        && line
            .split(|&b| b == b',')
            .zip(CSV_HEADER)
            .all(|(f, h)| f.trim_ascii().eq_ignore_ascii_case(h.as_bytes()));
    if is_header {
        Ok(Format::Csv)
    } else if first.first().is_some_and(|b| b.is_ascii_alphabetic()) {
        Err(TraceErrorKind::Header { line: quote(line) })
    } else {
        Ok(Format::Native)
    }
}

fn parse_line(line: &[u8], format: Format) -> Result<Request, TraceErrorKind> {
    let [time, size, op] = fields(line, format)?;
    let (arrival_ns, size_bytes) = match format {
        Format::Native => (native_time(time)?, native_size(size)?),
        Format::Csv => (csv_time(time)?, csv_size(size)?),
    };
    let op = Op::parse_bytes(op).ok_or_else(|| TraceErrorKind::UnknownOp { value: quote(op) })?;
    Ok(Request {
        arrival_ns,
        size_bytes,
        op,
    })
}

/// A native line in its usual form, `digits,0xhex,op` without spaces, at most 19 decimal and
/// 16 hexadecimal digits, a size in 1 byte ..= 1 TiB and a known op, parsed in one pass: the
/// request [`parse_line`] gives for it. `None` for every other line, which [`parse_line`]
/// then parses (or names what is wrong with it).
fn native_line(line: &[u8]) -> Option<Request> {
    let mut i = 0;
    let mut arrival_ns: u64 = 0;
    while let Some(d) = line
        .get(i)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|&d| d <= 9)
    {
        if i == 19 {
            return None;
        }
        arrival_ns = arrival_ns * 10 + u64::from(d);
        i += 1;
    }
    if i == 0 || line.get(i..i + 3)? != b",0x" {
        return None;
    }
    i += 3;
    let start = i;
    let mut size_bytes: u64 = 0;
    while let Some(d) = line.get(i).and_then(|&b| (b as char).to_digit(16)) {
        if i - start == 16 {
            return None;
        }
        size_bytes = (size_bytes << 4) | u64::from(d);
        i += 1;
    }
    if i == start || line.get(i) != Some(&b',') || size_bytes == 0 {
        return None;
    }
    if size_bytes > MAX_REQUEST_BYTES {
        return None;
    }
    let op = Op::parse_bytes(line.get(i + 1..)?)?;
    Some(Request {
        arrival_ns,
        size_bytes,
        op,
    })
}

enum NumError {
    Malformed,
    Overflow,
}

/// Parses a non-empty run of digits in `radix` (10 or 16) into a u64.
fn digits_u64(s: &[u8], radix: u32) -> Result<u64, NumError> {
    if s.is_empty() {
        return Err(NumError::Malformed);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in s {
        let d = match (b as char).to_digit(radix) {
            Some(d) => d,
            None => return Err(NumError::Malformed),
        };
        match v
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(next) => v = next,
            None => overflow = true,
        }
    }
    if overflow {
        Err(NumError::Overflow)
    } else {
        Ok(v)
    }
}

/// Strips a leading `-`, returning whether there was one.
fn strip_minus(s: &[u8]) -> (bool, &[u8]) {
    match s.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, s),
    }
}

fn native_time(s: &[u8]) -> Result<u64, TraceErrorKind> {
    let (negative, digits) = strip_minus(s);
    match digits_u64(digits, 10) {
        Ok(0) => Ok(0),
        Ok(_) if negative => Err(TraceErrorKind::NegativeTime { value: quote(s) }),
        Ok(v) => Ok(v),
        Err(NumError::Overflow) if negative => {
            Err(TraceErrorKind::NegativeTime { value: quote(s) })
        }
        Err(NumError::Overflow) => Err(TraceErrorKind::TimeOverflow { value: quote(s) }),
        Err(NumError::Malformed) => Err(TraceErrorKind::BadTime {
            value: quote(s),
            format: Format::Native,
        }),
    }
}

/// Checks a parsed size: sign, zero, overflow.
fn size_result(
    s: &[u8],
    negative: bool,
    parsed: Result<u64, NumError>,
    format: Format,
) -> Result<u64, TraceErrorKind> {
    match parsed {
        Ok(0) => Err(TraceErrorKind::ZeroSize { value: quote(s) }),
        Ok(_) | Err(NumError::Overflow) if negative => {
            Err(TraceErrorKind::NegativeSize { value: quote(s) })
        }
        Ok(v) if v > MAX_REQUEST_BYTES => Err(TraceErrorKind::SizeTooLarge { value: quote(s) }),
        Ok(v) => Ok(v),
        Err(NumError::Overflow) => Err(TraceErrorKind::SizeOverflow { value: quote(s) }),
        Err(NumError::Malformed) => Err(TraceErrorKind::BadSize {
            value: quote(s),
            format,
        }),
    }
}

fn native_size(s: &[u8]) -> Result<u64, TraceErrorKind> {
    let (negative, rest) = strip_minus(s);
    let parsed = match rest
        .strip_prefix(b"0x")
        .or_else(|| rest.strip_prefix(b"0X"))
    {
        Some(hex) => digits_u64(hex, 16),
        None => Err(NumError::Malformed),
    };
    size_result(s, negative, parsed, Format::Native)
}

fn csv_size(s: &[u8]) -> Result<u64, TraceErrorKind> {
    let (negative, digits) = strip_minus(s);
    size_result(s, negative, digits_u64(digits, 10), Format::Csv)
}

const NS_PER_S: u64 = 1_000_000_000;

/// Parses seconds into nanoseconds, rounding to the nearest. Plain decimals
/// (`[+-]digits[.digits]`) are converted exactly; anything else (exponents, `inf`, `NaN`) goes
/// through `f64`.
fn csv_time(s: &[u8]) -> Result<u64, TraceErrorKind> {
    let (negative, body) = match s.first() {
        Some(b'-') => (true, s.get(1..).unwrap_or_default()),
        Some(b'+') => (false, s.get(1..).unwrap_or_default()),
        _ => (false, s),
    };
    let (int, frac) = match body.iter().position(|&b| b == b'.') {
        Some(dot) => (
            body.get(..dot).unwrap_or_default(),
            body.get(dot + 1..).unwrap_or_default(),
        ),
        None => (body, &[][..]),
    };
    let plain =
        !(int.is_empty() && frac.is_empty()) && int.iter().chain(frac).all(u8::is_ascii_digit);
    if !plain {
        return csv_time_float(s);
    }
    let overflow = || TraceErrorKind::TimeOverflow { value: quote(s) };
    let secs = if int.is_empty() {
        0
    } else {
        match digits_u64(int, 10) {
            Ok(v) => v,
            Err(_) if negative => return Err(TraceErrorKind::NegativeTime { value: quote(s) }),
            Err(_) => return Err(overflow()),
        }
    };
    // First nine fractional digits are nanoseconds; the tenth rounds (half up).
    let mut frac_ns: u64 = 0;
    for i in 0..9 {
        let d = frac.get(i).map_or(0, |b| u64::from(b - b'0'));
        frac_ns = frac_ns * 10 + d;
    }
    let round_up = frac.get(9).is_some_and(|&b| b >= b'5');
    let ns = secs
        .checked_mul(NS_PER_S)
        .and_then(|ns| ns.checked_add(frac_ns))
        .and_then(|ns| ns.checked_add(u64::from(round_up)));
    match ns {
        Some(0) => Ok(0),
        Some(_) if negative => Err(TraceErrorKind::NegativeTime { value: quote(s) }),
        Some(ns) => Ok(ns),
        None if negative => Err(TraceErrorKind::NegativeTime { value: quote(s) }),
        None => Err(overflow()),
    }
}

fn csv_time_float(s: &[u8]) -> Result<u64, TraceErrorKind> {
    let bad = || TraceErrorKind::BadTime {
        value: quote(s),
        format: Format::Csv,
    };
    let t: f64 = std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    if !t.is_finite() {
        return Err(TraceErrorKind::NonFiniteTime { value: quote(s) });
    }
    let ns = (t * 1e9).round();
    if ns < 0.0 {
        return Err(TraceErrorKind::NegativeTime { value: quote(s) });
    }
    // 2^64 is the first f64 that does not fit; `as` would saturate silently.
    if ns >= 18_446_744_073_709_551_616.0 {
        return Err(TraceErrorKind::TimeOverflow { value: quote(s) });
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Request>, TraceError> {
        parse_trace("t.csv", text.as_bytes()).map(|t| t.requests)
    }

    fn kind(text: &str) -> TraceErrorKind {
        parse(text).unwrap_err().kind
    }

    #[test]
    fn native_lines_with_spaces_crlf_comments_and_blanks() {
        let r = parse("# a comment\n\n 10 , 0X1f ,diskread\r\n  \r\n20,0x00001000,PUT\n20,0x1,get")
            .unwrap();
        assert_eq!(
            r,
            vec![
                Request {
                    arrival_ns: 10,
                    size_bytes: 31,
                    op: Op::DiskRead
                },
                Request {
                    arrival_ns: 20,
                    size_bytes: 4096,
                    op: Op::Put
                },
                Request {
                    arrival_ns: 20,
                    size_bytes: 1,
                    op: Op::Get
                },
            ]
        );
    }

    #[test]
    fn csv_header_and_exact_decimal_seconds() {
        let r = parse(
            " Time_S , SIZE_BYTES,op\n0.5,4096,Get\n1.0000000015,1,Put\n2,7,DiskWrite\n3e0,1,Get\n",
        )
        .unwrap();
        let ns: Vec<u64> = r.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(
            ns,
            vec![500_000_000, 1_000_000_002, 2_000_000_000, 3_000_000_000]
        );
        assert_eq!(r[0].size_bytes, 4096);
    }

    #[test]
    fn csv_time_rounds_to_nearest_ns() {
        assert_eq!(csv_time(b"0.0000000014").ok(), Some(1));
        assert_eq!(csv_time(b"0.0000000015").ok(), Some(2));
        assert_eq!(csv_time(b".5").ok(), Some(500_000_000));
        assert_eq!(csv_time(b"7.").ok(), Some(7_000_000_000));
        assert_eq!(csv_time(b"-0.0").ok(), Some(0));
        assert_eq!(csv_time(b"18446744073.709551615").ok(), Some(u64::MAX));
        assert!(matches!(
            csv_time(b"18446744073.709551616"),
            Err(TraceErrorKind::TimeOverflow { .. })
        ));
        assert!(matches!(
            csv_time(b"."),
            Err(TraceErrorKind::BadTime { .. })
        ));
        assert!(matches!(
            csv_time(b"-1e3"),
            Err(TraceErrorKind::NegativeTime { .. })
        ));
        assert!(matches!(
            csv_time(b"1e30"),
            Err(TraceErrorKind::TimeOverflow { .. })
        ));
        assert!(matches!(
            csv_time(b"NaN"),
            Err(TraceErrorKind::NonFiniteTime { .. })
        ));
        assert!(matches!(
            csv_time(b"-inf"),
            Err(TraceErrorKind::NonFiniteTime { .. })
        ));
    }

    #[test]
    fn each_error_kind() {
        assert!(matches!(
            kind("1,0x10\n"),
            TraceErrorKind::FieldCount { found: 2, .. }
        ));
        assert!(matches!(
            kind("1,0x10,Get,\n"),
            TraceErrorKind::FieldCount { found: 4, .. }
        ));
        assert!(matches!(
            kind("1x,0x10,Get"),
            TraceErrorKind::BadTime { .. }
        ));
        assert!(matches!(
            kind("-5,0x10,Get"),
            TraceErrorKind::NegativeTime { .. }
        ));
        assert!(matches!(
            kind("99999999999999999999,0x10,Get"),
            TraceErrorKind::TimeOverflow { .. }
        ));
        assert!(matches!(kind("1,16,Get"), TraceErrorKind::BadSize { .. }));
        assert!(matches!(kind("1,0x,Get"), TraceErrorKind::BadSize { .. }));
        assert!(matches!(
            kind("1,-0x10,Get"),
            TraceErrorKind::NegativeSize { .. }
        ));
        assert!(matches!(kind("1,0x0,Get"), TraceErrorKind::ZeroSize { .. }));
        assert!(matches!(
            kind("1,0x10000000000000000,Get"),
            TraceErrorKind::SizeOverflow { .. }
        ));
        assert!(matches!(
            kind("1,0x10,Delete"),
            TraceErrorKind::UnknownOp { .. }
        ));
        assert!(matches!(
            kind("2,0x10,Get\n1,0x10,Get"),
            TraceErrorKind::Unsorted {
                arrival_ns: 1,
                previous_ns: 2,
                ..
            }
        ));
        assert!(matches!(
            kind("time,size,op\n"),
            TraceErrorKind::Header { .. }
        ));
        assert!(matches!(
            kind("time_s,size_bytes,op\n1,-5,Get"),
            TraceErrorKind::NegativeSize { .. }
        ));
        assert!(matches!(
            kind("time_s,size_bytes,op\n1,0x5,Get"),
            TraceErrorKind::BadSize { .. }
        ));
        assert!(matches!(
            kind("time_s,size_bytes,op\ninf,5,Get"),
            TraceErrorKind::NonFiniteTime { .. }
        ));
        assert!(matches!(kind(""), TraceErrorKind::Empty));
        assert!(matches!(
            kind("# only a comment\n\n"),
            TraceErrorKind::Empty
        ));
        assert!(matches!(
            kind("time_s,size_bytes,op\n"),
            TraceErrorKind::Empty
        ));
    }

    #[test]
    fn error_message_names_file_line_and_value() {
        let e = parse("4100000,0x10,Get\n\n3200000,0x10,Get\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(
            e.to_string(),
            "t.csv line 3: timestamp 3200000 ns is before the previous request's 4100000 ns; \
             traces must be sorted by arrival time (equal times are fine)"
        );
        // CSV times are quoted as written, in seconds.
        let e = parse("time_s,size_bytes,op\n0.5,3,Get\n0.25,3,Get\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv line 3: timestamp 0.25 s is before the previous request's 0.5 s; traces must \
             be sorted by arrival time (equal times are fine)"
        );
        let e = parse("").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.csv: the trace holds no requests"),
            "{e}"
        );
    }

    #[test]
    fn byte_order_mark_before_the_header_is_skipped() {
        let r = parse("\u{feff}time_s,size_bytes,op\n1,2,Get\n").unwrap();
        assert_eq!(r[0].arrival_ns, 1_000_000_000);
    }

    #[test]
    fn long_values_are_quoted_in_part() {
        let long = format!("1,0x10,{}", "x".repeat(1000));
        let msg = parse(&long).unwrap_err().to_string();
        assert!(msg.len() < 300, "{msg}");
    }

    /// Every request and the first error (as displayed) of `text` read through a buffer of
    /// `capacity` bytes.
    fn through_buffer(text: &str, capacity: usize) -> (Vec<Request>, Option<String>) {
        let reader = std::io::BufReader::with_capacity(capacity, text.as_bytes());
        let mut ok = Vec::new();
        for r in TraceReader::new("t.csv", reader) {
            match r {
                Ok(req) => ok.push(req),
                Err(e) => return (ok, Some(e.to_string())),
            }
        }
        (ok, None)
    }

    #[test]
    fn lines_split_across_buffer_fills_parse_as_whole_ones() {
        // lines parsed in the reader's buffer and lines copied out of it (split between two
        // fills, the last without a newline) give the same requests and the same errors
        let texts = [
            "# c\n10,0x1f,DiskRead\r\n\n20,0x00001000,Put\n20,0x1,get",
            "\u{feff}time_s,size_bytes,op\n0.5,4096,Get\n1.0000000015,1,Put\n2,7,DiskWrite\n",
            "1000,0x1000,Get\n2000,0x1000,Put\n3000,0x10zz,Get\n4000,0x1000,Get\n",
            "1000,0x1000,Get\n\n500,0x1000,Put\n",
            "1000,0x1000,Get,extra\n",
            "# only a comment\n",
        ];
        for text in texts {
            let want = through_buffer(text, 1 << 16);
            for capacity in 1..=text.len() + 1 {
                assert_eq!(
                    through_buffer(text, capacity),
                    want,
                    "{text:?} at {capacity}"
                );
            }
        }
        let (ok, err) = through_buffer(texts[2], 5);
        assert_eq!(ok.len(), 2);
        assert_eq!(
            err.as_deref(),
            Some(
                "t.csv line 3: malformed size \"0x10zz\"; expected hexadecimal bytes with a 0x \
                 prefix, e.g. 0x00001000"
            )
        );
    }

    #[test]
    fn a_line_too_long_is_an_error_whatever_the_buffer() {
        let long = format!(
            "1,0x1,Get\n2,0x1,{}\n3,0x1,Get\n",
            "G".repeat(MAX_LINE_BYTES)
        );
        for capacity in [16, 1 << 16, 1 << 20] {
            let (ok, err) = through_buffer(&long, capacity);
            assert_eq!(ok.len(), 1);
            let err = err.unwrap_or_default();
            assert!(
                err.starts_with("t.csv line 2: the line is longer than 65536 bytes"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_one_pass_native_parse_agrees_with_the_general_one() {
        let lines: &[&str] = &[
            "564037000,0x00001000,Put",
            "0,0x1,get",
            "9999999999999999999,0xFFFFFFFFFF,DiskRead",
            "18446744073709551615,0x10,Get",
            "99999999999999999999,0x10,Get",
            "00000000000000000000001,0x10,Get",
            "1,0x10000000000,DiskWrite",
            "1,0x10000000001,DiskWrite",
            "1,0x00000000000000001,Get",
            "1,0x10000000000000000,Get",
            "1,0x0,Get",
            "1,0X10,Get",
            "1,0x,Get",
            "1,0x1g,Get",
            "1,16,Get",
            "-1,0x10,Get",
            "1,-0x10,Get",
            "1 ,0x10,Get",
            "1, 0x10,Get",
            "1,0x10 ,Get",
            "1,0x10, Get",
            "1,0x10,Get,",
            "1,0x10,Delete",
            "1,0x10",
            ",0x10,Get",
            "1x,0x10,Get",
        ];
        for line in lines {
            let general = parse_line(line.as_bytes(), Format::Native);
            if let Some(fast) = native_line(line.as_bytes()) {
                assert_eq!(Some(&fast), general.as_ref().ok(), "{line}");
            }
        }
        // the usual lines take the one pass
        for line in &lines[..3] {
            assert!(native_line(line.as_bytes()).is_some(), "{line}");
        }
        assert!(native_line(b"564037000,0x00001000,Put").is_some());
        assert!(native_line(b"1,0x10, Get").is_none());
    }

    proptest::proptest! {
        #[test]
        fn the_one_pass_native_parse_never_differs(
            line in "[0-9 -]{0,22},(0[xX])?[0-9a-fA-Fg ]{0,18},( ?(Get|put|DiskRead|DISKWRITE|Delete) ?|,)"
        ) {
            if let Some(fast) = native_line(line.as_bytes()) {
                proptest::prop_assert_eq!(Some(fast), parse_line(line.as_bytes(), Format::Native).ok());
            }
        }

        #[test]
        fn usual_native_lines_parse_in_one_pass_as_in_general(
            line in "[0-9]{1,21},0x[0-9a-fA-F]{1,17},(Get|put|DiskRead|DISKWRITE|Delete|Get,)"
        ) {
            let general = parse_line(line.as_bytes(), Format::Native).ok();
            match native_line(line.as_bytes()) {
                Some(fast) => proptest::prop_assert_eq!(Some(fast), general),
                // the one pass leaves out only more digits than it reads and bad values
                None => proptest::prop_assert!(
                    line.split(',').next().map_or(0, str::len) > 19
                        || line.split(',').nth(1).map_or(0, str::len) > 18
                        || general.is_none_or(|r| r.size_bytes == 0),
                    "{}", line
                ),
            }
        }
    }

    #[test]
    fn reader_stops_after_the_first_error() {
        let mut r = TraceReader::new("t", &b"1,0x1,Get\nbad\n2,0x1,Get\n"[..]);
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
        assert_eq!(r.format(), Some(Format::Native));
    }
}
