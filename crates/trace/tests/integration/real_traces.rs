use tailbound_testdata::production_dir as msr_dir;
use tailbound_trace::{open_trace, read_trace, trace_stats, Format};

#[test]
fn trace0000_has_2871_requests() {
    let t = read_trace(&msr_dir().join("trace0000.csv")).unwrap();
    assert_eq!(t.requests.len(), 2871);
    assert!(t.name.ends_with("trace0000.csv"));
    let first = t.requests[0];
    assert_eq!(first.arrival_ns, 564_037_000);
    assert_eq!(first.size_bytes, 4096);
}

#[test]
fn all_42_traces_parse_sorted_within_the_documented_ranges() {
    let files = tailbound_trace::list_traces(&msr_dir()).unwrap();
    assert_eq!(files.len(), 42);
    for f in &files {
        let t = read_trace(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(!t.requests.is_empty());
        assert!(t
            .requests
            .windows(2)
            .all(|w| w[0].arrival_ns <= w[1].arrival_ns));
        // README: 512 B .. 1 MiB, about 600 s, 2..185 requests/s.
        let s = trace_stats(&t);
        let sizes = s.size_bytes.unwrap();
        assert!(
            sizes.min_bytes >= 512 && sizes.max_bytes <= 1 << 20,
            "{}",
            t.name
        );
        assert!(
            s.span_s > 300.0 && s.span_s < 700.0,
            "{}: {}",
            t.name,
            s.span_s
        );
        let rate = s.mean_requests_per_s.unwrap();
        assert!((1.0..200.0).contains(&rate), "{}: {rate}", t.name);
    }
}

#[test]
fn streaming_reader_detects_native_format() {
    let mut r = open_trace(&msr_dir().join("trace0001.csv")).unwrap();
    assert!(r.next().unwrap().is_ok());
    assert_eq!(r.format(), Some(Format::Native));
    assert_eq!(r.line(), 1);
}

#[test]
fn missing_file_error_names_the_path() {
    let e = read_trace(&msr_dir().join("no-such-trace.csv")).unwrap_err();
    assert!(e.to_string().contains("no-such-trace.csv"), "{e}");
    assert!(matches!(e.kind, tailbound_trace::TraceErrorKind::Io(_)));
}
