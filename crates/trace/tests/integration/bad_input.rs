//! Every malformed input is rejected with a message naming the file, the line and the value.

use std::io::{Read, Write};
use tailbound_trace::read_trace;

const CSV: &str = "time_s,size_bytes,op\n";
const OK: &str = "100,0x10,Get\n";

/// (what, file contents, line of the error, text the message must quote)
const CASES: &[(&str, &str, u64, &str)] = &[
    ("too few fields", "100,0x10,Get\n200,0x10\n", 2, "200,0x10"),
    ("too many fields", "100,0x10,Get,extra\n", 1, "extra"),
    ("malformed time", "100,0x10,Get\n1a0,0x10,Get\n", 2, "1a0"),
    ("float ns time", "100,0x10,Get\n1.5,0x10,Get\n", 2, "1.5"),
    ("negative time", "-100,0x10,Get\n", 1, "-100"),
    (
        "time overflow",
        "99999999999999999999,0x10,Get\n",
        1,
        "99999999999999999999",
    ),
    ("size without 0x", "100,4096,Get\n", 1, "4096"),
    ("malformed hex", "100,0xZZ,Get\n", 1, "0xZZ"),
    ("negative hex size", "100,-0x10,Get\n", 1, "-0x10"),
    ("zero size", "100,0x0,Get\n", 1, "0x0"),
    (
        "size overflow",
        "100,0x1ffffffffffffffff,Get\n",
        1,
        "0x1ffffffffffffffff",
    ),
    (
        "size above 1 TiB",
        "100,0x10000000001,Get\n",
        1,
        "0x10000000001",
    ),
    (
        "csv size above 1 TiB",
        "time_s,size_bytes,op\n1,1099511627777,Get\n",
        2,
        "1099511627777",
    ),
    ("unknown op", "100,0x10,Delete\n", 1, "Delete"),
    ("empty op", "100,0x10,\n", 1, "\"\""),
    (
        "backwards",
        "4100000,0x10,Get\n# c\n3200000,0x10,Get\n",
        3,
        "3200000",
    ),
    ("unknown header", "time,size,op\n", 1, "time,size,op"),
    (
        "csv malformed time",
        "time_s,size_bytes,op\n0.5,1,Get\n0.6.1,1,Get\n",
        3,
        "0.6.1",
    ),
    (
        "csv negative time",
        "time_s,size_bytes,op\n-0.5,1,Get\n",
        2,
        "-0.5",
    ),
    (
        "csv NaN time",
        "time_s,size_bytes,op\nNaN,1,Get\n",
        2,
        "NaN",
    ),
    (
        "csv infinite time",
        "time_s,size_bytes,op\ninf,1,Get\n",
        2,
        "inf",
    ),
    (
        "csv time overflow",
        "time_s,size_bytes,op\n1e20,1,Get\n",
        2,
        "1e20",
    ),
    (
        "csv negative size",
        "time_s,size_bytes,op\n1,-5,Get\n",
        2,
        "-5",
    ),
    ("csv zero size", "time_s,size_bytes,op\n1,0,Get\n", 2, "0"),
    (
        "csv hex size",
        "time_s,size_bytes,op\n1,0x10,Get\n",
        2,
        "0x10",
    ),
    (
        "csv backwards",
        "time_s,size_bytes,op\n2,1,Get\n1.5,1,Get\n",
        3,
        "1.5 s",
    ),
];

fn read_text(file: &str, text: &str) -> tailbound_trace::TraceError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    read_trace(&path).unwrap_err()
}

#[test]
fn bad_inputs_are_rejected_naming_file_line_and_value() {
    for &(what, text, line, value) in CASES {
        let e = read_text("bad0017.csv", text);
        let msg = e.to_string();
        assert_eq!(e.line, line, "{what}: {msg}");
        assert!(msg.contains("bad0017.csv"), "{what}: {msg}");
        assert!(msg.contains(&format!(" line {line}: ")), "{what}: {msg}");
        assert!(msg.contains(value), "{what}: {msg} does not quote {value}");
        assert!(
            msg.contains("expected") || msg.contains("must"),
            "{what}: {msg} says what is accepted"
        );
    }
}

#[test]
fn empty_inputs_are_rejected() {
    for text in ["", "\n\n", "# only comments\n", CSV, " \r\n"] {
        let e = read_text("empty.csv", text);
        let msg = e.to_string();
        assert!(
            msg.contains("empty.csv") && msg.contains("no requests"),
            "{msg}"
        );
    }
}

#[test]
fn valid_inputs_in_the_same_table_style_are_accepted() {
    for text in [
        OK,
        "100,0x10,Get\n100,0x10,put\n",
        "  100 ,\t0X10 , DISKREAD \r\n",
        "# header comment\n\n100,0x10,Get",
        "Time_S , Size_Bytes , OP\n0.0000001,16,Get\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok.csv");
        std::fs::write(&path, text).unwrap();
        let t = read_trace(&path).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(t.requests[0].arrival_ns, 100, "{text:?}");
        assert_eq!(t.requests[0].size_bytes, 16, "{text:?}");
    }
}

/// Regression (issue 27): a line without end (`trace stats /dev/zero`) grew the line buffer
/// until the allocator aborted; it now stops at 64 KiB, naming the line.
#[test]
fn an_endless_line_stops_at_the_line_limit() {
    let endless = std::io::repeat(0).take(10 * tailbound_trace::MAX_LINE_BYTES as u64);
    let e = tailbound_trace::parse_trace("zeros", std::io::BufReader::new(endless)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("longer than 65536 bytes"), "{e}");
    // a line of exactly the limit is still read (as a bad line, not a long one)
    let mut text = OK.to_string();
    text.push_str(&"#".repeat(tailbound_trace::MAX_LINE_BYTES - 1));
    text.push('\n');
    let t = tailbound_trace::parse_trace("long comment", text.as_bytes()).unwrap();
    assert_eq!(t.requests.len(), 1);
}

/// Regression (issue 27): a folder given as a trace was "not found" in scenarios and an I/O
/// error elsewhere; it is named as a folder.
#[test]
fn a_folder_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_trace(dir.path()).unwrap_err();
    assert!(e.to_string().contains("is a folder"), "{e}");
}

#[test]
fn a_trace_may_hold_at_most_max_requests() {
    struct Lines(u64);
    impl std::io::Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let line = b"1,0x1,Get\n";
            let n = buf.len() / line.len();
            for chunk in buf.chunks_exact_mut(line.len()).take(n) {
                chunk.copy_from_slice(line);
            }
            self.0 += n as u64;
            Ok(n * line.len())
        }
    }
    let reader = std::io::BufReader::with_capacity(1 << 20, Lines(0));
    let mut n = 0u64;
    let mut last = None;
    for r in tailbound_trace::TraceReader::new("endless", reader) {
        match r {
            Ok(_) => n += 1,
            Err(e) => {
                last = Some(e);
                break;
            }
        }
    }
    assert_eq!(n, tailbound_trace::MAX_REQUESTS);
    let e = last.expect("an error after the limit");
    assert!(e.to_string().contains("more than 20000000 requests"), "{e}");
}
