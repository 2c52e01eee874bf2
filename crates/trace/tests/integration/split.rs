//! Splitting real and handmade traces in halves.

use crate::common::trace;
use tailbound_model::Op::Get;
use tailbound_testdata::production_dir as msr_dir;
use tailbound_trace::{read_trace, split, split_keep_times};

#[test]
fn halves_of_a_real_trace_partition_it() {
    let t = read_trace(&msr_dir().join("trace0000.csv")).unwrap();
    let (a, b) = split_keep_times(&t, 0.5).unwrap();
    assert_eq!(a.requests.len() + b.requests.len(), t.requests.len());
    let mid = t.requests[0].arrival_ns + t.span_ns() / 2;
    assert!(a.requests.iter().all(|r| r.arrival_ns < mid));
    assert!(b.requests.iter().all(|r| r.arrival_ns >= mid));

    let (_, rebased) = split(&t, 0.5).unwrap();
    assert!(rebased.requests[0].arrival_ns < b.requests[0].arrival_ns);
    for (r, k) in rebased.requests.iter().zip(&b.requests) {
        assert_eq!(k.arrival_ns - r.arrival_ns, mid);
        assert_eq!((r.size_bytes, r.op), (k.size_bytes, k.op));
    }
}

#[test]
fn split_errors_quote_the_value() {
    let t = trace(&[(1, 1, Get), (2, 1, Get)]);
    let e = split(&t, 1.5).unwrap_err();
    assert!(e.to_string().contains("1.5"), "{e}");
    let one_instant = trace(&[(7, 1, Get), (7, 1, Get)]);
    let e = split(&one_instant, 0.5).unwrap_err();
    assert!(
        e.to_string().contains("0.5") && e.to_string().contains("empty"),
        "{e}"
    );
}
